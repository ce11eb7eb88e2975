package e2e_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/storage/demodata"
	"github.com/fleetapi/fleetapi/storage/importfile"
	"github.com/fleetapi/fleetapi/storage/storagetest"
	"github.com/fleetapi/fleetapi/webhook"
)

// TestWebhookSenderKilledMidSend: a `fleetapi serve` sends a webhook
// delivery and is killed with SIGKILL while the receiver holds the
// request; another `fleetapi serve` on the same database sends it again,
// with the same webhook-id and a valid signature, and records it once.
func TestWebhookSenderKilledMidSend(t *testing.T) {
	db := storagetest.New(t)
	ctx := context.Background()
	if _, err := importfile.Load(ctx, db.DB, bytes.NewReader(demodata.File())); err != nil {
		t.Fatalf("demo data: %v", err)
	}
	const imei = "356938035643809" // acme's Truck 7
	if _, err := db.ExecContext(ctx, `INSERT INTO events (account_id, name, type, active, checked_value)
		SELECT id, 'e2e fast', 'overspeed', true, '100' FROM accounts WHERE username = 'acme'`); err != nil {
		t.Fatal(err)
	}
	// the receiver: holds the first request until the sender dies
	var mu sync.Mutex
	var ids, sigs, stamps []string
	var bodies [][]byte
	held := make(chan struct{})
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := make([]byte, 1<<16)
		n, _ := r.Body.Read(b)
		mu.Lock()
		ids = append(ids, r.Header.Get("webhook-id"))
		sigs = append(sigs, r.Header.Get("webhook-signature"))
		stamps = append(stamps, r.Header.Get("webhook-timestamp"))
		bodies = append(bodies, b[:n])
		first := len(ids) == 1
		mu.Unlock()
		if first {
			close(held)
			<-r.Context().Done() // the sender is killed: its connection closes
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer rc.Close()
	// the webhook, its secret sealed with the servers' key
	key := make([]byte, webhook.KeySize)
	_, _ = rand.Read(key)
	ring, err := webhook.NewKeyRing(key)
	if err != nil {
		t.Fatal(err)
	}
	_, secret, _ := webhook.NewSecret()
	var id int64
	if err := db.NewRaw(`INSERT INTO webhooks (account_id, url, secret) SELECT id, ?, '\x00' FROM accounts WHERE username = 'acme' RETURNING id`,
		rc.URL).Scan(ctx, &id); err != nil {
		t.Fatal(err)
	}
	sealed, _ := ring.Seal(secret, []byte(strconv.FormatInt(id, 10)))
	if _, err := db.ExecContext(ctx, `UPDATE webhooks SET secret = ? WHERE id = ?`, sealed, id); err != nil {
		t.Fatal(err)
	}
	env := []string{"FLEET_WEBHOOK_KEY=" + base64.StdEncoding.EncodeToString(key), "FLEET_WEBHOOK_ALLOW_HTTP=true",
		"FLEET_WEBHOOK_ALLOW_NETS=127.0.0.0/8", "FLEET_WEBHOOK_WORKERS=2"}
	bin := filepath.Join(t.TempDir(), "fleetapi")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/fleetapi/fleetapi/cmd/fleetapi").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var token string
	for _, d := range demodata.Tokens() {
		if d.Name == "acme-all" {
			token = d.Secret
		}
	}

	first := startKillable(t, bin, db.URL, env...)
	base := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	body := `{"readings":[{"imei":"` + imei + `","time":"` + base.Format(time.RFC3339) + `","speed":40},` +
		`{"imei":"` + imei + `","time":"` + base.Add(time.Second).Format(time.RFC3339) + `","speed":150}]}`
	req, _ := http.NewRequest(http.MethodPost, first.origin+"/api/v2/readings", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("readings: %v %v", resp, err)
	}
	_ = resp.Body.Close()
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatalf("no delivery reached the receiver\n%s", first.logs.String())
	}
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-first.exited

	second := startKillable(t, bin, db.URL, env...)
	deadline := time.Now().Add(60 * time.Second)
	for {
		var pending int
		if err := db.NewRaw(`SELECT count(*) FROM webhook_deliveries WHERE webhook_id = ? AND state <> 'succeeded'`, id).Scan(ctx, &pending); err != nil {
			t.Fatal(err)
		}
		if pending == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d deliveries not sent after the restart\n%s", pending, second.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	// the rules that fired (the demo's and this test's) queued several
	// deliveries; the one held when the sender died came again, same id
	last := -1
	for i := 1; i < len(ids); i++ {
		if ids[i] == ids[0] {
			last = i
		}
	}
	if last < 0 || ids[0] == "" {
		t.Fatalf("webhook-ids %v: the held delivery was not sent again with its id", ids)
	}
	unix, _ := strconv.ParseInt(stamps[last], 10, 64)
	if want := webhook.Sign(ids[last], time.Unix(unix, 0), bodies[last], secret); sigs[last] != want {
		t.Fatalf("signature %q, want %q", sigs[last], want)
	}
	var attempts, deliveries int
	if err := db.NewRaw(`SELECT (SELECT count(*) FROM webhook_attempts), (SELECT count(*) FROM webhook_deliveries)`).Scan(ctx, &attempts, &deliveries); err != nil {
		t.Fatal(err)
	}
	// a second request in flight when the sender died may come twice
	// too (at least once), but each delivery is recorded once
	if attempts != deliveries || len(ids) < deliveries+1 {
		t.Fatalf("%d attempts recorded, %d requests, for %d deliveries: want one attempt each (the killed one never committed) and a request more", attempts, len(ids), deliveries)
	}
}
