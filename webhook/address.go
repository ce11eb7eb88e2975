package webhook

import (
	"fmt"
	"net/netip"
	"strings"
)

// refusedRange is one network deliveries never reach unless the operator
// allows it (FLEET_WEBHOOK_ALLOW_NETS); why is the short reason shown.
type refusedRange struct {
	prefix netip.Prefix
	why    string
}

// refusedV4 lists the IPv4 networks refused (the package doc says why each).
var refusedV4 = []refusedRange{
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.0.0.0/24"), "reserved"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation"},
	{netip.MustParsePrefix("192.88.99.0/24"), "reserved"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("198.18.0.0/15"), "reserved"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"}, // includes 255.255.255.255, broadcast
}

// refusedV6 lists the IPv6 networks refused inside 2000::/3 (global
// unicast); everything outside 2000::/3 is refused as well (see judge).
var refusedV6 = []refusedRange{
	{netip.MustParsePrefix("2001::/23"), "reserved"}, // IETF protocol assignments: Teredo, benchmarking, ORCHID
	{netip.MustParsePrefix("2001:db8::/32"), "documentation"},
	{netip.MustParsePrefix("3fff::/20"), "documentation"},
}

// Embedding IPv6 prefixes whose IPv4 part is judged like an IPv4 address.
var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
	global6   = netip.MustParsePrefix("2000::/3")
)

// v6Names gives the reason for well-known networks outside 2000::/3.
var v6Names = []refusedRange{
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("::ffff:0:0/96"), "IPv4-mapped"},
	{netip.MustParsePrefix("::/96"), "IPv4-compatible"},
	{netip.MustParsePrefix("fc00::/7"), "private"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fec0::/10"), "site-local"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}

// refusedReason says why a delivery may not go to addr ("" when it may):
// the operator's networks first, then the refused ranges. An address with a
// zone is link-scoped and always refused.
func refusedReason(addr netip.Addr, allow []netip.Prefix) string {
	if !addr.IsValid() {
		return "invalid address"
	}
	if addr.Zone() != "" {
		return "link-local"
	}
	for _, p := range allow {
		if p.Contains(addr) || (addr.Is4In6() && p.Contains(addr.Unmap())) {
			return ""
		}
	}
	if addr.Is4() {
		for _, r := range refusedV4 {
			if r.prefix.Contains(addr) {
				return r.why
			}
		}
		return ""
	}
	if addr.Is4In6() {
		// A mapped address reaches the IPv4 host: name its range, and refuse
		// the mapped form anyway (a public receiver has a plain IPv4 form).
		if why := refusedReason(addr.Unmap(), nil); why != "" {
			return why
		}
		return "IPv4-mapped"
	}
	if nat64.Contains(addr) {
		b := addr.As16()
		return embedded(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), "NAT64")
	}
	if sixToFour.Contains(addr) {
		b := addr.As16()
		return embedded(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), "6to4")
	}
	if !global6.Contains(addr) {
		for _, r := range v6Names {
			if r.prefix.Contains(addr) {
				return r.why
			}
		}
		return "reserved"
	}
	for _, r := range refusedV6 {
		if r.prefix.Contains(addr) {
			return r.why
		}
	}
	return ""
}

// embedded judges the IPv4 address an IPv6 prefix embeds.
func embedded(v4 netip.Addr, via string) string {
	if why := refusedReason(v4, nil); why != "" {
		return via + " of " + why
	}
	return ""
}

// ParseAllowNets reads FLEET_WEBHOOK_ALLOW_NETS: comma-separated CIDR
// prefixes or single addresses (a single address is its own /32 or /128).
// An empty value allows nothing beyond the public internet. Prefixes are
// masked ("10.1.2.3/8" becomes 10.0.0.0/8); zones are refused.
func ParseAllowNets(s string) ([]netip.Prefix, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []netip.Prefix
	for i, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		var p netip.Prefix
		var err error
		if strings.Contains(part, "/") {
			p, err = netip.ParsePrefix(part)
		} else {
			var a netip.Addr
			a, err = netip.ParseAddr(part)
			if err == nil && a.Zone() == "" {
				p = netip.PrefixFrom(a, a.BitLen())
			}
		}
		if err != nil || !p.IsValid() {
			return nil, fmt.Errorf("FLEET_WEBHOOK_ALLOW_NETS: entry %d (%q) is not a network such as 10.0.0.0/8 or an address", i+1, part)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}
