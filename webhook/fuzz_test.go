package webhook

import (
	"net/netip"
	"net/url"
	"strings"
	"testing"
)

// FuzzCheckURL: CheckURL never panics, and whatever it accepts parses with
// net/url to an absolute http or https URL with a host that is not a literal
// refused address, without user information or fragment.
func FuzzCheckURL(f *testing.F) {
	for _, tc := range refusedURLs {
		f.Add(tc.url)
	}
	for _, u := range acceptedURLs {
		f.Add(u)
	}
	c := NewClient(Config{AllowHTTP: true})
	f.Fuzz(func(t *testing.T, raw string) {
		if c.CheckURL(raw) != nil {
			return
		}
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("accepted %q, which net/url does not parse: %v", raw, err)
		}
		if u.Scheme != "https" && u.Scheme != "http" || u.User != nil || u.Fragment != "" || u.Opaque != "" {
			t.Fatalf("accepted %q: scheme %q, user %v, fragment %q, opaque %q", raw, u.Scheme, u.User, u.Fragment, u.Opaque)
		}
		host := u.Hostname()
		if host == "" || len(raw) > MaxURLLength {
			t.Fatalf("accepted %q: host %q, %d bytes", raw, host, len(raw))
		}
		if a, err := netip.ParseAddr(strings.TrimSuffix(host, ".")); err == nil {
			if why := refusedReason(a, nil); why != "" {
				t.Fatalf("accepted %q: %s is refused (%s)", raw, a, why)
			}
		}
		if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
			t.Fatalf("accepted %q", raw)
		}
	})
}
