package webhook

import (
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// MaxURLLength bounds a webhook's URL in bytes.
const MaxURLLength = 2048

// URLError is CheckURL's answer to a URL deliveries may not go to. Reason is
// short, stable and safe to show to the integrator who wrote the URL.
type URLError struct {
	Reason string
}

func (e *URLError) Error() string { return "webhook url: " + e.Reason }

// refusedNames are host names (and, with a leading dot, suffixes) that name
// the machine itself or a private network: they never lead to a public
// receiver (RFC 6761 localhost and invalid, RFC 6762 local, RFC 8375
// home.arpa, ICANN's internal, and the names Debian's /etc/hosts gives).
var refusedNames = []string{
	"localhost", ".localhost", "localhost.localdomain", ".localdomain", ".localdomain6",
	".local", ".internal", ".home.arpa", ".invalid", ".test",
	"ip6-localhost", "ip6-loopback",
}

// CheckURL judges a webhook's URL when it is written (POST and PATCH
// /webhooks), without resolving it: scheme https (or http with AllowHTTP),
// at most MaxURLLength bytes, no user information, no fragment, no
// backslash, space or control character, a host present, a port in 1..65535,
// an IP literal outside the refused ranges (unless in AllowNets), a host name
// that is a fully qualified ASCII DNS name, not a local one (localhost,
// *.localhost, .local, .internal, ...), and whose last label is not a number
// (2130706433, 0x7f000001, 0177.0.0.1, 127.1: forms that resolvers and
// browsers read as IPv4 addresses). It returns a *URLError.
//
// A name that passes may still resolve to a refused address: Send checks the
// address it connects to, at every delivery.
func (c *Client) CheckURL(raw string) error {
	if len(raw) > MaxURLLength {
		return &URLError{"longer than " + strconv.Itoa(MaxURLLength) + " bytes"}
	}
	for i := 0; i < len(raw); i++ {
		switch ch := raw[i]; {
		case ch == '\\':
			return &URLError{"backslash not allowed"}
		case ch <= ' ' || ch == 0x7f:
			return &URLError{"space or control character not allowed"}
		case ch >= 0x80:
			return &URLError{"non-ASCII character not allowed (use punycode and percent-encoding)"}
		case ch == '#':
			return &URLError{"fragment not allowed"}
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return &URLError{"not a valid URL"}
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && c.cfg.AllowHTTP:
	case u.Scheme == "http":
		return &URLError{"scheme must be https"}
	default:
		if c.cfg.AllowHTTP {
			return &URLError{"scheme must be https or http"}
		}
		return &URLError{"scheme must be https"}
	}
	if u.Opaque != "" || !strings.HasPrefix(raw[len(u.Scheme)+1:], "//") {
		return &URLError{"not an absolute URL with a host"}
	}
	if u.User != nil {
		return &URLError{"user information not allowed"}
	}
	authority := raw[len(u.Scheme)+3:]
	if i := strings.IndexAny(authority, "/?"); i >= 0 {
		authority = authority[:i]
	}
	if strings.ContainsAny(authority, "%@") {
		return &URLError{"percent-encoded host not allowed"}
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return &URLError{"port must be 1 to 65535"}
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return &URLError{"empty port"}
	}
	return c.checkHost(u.Hostname())
}

// checkHost judges the host of a URL (brackets removed).
func (c *Client) checkHost(host string) error {
	if host == "" {
		return &URLError{"host missing"}
	}
	host = strings.ToLower(host)
	name := strings.TrimSuffix(host, ".")
	if addr, err := netip.ParseAddr(name); err == nil {
		if addr.Zone() != "" {
			return &URLError{"IPv6 zone not allowed"}
		}
		if why := refusedReason(addr, c.cfg.AllowNets); why != "" {
			return &URLError{"address refused (" + why + ")"}
		}
		return nil
	}
	if strings.Contains(host, ":") {
		return &URLError{"not a valid IPv6 address"}
	}
	if len(name) > 253 {
		return &URLError{"host name longer than 253 bytes"}
	}
	labels := strings.Split(name, ".")
	for _, l := range labels {
		if !validLabel(l) {
			return &URLError{"not a valid host name"}
		}
	}
	if numeric(labels[len(labels)-1]) {
		return &URLError{"numeric host that is not a dotted-quad IPv4 address"}
	}
	for _, r := range refusedNames {
		if name == r || strings.HasPrefix(r, ".") && strings.HasSuffix(name, r) {
			return &URLError{"local host name refused"}
		}
	}
	if len(labels) < 2 {
		return &URLError{"host must be a fully qualified domain name"}
	}
	return nil
}

// validLabel: 1 to 63 letters, digits and hyphens, no hyphen at either end.
func validLabel(l string) bool {
	if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
		return false
	}
	for i := 0; i < len(l); i++ {
		ch := l[i]
		if !(ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9' || ch == '-') {
			return false
		}
	}
	return true
}

// numeric reports whether a label reads as a number (decimal, octal or
// 0x-hex): the WHATWG URL standard then parses the whole host as IPv4, and
// so do inet_aton and many resolvers.
func numeric(l string) bool {
	if h, ok := strings.CutPrefix(l, "0x"); ok {
		for i := 0; i < len(h); i++ {
			if !strings.ContainsRune("0123456789abcdef", rune(h[i])) {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(l); i++ {
		if l[i] < '0' || l[i] > '9' {
			return false
		}
	}
	return true
}
