package e2e_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/storage/pgserver"
	"github.com/fleetapi/fleetapi/storage/storagetest"
)

// operationsBlock returns the first fenced code block after the line of
// docs/operations.md that starts with marker, without the list item's
// indentation.
func operationsBlock(t *testing.T, marker string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	i := strings.Index(page, "\n"+marker)
	if i < 0 {
		t.Fatalf("docs/operations.md has no line starting with %q", marker)
	}
	lines := strings.SplitAfter(page[i+1:], "\n")
	var out strings.Builder
	indent, in := "", false
	for _, l := range lines {
		fence := strings.TrimSpace(l) == "```"
		switch {
		case !in && fence:
			in, indent = true, l[:strings.Index(l, "```")]
		case in && fence:
			return out.String()
		case in:
			out.WriteString(strings.TrimPrefix(l, indent))
		}
	}
	t.Fatalf("docs/operations.md: no closed code block after %q", marker)
	return ""
}

// TestOperationsHAProxy (issue 34): the HAProxy configuration of
// docs/operations.md is the one the HA tests run (pgserver.HAProxyConfig),
// and it works as written, after the defaults of Debian's haproxy.cfg
// (HTTP mode): haproxy checks it without a warning (no missing timeout),
// and psql (which asks for SSL first: in HTTP mode it fails with "invalid
// response to SSL negotiation") connects through its
// primary and its replica port to a PostgreSQL, each routed by the node's
// answer on Patroni's /primary and /replica (two stand-in REST APIs); a
// node that stops answering 200 is taken out, and back when it does again.
func TestOperationsHAProxy(t *testing.T) {
	haproxy, err := exec.LookPath("haproxy")
	if err != nil {
		if haproxy, err = exec.LookPath("/usr/sbin/haproxy"); err != nil {
			if os.Getenv("CI") != "true" {
				t.Skip("haproxy is not installed")
			}
			t.Fatal("CI=true and haproxy is not installed (.ci/run installs it)")
		}
	}
	psql, err := exec.LookPath("psql")
	if err != nil {
		t.Fatal("psql is not installed")
	}
	page := operationsBlock(t, "- **HAProxy**")
	nodes := []pgserver.HAProxyServer{{Name: "nodeA", Addr: "10.0.0.1:5432", CheckPort: 8008}, {Name: "nodeB", Addr: "10.0.0.2:5432", CheckPort: 8008}}
	if want := pgserver.HAProxyConfig("*", 5000, 5001, nodes); page != want {
		t.Fatalf("docs/operations.md's HAProxy configuration is not the one the HA tests run (pgserver.HAProxyConfig):\n--- page\n%s--- code\n%s", page, want)
	}

	db := storagetest.New(t)
	u, err := neturl.Parse(db.DirectURL)
	if err != nil {
		t.Fatal(err)
	}
	pgAddr, dbName := u.Host, strings.TrimPrefix(u.Path, "/")
	if pgAddr == "" {
		pgAddr = u.Query().Get("host") // a private cluster's socket: HAProxy takes its path
	}
	// Two stand-ins for Patroni's REST API: node A the primary, node B a
	// replica.
	var roleA, roleB atomic.Value
	roleA.Store("primary")
	roleB.Store("replica")
	patroni := func(role *atomic.Value) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.TrimPrefix(r.URL.Path, "/") != role.Load().(string) {
				w.WriteHeader(http.StatusServiceUnavailable)
			}
		}))
		t.Cleanup(s.Close)
		return s
	}
	checkA, checkB := patroni(&roleA), patroni(&roleB)
	port := func(s *httptest.Server) string { return strconv.Itoa(s.Listener.Addr().(*net.TCPAddr).Port) }
	primary, replicas := freePort(t), freePort(t)
	cfg := strings.NewReplacer(
		"bind *:5000", "bind 127.0.0.1:"+primary,
		"bind *:5001", "bind 127.0.0.1:"+replicas,
		"10.0.0.1:5432 check port 8008", pgAddr+" check port "+port(checkA),
		"10.0.0.2:5432 check port 8008", pgAddr+" check port "+port(checkB),
	).Replace(page)
	// As an operator does it: in the distribution's haproxy.cfg, after its
	// defaults (Debian's: HTTP mode, 50 s timeouts), which the page's own
	// defaults section must reset.
	file := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(file, []byte(debianDefaults+cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(haproxy, "-c", "-f", file).CombinedOutput()
	if err != nil || strings.Contains(string(out), "[WARNING]") || strings.Contains(string(out), "[ALERT]") {
		t.Fatalf("haproxy -c on the page's configuration: %v\n%s", err, out)
	}
	cmd := exec.Command(haproxy, "-f", file, "-db")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var log syncBuffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	query := func(port string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		// sslmode=prefer, psql's default: it asks for SSL first.
		out, err := exec.CommandContext(ctx, psql, "-X", "-A", "-t", "-c", "SELECT 'through haproxy'",
			"host=127.0.0.1 port="+port+" user=postgres dbname="+dbName+" connect_timeout=5 sslmode=prefer").CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	// waitFor polls query on port until ok says its answer is the one
	// wanted (HAProxy's checks run every 250 ms).
	waitFor := func(what, port string, ok func(string, error) bool) {
		t.Helper()
		var got string
		var err error
		for range 100 {
			if got, err = query(port); ok(got, err) {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("%s: psql answered %q (%v)\nhaproxy:\n%s", what, got, err, log.String())
	}
	works := func(got string, err error) bool { return err == nil && got == "through haproxy" }
	fails := func(got string, err error) bool { return err != nil }
	waitFor("psql through the primary port", primary, works)
	waitFor("psql through the replica port", replicas, works)
	if got, err := query(primary); !works(got, err) {
		t.Fatalf("psql through the primary port, again: %q (%v)", got, err)
	}
	// Node B stops being a replica: the replica port has no server left.
	roleB.Store("none")
	waitFor("psql through the replica port, node B down", replicas, fails)
	if got, err := query(primary); !works(got, err) {
		t.Fatalf("the primary port with node B down: %q (%v)", got, err)
	}
	roleB.Store("replica")
	waitFor("psql through the replica port, node B back", replicas, works)
}

// debianDefaults is the defaults section of Debian's
// /etc/haproxy/haproxy.cfg (package haproxy 2.6), without its log and
// error file lines.
const debianDefaults = `defaults
    mode http
    option httplog
    option dontlognull
    timeout connect 5000
    timeout client 50000
    timeout server 50000
`

// freePort is a free TCP port of 127.0.0.1.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}
