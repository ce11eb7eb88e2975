package storage

import (
	"regexp"
	"strings"
	"time"

	// The time zone database is embedded so that a bare machine (no
	// /usr/share/zoneinfo) knows every IANA name: every replica reads an
	// account's timezone alike.
	_ "time/tzdata"
)

// DefaultTimezone is an account's time zone when none is given.
const DefaultTimezone = "UTC"

// TimezoneRule is what an account's timezone must be, as validation
// errors say it.
const TimezoneRule = `an IANA time zone name such as "Europe/Paris" or "UTC"`

// MaxTimezone bounds a time zone name (the column's check).
const MaxTimezone = 64

// TimezonePattern is the shape of an IANA zone name (timezoneName), for
// the OpenAPI document: letters first, then letters, digits, '_', '+',
// '-', in up to three '/'-separated parts.
const TimezonePattern = `^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+){0,2}$`

// timezoneName is the shape of an IANA zone name: letters first, then
// letters, digits, '_', '+', '-', in up to three '/'-separated parts. It
// refuses paths ("../../etc/passwd", "/UTC"), control characters and
// empty parts before time.LoadLocation reads anything.
var timezoneName = regexp.MustCompile(TimezonePattern)

// LoadTimezone returns the location of the IANA time zone name, or false
// when name is not one: empty, "Local" (the server's own zone, which
// differs between replicas), not of the shape of a zone name, one of the
// system directories' aliases the embedded database does not hold
// ("posix/...", "right/..."), or refused by time.LoadLocation.
func LoadTimezone(name string) (*time.Location, bool) {
	if name == "" || name == "Local" || len(name) > MaxTimezone || !timezoneName.MatchString(name) {
		return nil, false
	}
	if strings.HasPrefix(name, "posix/") || strings.HasPrefix(name, "right/") {
		return nil, false
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, false
	}
	return loc, true
}

// ValidTimezone reports whether name is an IANA time zone name an account
// may have (LoadTimezone).
func ValidTimezone(name string) bool {
	_, ok := LoadTimezone(name)
	return ok
}

// TimezoneOrUTC returns the location of name, or UTC when it is not a
// valid time zone (a value written behind the API's back): the clock's
// rules then read the day in UTC rather than not at all.
func TimezoneOrUTC(name string) *time.Location {
	if loc, ok := LoadTimezone(name); ok {
		return loc
	}
	return time.UTC
}
