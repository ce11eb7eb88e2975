package pgserver

import (
	"fmt"
	"strings"
)

// HAProxyServer is one PostgreSQL node behind HAProxy: its address
// (host:port, or a unix socket's path) and the port of its Patroni REST
// API, which HAProxy's checks ask for the node's role.
type HAProxyServer struct {
	Name, Addr string
	CheckPort  int
}

// HAProxyConfig is the HAProxy configuration of docs/operations.md ("High
// availability and backups"), the one the HA cluster runs: TCP mode (a
// PostgreSQL connection is not HTTP: without it a client's SSL request is
// answered by an HTTP error, "invalid response to SSL negotiation"),
// explicit timeouts (connect 2 s; client and server 30 min, the pool's
// connection lifetime, so that HAProxy never cuts an idle pooled
// connection first; a check 1 s), 2 retries of a refused connection, and
// one listen per role on bindHost: the primary port routes to the node
// whose Patroni answers 200 on /primary, the replica port to those
// answering 200 on /replica; a node marked down has its sessions cut.
// e2e's TestOperationsHAProxy checks that the page shows exactly this and
// runs it.
func HAProxyConfig(bindHost string, primaryPort, replicaPort int, servers []HAProxyServer) string {
	var b strings.Builder
	b.WriteString(`global
    maxconn 400
defaults
    mode tcp
    retries 2
    timeout connect 2s
    timeout client 30m
    timeout server 30m
    timeout check 1s
`)
	for _, l := range []struct {
		name, check string
		port        int
	}{{"primary", "/primary", primaryPort}, {"replicas", "/replica", replicaPort}} {
		fmt.Fprintf(&b, `listen %s
    bind %s:%d
    option httpchk GET %s
    http-check expect status 200
    default-server inter 250ms fastinter 250ms downinter 250ms fall 2 rise 1 on-marked-down shutdown-sessions
`, l.name, bindHost, l.port, l.check)
		for _, s := range servers {
			fmt.Fprintf(&b, "    server %s %s check port %d\n", s.Name, s.Addr, s.CheckPort)
		}
	}
	return b.String()
}
