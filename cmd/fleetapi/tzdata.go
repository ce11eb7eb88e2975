package main

// The IANA time zone database is embedded in the binary, so that a bare
// machine (no /usr/share/zoneinfo) knows every name an account's timezone
// may hold (storage.LoadTimezone), exactly as every other replica does.
import _ "time/tzdata"
