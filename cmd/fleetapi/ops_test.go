package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/storage/demodata"
	"github.com/fleetapi/fleetapi/storage/storagetest"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// startServe runs `fleetapi serve` with env until the test ends and returns
// the API address and the log buffer.
func startServe(t *testing.T, env map[string]string) (string, *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"serve", "--allow-demo-tokens"}, envOf(env), logs) }()
	addr := waitForAddr(t, logs, done)
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return addr, logs
}

func TestMetricsAndHealth(t *testing.T) {
	db := storagetest.New(t)
	env := map[string]string{"FLEET_DATABASE_URL": db.URL, "FLEET_ADDR": "127.0.0.1:0", "FLEET_RATE_LIMIT": "2"}
	runOK(t, env, "import", writeDemoFile(t))
	addr, _ := startServe(t, env)
	tok := demodata.Tokens()[0].Secret
	client := &http.Client{Timeout: 10 * time.Second}
	for range 3 { // the third is over the limit of 2
		getStatus(client, "http://"+addr+"/api/v2/services", tok)
	}
	if st, body := get(t, "http://"+addr+"/healthz"); st != 200 || !strings.Contains(body, "ok") {
		t.Fatalf("/healthz: %d %s", st, body)
	}
	if st, body := get(t, "http://"+addr+"/readyz"); st != 200 {
		t.Fatalf("/readyz: %d %s", st, body)
	}
	st, metrics := get(t, "http://"+addr+"/metrics")
	if st != 200 {
		t.Fatalf("/metrics: %d", st)
	}
	for _, want := range []string{
		`http_server_request_duration_seconds_count{`,
		`fleet_policy_decisions_total{`,
		`fleet_ratelimit_rejections_total{`,
		`kind="token"`,
		`http_route="/api/v2/services"`,
		`go_sql_connections_`,
		`fleet_policy_cache_total{`,
		`result="hit"`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// The body size histograms are dropped (telemetry.droppedInstruments).
	for _, unwanted := range []string{`http_server_request_body_size`, `http_server_response_body_size`} {
		if strings.Contains(metrics, unwanted) {
			t.Errorf("/metrics has %s", unwanted)
		}
	}
	if t.Failed() {
		t.Logf("metrics:\n%s", metrics)
	}
}

func TestSeparateMetricsAddress(t *testing.T) {
	db := storagetest.New(t)
	env := map[string]string{"FLEET_DATABASE_URL": db.URL, "FLEET_ADDR": "127.0.0.1:0", "FLEET_METRICS_ADDR": "127.0.0.1:0"}
	addr, logs := startServe(t, env)
	m := regexp.MustCompile(`"msg":"operations endpoints listening","addr":"([^"]+)"`).FindStringSubmatch(logs.String())
	if m == nil {
		t.Fatalf("no operations address in:\n%s", logs.String())
	}
	if st, _ := get(t, "http://"+m[1]+"/metrics"); st != 200 {
		t.Fatalf("/metrics on the operations address: %d", st)
	}
	if st, _ := get(t, "http://"+m[1]+"/readyz"); st != 200 {
		t.Fatalf("/readyz on the operations address: %d", st)
	}
	if st, _ := get(t, "http://"+addr+"/metrics"); st != 404 {
		t.Fatalf("/metrics on the API address: %d, want 404", st)
	}
}

// TestSlowAndOversizedClients: a header block over the limit is refused,
// and a client that never finishes its headers is disconnected.
func TestSlowAndOversizedClients(t *testing.T) {
	db := storagetest.New(t)
	addr, _ := startServe(t, map[string]string{"FLEET_DATABASE_URL": db.URL, "FLEET_ADDR": "127.0.0.1:0", "FLEET_READ_HEADER_TIMEOUT": "1s"})
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/api/v2/me", nil)
	req.Header.Set("X-Padding", strings.Repeat("x", 64<<10))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("64 KiB header: %d", resp.StatusCode)
	}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("GET /api/v2/me HTTP/1.1\r\nHost: x\r\n")); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(15 * time.Second))
	buf := make([]byte, 512)
	_, err = conn.Read(buf) // the server closes (or answers 408) once the header timeout passes
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("a client that never finished its headers held the connection for 15 s")
	}
}

// TestTruncatedBody: a body cut short answers 400 INVALID_BODY, not 500.
func TestTruncatedBody(t *testing.T) {
	db := storagetest.New(t)
	env := map[string]string{"FLEET_DATABASE_URL": db.URL, "FLEET_ADDR": "127.0.0.1:0"}
	runOK(t, env, "import", writeDemoFile(t))
	addr, _ := startServe(t, env)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tok := demodata.Tokens()[0].Secret
	req := "POST /api/v2/passengers HTTP/1.1\r\nHost: x\r\nAuthorization: " + tok +
		"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
	if _, err := conn.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	conn.(*net.TCPConn).CloseWrite()
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	b, _ := io.ReadAll(conn)
	if !strings.HasPrefix(string(b), "HTTP/1.1 400") || !strings.Contains(string(b), "INVALID_BODY") {
		t.Fatalf("response to a truncated body:\n%s", b)
	}
}
