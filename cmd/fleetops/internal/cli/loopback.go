package cli

import (
	"net"
	"net/url"
	"strings"
)

// The fleetops runs load servers, stop databases and flood addresses: they
// are not tools to point at someone else's machine. Every address a run
// talks to, given by a flag or found in a replica's log, must be on this
// machine's loopback interface: 127.0.0.0/8 or ::1, or the name localhost
// when it resolves to those only (a PostgreSQL or Redis unix socket is on
// this machine too).

// CheckHTTP refuses a base URL that is not http(s) on a loopback host.
func CheckHTTP(flagName, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Usagef("%s %q: want http://127.0.0.1:PORT", flagName, raw)
	}
	return checkHost(flagName, raw, u.Hostname())
}

// CheckPostgres refuses a PostgreSQL URL whose server is not on loopback:
// its host (and a "host" parameter, which overrides it) must be a
// loopback address or a unix socket's folder (an absolute path). No host
// at all is the driver's default, localhost.
func CheckPostgres(flagName, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return Usagef("%s %q: want postgres://USER@127.0.0.1:5432/DATABASE", flagName, raw)
	}
	if h := u.Query().Get("host"); h != "" {
		if strings.HasPrefix(h, "/") {
			return nil
		}
		if err := checkHost(flagName, raw, h); err != nil {
			return err
		}
	}
	if u.Hostname() == "" {
		return nil
	}
	return checkHost(flagName, raw, u.Hostname())
}

// CheckRedis refuses a Redis URL whose server is not on loopback (a
// unix:// socket is).
func CheckRedis(flagName, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return Usagef("%s %q: want redis://127.0.0.1:6379/0", flagName, raw)
	}
	switch u.Scheme {
	case "unix":
		return nil
	case "redis", "rediss":
		if u.Host == "" {
			return Usagef("%s %q: want redis://127.0.0.1:6379/0", flagName, raw)
		}
		return checkHost(flagName, raw, u.Hostname())
	}
	return Usagef("%s %q: want redis://127.0.0.1:6379/0", flagName, raw)
}

// CheckAddr refuses a host:port that is not on loopback (what names it is
// said in the error).
func CheckAddr(what, addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return Usagef("%s %q: want 127.0.0.1:PORT", what, addr)
	}
	return checkHost(what, addr, host)
}

// checkHost refuses host (of flagName's value raw) unless it is loopback.
func checkHost(flagName, raw, host string) error {
	if IsLoopback(host) {
		return nil
	}
	return Usagef("%s %q: only loopback addresses (127.0.0.0/8, ::1, localhost) are allowed", flagName, raw)
}

// IsLoopback reports whether host is a loopback IP address, or localhost
// resolving to loopback addresses only.
func IsLoopback(host string) bool {
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback()
	}
	if !strings.EqualFold(host, "localhost") {
		return false
	}
	addrs, err := net.LookupHost(host)
	if err != nil || len(addrs) == 0 {
		return false
	}
	for _, a := range addrs {
		if ip := net.ParseIP(a); ip == nil || !ip.IsLoopback() {
			return false
		}
	}
	return true
}
