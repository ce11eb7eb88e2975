package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/storage/demodata"
	"github.com/fleetapi/fleetapi/storage/pgserver"
	"github.com/fleetapi/fleetapi/storage/storagetest"
)

// getStatus GETs url with token and returns the status and error code.
func getStatus(client *http.Client, url, token string) (int, string, http.Header, error) {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body.Error.Code, resp.Header, nil
}

// TestDatabaseOutage stops the database under a running server: requests
// answer 503 SERVICE_UNAVAILABLE with Retry-After (not 500, not a hang),
// /readyz turns 503, and the server recovers by itself when the database
// returns.
func TestDatabaseOutage(t *testing.T) {
	dir, err := os.MkdirTemp("", "fleetapi-outage-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ctx := context.Background()
	var pglog bytes.Buffer
	pg, err := pgserver.StartPrivateCluster(ctx, dir, &pglog)
	if err != nil {
		if os.Getenv("CI") != "true" {
			t.Skipf("no private cluster: %v", err)
		}
		t.Fatalf("private cluster: %v\n%s", err, pglog.String())
	}
	running := true
	t.Cleanup(func() {
		if running {
			_ = pg.Stop()
		}
	})
	env := map[string]string{"FLEET_DATABASE_URL": pg.URL, "FLEET_ADDR": "127.0.0.1:0"}
	runOK(t, env, "import", writeDemoFile(t))

	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var logs syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(sctx, []string{"serve", "--allow-demo-tokens"}, envOf(env), &logs) }()
	base := "http://" + waitForAddr(t, &logs, done)
	client := &http.Client{Timeout: 30 * time.Second}
	tok := demodata.Tokens()[0].Secret

	if st, _, _, err := getStatus(client, base+"/api/v2/services", tok); err != nil || st != 200 {
		t.Fatalf("before the outage: %d %v", st, err)
	}
	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	running = false
	for _, path := range []string{"/api/v2/services", "/api/v2/me", "/api/v2/services/due"} {
		st, code, h, err := getStatus(client, base+path, tok)
		if err != nil || st != http.StatusServiceUnavailable || code != "SERVICE_UNAVAILABLE" || h.Get("Retry-After") == "" {
			t.Fatalf("%s during the outage: %d %q Retry-After %q %v", path, st, code, h.Get("Retry-After"), err)
		}
	}
	if resp, err := client.Get(base + "/readyz"); err != nil || resp.StatusCode != 503 {
		t.Fatalf("/readyz during the outage: %v %v", resp, err)
	}
	if resp, err := client.Get(base + "/healthz"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("/healthz during the outage: %v %v", resp, err)
	}

	if pg, err = pgserver.StartPrivateCluster(ctx, dir, &pglog); err != nil {
		t.Fatalf("restart: %v", err)
	}
	running = true
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, _, _, err := getStatus(client, base+"/api/v2/services", tok)
		if err == nil && st == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no recovery after the database returned: %d %v", st, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
}

// TestShutdownUnderLoad cancels the server (as SIGTERM does) while clients
// are sending requests: every request that was answered succeeded, none
// got a 5xx, and serve returns cleanly.
func TestShutdownUnderLoad(t *testing.T) {
	db := storagetest.New(t)
	// The limit high enough that no request is refused with 429: this test
	// is about shutdown, and a fast machine sends more than the default
	// per-token budget in the time it runs.
	env := map[string]string{"FLEET_DATABASE_URL": db.URL, "FLEET_ADDR": "127.0.0.1:0", "FLEET_RATE_LIMIT": "1000000"}
	runOK(t, env, "import", writeDemoFile(t))
	ctx, cancel := context.WithCancel(context.Background())
	var logs syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"serve", "--allow-demo-tokens"}, envOf(env), &logs) }()
	base := "http://" + waitForAddr(t, &logs, done)
	tok := demodata.Tokens()[0].Secret

	var (
		mu       sync.Mutex
		ok, bad  int
		refused  int
		stop     = make(chan struct{})
		wg       sync.WaitGroup
		statuses = map[int]int{}
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{Timeout: 10 * time.Second}
			for {
				select {
				case <-stop:
					return
				default:
				}
				st, _, _, err := getStatus(client, base+"/api/v2/services?per_page=500", tok)
				mu.Lock()
				switch {
				case err != nil:
					refused++
				case st == 200:
					ok++
				default:
					bad++
					statuses[st]++
				}
				mu.Unlock()
			}
		}()
	}
	time.Sleep(700 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
	close(stop)
	wg.Wait()
	if bad > 0 || ok == 0 {
		t.Fatalf("ok %d, non-200 %d %v, refused after shutdown %d", ok, bad, statuses, refused)
	}
	t.Logf("answered %d requests with 200 before and during shutdown; %d refused after the listener closed", ok, refused)
}
