package webhook

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

// refusedURLs are URLs CheckURL refuses with the default configuration
// (https only, no network allowed), by class of trick, with the start of the
// expected reason.
var refusedURLs = []struct{ name, url, reason string }{
	// Every loopback form.
	{"loopback", "https://127.0.0.1/", "address refused (loopback)"},
	{"loopback_other", "https://127.255.0.9:8443/x", "address refused (loopback)"},
	{"loopback_trailing_dot", "https://127.0.0.1./", "address refused (loopback)"},
	{"loopback_short", "https://127.1/", "numeric host"},
	{"loopback_decimal", "https://2130706433/", "numeric host"},
	{"loopback_hex", "https://0x7f000001/", "numeric host"},
	{"loopback_hex_dotted", "https://0x7f.1/", "numeric host"},
	{"loopback_hex_upper", "https://0X7F000001/", "numeric host"},
	{"loopback_hex_dotted_full", "https://0x7f.0x0.0x0.0x1/", "numeric host"},
	{"loopback_mixed", "https://0x7f.0.0.01/", "numeric host"},
	{"loopback_octal", "https://0177.0.0.1/", "numeric host"},
	{"loopback_octal_short", "https://0177.1/", "numeric host"},
	{"loopback_v6", "https://[::1]/", "address refused (loopback)"},
	{"loopback_v6_long", "https://[0:0:0:0:0:0:0:1]:443/", "address refused (loopback)"},
	{"loopback_mapped", "https://[::ffff:127.0.0.1]/", "address refused (loopback)"},
	{"loopback_mapped_hex", "https://[0:0:0:0:0:ffff:7f00:1]/", "address refused (loopback)"},
	{"loopback_compatible", "https://[::127.0.0.1]/", "address refused (IPv4-compatible)"},
	{"localhost", "https://localhost/", "local host name"},
	{"localhost_upper_dot", "https://LOCALHOST./", "local host name"},
	{"localhost_sub", "https://foo.localhost/", "local host name"},
	{"localhost_localdomain", "https://localhost.localdomain/", "local host name"},
	{"ip6_localhost", "https://ip6-localhost/", "local host name"},
	{"localhost6", "https://localhost6.localdomain6/", "local host name"},
	{"localhost_mixed_case", "https://LocalHost:8443/", "local host name"},
	// Unspecified and broadcast.
	{"unspecified", "https://0.0.0.0/", "address refused (unspecified)"},
	{"unspecified_zero", "https://0/", "numeric host"},
	{"unspecified_v6", "https://[::]/", "address refused (unspecified)"},
	{"broadcast", "https://255.255.255.255/", "address refused (reserved)"},
	// Private, shared, link-local, multicast.
	{"private_10", "https://10.0.0.1/", "address refused (private)"},
	{"private_172", "https://172.16.5.4/", "address refused (private)"},
	{"private_172_top", "https://172.31.255.255/", "address refused (private)"},
	{"private_192", "https://192.168.1.1/", "address refused (private)"},
	{"private_mapped", "https://[::ffff:10.0.0.1]/", "address refused (private)"},
	{"ula", "https://[fd00::1]/", "address refused (private)"},
	{"ula_fc", "https://[fc00::1]/", "address refused (private)"},
	{"shared", "https://100.64.0.1/", "address refused (shared)"},
	{"shared_top", "https://100.127.255.254/", "address refused (shared)"},
	{"metadata", "https://169.254.169.254/latest/meta-data/", "address refused (link-local)"},
	{"metadata_mapped", "https://[::ffff:169.254.169.254]/", "address refused (link-local)"},
	{"link_local_v6", "https://[fe80::1]/", "address refused (link-local)"},
	{"link_local_v6_zone", "https://[fe80::1%25eth0]/", "percent-encoded"},
	{"site_local_v6", "https://[fec0::1]/", "address refused (site-local)"},
	{"multicast", "https://224.0.0.1/", "address refused (multicast)"},
	{"multicast_v6", "https://[ff02::1]/", "address refused (multicast)"},
	// Embedded IPv4 in IPv6.
	{"mapped_public", "https://[::ffff:8.8.8.8]/", "address refused (IPv4-mapped)"},
	{"nat64_loopback", "https://[64:ff9b::7f00:1]/", "address refused (NAT64 of loopback)"},
	{"nat64_metadata", "https://[64:ff9b::169.254.169.254]/", "address refused (NAT64 of link-local)"},
	{"sixtofour_private", "https://[2002:c0a8:0101::1]/", "address refused (6to4 of private)"},
	{"teredo", "https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", "address refused (reserved)"},
	{"discard_v6", "https://[100::1]/", "address refused (reserved)"},
	// Documentation and reserved.
	{"doc_192_0_2", "https://192.0.2.1/", "address refused (documentation)"},
	{"doc_198_51", "https://198.51.100.7/", "address refused (documentation)"},
	{"doc_203", "https://203.0.113.9/", "address refused (documentation)"},
	{"doc_v6", "https://[2001:db8::1]/", "address refused (documentation)"},
	{"ietf_192_0_0", "https://192.0.0.8/", "address refused (reserved)"},
	{"benchmark", "https://198.19.0.1/", "address refused (reserved)"},
	{"reserved_240", "https://240.0.0.1/", "address refused (reserved)"},
	// Names that are local or read as numbers.
	{"single_label", "https://intranet/", "host must be a fully qualified"},
	{"internal", "https://metadata.google.internal/computeMetadata/v1/", "local host name"},
	{"mdns", "https://printer.local/", "local host name"},
	{"home_arpa", "https://router.home.arpa/", "local host name"},
	{"numeric_last_label", "https://a.b.123/", "numeric host"},
	{"five_parts", "https://1.2.3.4.5/", "numeric host"},
	{"leading_zero", "https://127.000.000.001/", "numeric host"},
	{"hex_empty", "https://0x/", "numeric host"},
	// Userinfo and parser confusion.
	{"userinfo", "https://good.example@127.0.0.1/", "user information"},
	{"userinfo_password", "https://user:pass@good.example/", "user information"},
	{"userinfo_empty", "https://@good.example/", "user information"},
	{"fragment_at", "https://127.0.0.1#@good.example/", "fragment"},
	{"fragment", "https://good.example/#x", "fragment"},
	{"backslash_at", `https://good.example\@127.0.0.1/`, "backslash"},
	{"backslash_slashes", `https:\\127.0.0.1\`, "backslash"},
	{"backslash_path", `https://good.example/a\b`, "backslash"},
	{"percent_host", "https://%31%32%37.0.0.1/", "not a valid URL"},
	{"percent_dot", "https://good%2eexample/", "not a valid URL"},
	{"space", "https://good.example /", "space"},
	{"tab", "https://good.exa\tmple/", "space"},
	{"newline", "https://good.example/\r\nHost: x", "space"},
	{"nul", "https://good.example\x00.evil/", "space"},
	{"unicode_dots", "https://127。0。0。1/", "non-ASCII"},
	{"unicode_host", "https://exämple.com/", "non-ASCII"},
	{"underscore", "https://a_b.example/", "not a valid host name"},
	{"label_hyphen", "https://-a.example/", "not a valid host name"},
	{"empty_label", "https://a..example/", "not a valid host name"},
	{"long_label", "https://" + strings.Repeat("a", 64) + ".example/", "not a valid host name"},
	{"bad_v6", "https://[::1::2]/", "not a valid URL"},
	// Schemes.
	{"http", "http://good.example/", "scheme must be https"},
	{"file", "file:///etc/passwd", "scheme must be https"},
	{"gopher", "gopher://good.example:70/_x", "scheme must be https"},
	{"ftp", "ftp://good.example/", "scheme must be https"},
	{"javascript", "javascript:alert(1)", "scheme must be https"},
	{"data", "data:text/plain,hi", "scheme must be https"},
	{"ws", "wss://good.example/", "scheme must be https"},
	{"no_scheme", "good.example/path", "scheme must be https"},
	{"relative", "//good.example/", "scheme must be https"},
	{"opaque", "https:good.example", "not an absolute URL"},
	{"one_slash", "https:/good.example/", "not an absolute URL"},
	// Host missing, ports, size.
	{"empty", "", "scheme must be https"},
	{"empty_host", "https:///path", "host missing"},
	{"empty_host_port", "https://:443/", "host missing"},
	{"port_zero", "https://good.example:0/", "port must be"},
	{"port_big", "https://good.example:65536/", "port must be"},
	{"port_huge", "https://good.example:99999999999999999999/", "port must be"},
	{"port_empty", "https://good.example:/", "empty port"},
	{"port_letters", "https://good.example:ab/", "not a valid URL"},
	{"long_2049", "https://good.example/" + strings.Repeat("a", MaxURLLength-len("https://good.example/")+1), "longer than 2048"},
	{"long_8k", "https://good.example/" + strings.Repeat("a", 8<<10), "longer than 2048"},
	{"long_host", "https://" + strings.Repeat("abcdefghi.", 26) + "example/", "host name longer"},
}

// acceptedURLs pass CheckURL with the default configuration.
var acceptedURLs = []string{
	"https://good.example/",
	"https://hooks.good.example:8443/fleet/in?tenant=7&x=%2F",
	"https://GOOD.Example./upper",
	"https://8.8.8.8/",
	"https://[2606:4700::1111]/",
	"https://[64:ff9b::808:808]/",
	"https://[2002:808:808::1]/",
	"https://xn--exmple-cua.com/",
	"https://a-b.c0.example/",
	"https://123.example/",
	"https://good.example:1/",
	"https://good.example:65535/",
	"https://good.example/" + strings.Repeat("a", MaxURLLength-len("https://good.example/")),
	"https://1password.com/",
	"https://0xdeadbeef.example/",
}

func TestCheckURLRefused(t *testing.T) {
	c := NewClient(Config{})
	for _, tc := range refusedURLs {
		t.Run(tc.name, func(t *testing.T) {
			err := c.CheckURL(tc.url)
			var ue *URLError
			if !errors.As(err, &ue) {
				t.Fatalf("CheckURL(%q) = %v, want a *URLError", tc.url, err)
			}
			if !strings.HasPrefix(ue.Reason, tc.reason) {
				t.Errorf("CheckURL(%q) reason %q, want it to start with %q", tc.url, ue.Reason, tc.reason)
			}
			if len(ue.Reason) > 80 || strings.Contains(ue.Reason, "127.0.0.1") {
				t.Errorf("reason %q is not short or echoes the address", ue.Reason)
			}
		})
	}
}

func TestCheckURLAccepted(t *testing.T) {
	c := NewClient(Config{})
	for _, u := range acceptedURLs {
		if err := c.CheckURL(u); err != nil {
			t.Errorf("CheckURL(%.60q) = %v, want nil", u, err)
		}
	}
}

// TestCheckURLConfig: AllowHTTP admits http (and nothing else), AllowNets
// admits the literal addresses inside its networks, mapped forms included,
// and nothing outside them.
func TestCheckURLConfig(t *testing.T) {
	nets, err := ParseAllowNets("127.0.0.0/8, 10.1.0.0/16, fd00::1")
	if err != nil {
		t.Fatal(err)
	}
	c := NewClient(Config{AllowHTTP: true, AllowNets: nets})
	for _, u := range []string{
		"http://good.example/", "http://127.0.0.1:8080/", "https://127.0.0.1/", "https://[::ffff:127.0.0.1]/",
		"https://10.1.2.3/", "https://[fd00::1]/",
	} {
		if err := c.CheckURL(u); err != nil {
			t.Errorf("CheckURL(%q) = %v, want nil", u, err)
		}
	}
	for _, u := range []string{
		"https://10.2.0.1/", "https://[fd00::2]/", "https://[::1]/", "https://localhost/", "https://2130706433/",
		"ftp://good.example/", "file:///etc/passwd",
	} {
		if err := c.CheckURL(u); err == nil {
			t.Errorf("CheckURL(%q) = nil, want a refusal", u)
		}
	}
	if err := NewClient(Config{}).CheckURL("http://8.8.8.8/"); err == nil {
		t.Error("AllowHTTP false: http:// accepted")
	}
}

// TestRefusedReasonRanges walks the edges of every refused range: the first
// and last address are refused, the neighbours outside are not.
func TestRefusedReasonRanges(t *testing.T) {
	for _, r := range append(append([]refusedRange(nil), refusedV4...), refusedV6...) {
		first := r.prefix.Masked().Addr()
		last := lastAddr(r.prefix)
		for _, a := range []netip.Addr{first, last} {
			if refusedReason(a, nil) == "" {
				t.Errorf("%s (in %s) accepted", a, r.prefix)
			}
		}
		for _, a := range []netip.Addr{first.Prev(), last.Next()} {
			if !a.IsValid() {
				continue
			}
			inOther := false
			for _, o := range append(append([]refusedRange(nil), refusedV4...), refusedV6...) {
				inOther = inOther || o.prefix.Contains(a)
			}
			if why := refusedReason(a, nil); !inOther && why != "" && a.Is4() {
				t.Errorf("%s (next to %s) refused: %s", a, r.prefix, why)
			}
		}
	}
	for a, want := range map[string]string{
		"::":                 "unspecified",
		"::1":                "loopback",
		"::ffff:1.1.1.1":     "IPv4-mapped",
		"::ffff:0.0.0.0":     "unspecified",
		"64:ff9b::a00:1":     "NAT64 of private",
		"64:ff9b:1::1":       "reserved",
		"2002:7f00:1::":      "6to4 of loopback",
		"2002:a9fe:a9fe::1":  "6to4 of link-local",
		"fe80::1%eth0":       "link-local",
		"5f00::1":            "reserved",
		"2001:4860:4860::88": "",
		"64:ff9b::1.1.1.1":   "",
		"2002:101:101::":     "",
		"1.1.1.1":            "",
		"100.63.255.255":     "",
		"100.128.0.0":        "",
		"172.15.255.255":     "",
		"172.32.0.0":         "",
		"169.253.255.255":    "",
		"223.255.255.255":    "",
	} {
		if got := refusedReason(netip.MustParseAddr(a), nil); got != want {
			t.Errorf("refusedReason(%s) = %q, want %q", a, got, want)
		}
	}
}

func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 1 << (7 - i%8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}
