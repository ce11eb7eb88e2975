// Package webhook signs, seals and sends webhook deliveries (docs/design.md
// §14, Standard Webhooks 1.0). It holds no SQL and knows nothing of storage
// or policy: storage keeps webhooks with their secrets sealed by a KeyRing,
// and the sender claims deliveries and calls Client.Send for each attempt,
// retrying on the schedule of ParseSchedule. It imports only the standard
// library.
//
// # Secrets and signatures
//
// A secret is "whsec_" + standard base64 of 32 random bytes (NewSecret,
// ParseSecret). Sign makes the webhook-signature header: "v1," + base64 of
// HMAC-SHA256 over "id.timestamp.body", one entry per secret (two during a
// rotation). At rest secrets are sealed with AES-256-GCM (KeyRing), bound to
// the webhook's id.
//
// # Outbound requests are hostile territory
//
// A receiver's URL is written by a tenant, and its host resolves to whatever
// the tenant's DNS says at the time of each delivery. Client.CheckURL judges
// the URL when it is written; Client.Send judges the address it actually
// connects to, in the dialer's Control hook, after resolution and for every
// address tried, so a DNS answer that changes between a check and a
// connection (rebinding) gains nothing. The following are refused unless the
// operator lists them in FLEET_WEBHOOK_ALLOW_NETS:
//
//   - 127.0.0.0/8, ::1 (loopback): the server itself, its admin ports,
//     PostgreSQL, Redis.
//   - 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, fc00::/7 (private): the
//     operator's internal network.
//   - 169.254.0.0/16, fe80::/10, and any address with a zone (link-local):
//     cloud metadata services (169.254.169.254) hand out credentials.
//   - 100.64.0.0/10 (shared, carrier-grade NAT): internal to a provider,
//     also where some clouds put internal services.
//   - 224.0.0.0/4, ff00::/8 (multicast), 0.0.0.0/8, :: (unspecified: Linux
//     connects 0.0.0.0 to the local host), 255.255.255.255 (broadcast).
//   - ::ffff:0:0/96 (IPv4-mapped) and ::/96 (IPv4-compatible): they reach an
//     IPv4 host; the reason given is the embedded address's range. A public
//     receiver has a plain IPv4 form, so the mapped form is refused even for
//     a public address. (Dialing a mapped address connects over IPv4, and
//     the hook then judges the IPv4 address itself.)
//   - 64:ff9b::/96 (NAT64) and 2002::/16 (6to4) when the IPv4 address they
//     embed is refused: a NAT64 gateway or 6to4 relay would forward to it.
//   - 192.0.0.0/24 (IETF protocol assignments), 192.88.99.0/24 (retired 6to4
//     relays), 198.18.0.0/15 (benchmarking), 240.0.0.0/4 (reserved),
//     2001::/23 (IETF protocol assignments, with Teredo, whose tunnels reach
//     arbitrary IPv4 hosts): never a legitimate receiver, and some are used
//     inside providers' networks.
//   - 192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24, 2001:db8::/32,
//     3fff::/20 (documentation): never routed; refused so that examples
//     cannot be pointed at something local by a resolver that routes them.
//   - Every IPv6 address outside 2000::/3 (the global unicast space) apart
//     from NAT64: nothing else is assigned for public unicast.
//
// Host names: "localhost" and names under .localhost, .localdomain, .local,
// .internal, .home.arpa, .invalid and .test, single-label names (resolved
// through the search domains to internal hosts), and names whose last label
// is a number (2130706433, 0x7f000001, 0177.0.0.1, 127.1: inet_aton and
// browsers read them as IPv4 addresses) are refused by CheckURL; a name that
// passes is still judged by the address it resolves to.
//
// The transport takes no proxy from the environment, speaks HTTP/1.1 only,
// never follows a redirect (a 3xx is a failed attempt), keeps no idle
// connection (each delivery resolves and connects anew, and a hostile
// receiver holds nothing after its attempt), bounds response headers to
// 16 KiB and reads at most MaxResponse (64 KiB) of the body. The whole
// attempt (dial, TLS handshake, headers, body) runs under Config.Timeout
// (15 s): a receiver that stalls the handshake, trickles headers or sends an
// endless body ends there.
package webhook
