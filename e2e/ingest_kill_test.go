package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/storage/demodata"
	"github.com/fleetapi/fleetapi/storage/importfile"
	"github.com/fleetapi/fleetapi/storage/storagetest"
)

// killable is a `fleetapi serve` child process that the test may kill -9.
type killable struct {
	cmd    *exec.Cmd
	logs   *syncBuffer
	exited chan struct{} // closed when the process has exited
	err    error         // its exit, once exited is closed
	origin string
}

// startKillable runs bin serve on dbURL, with the variables env besides
// the test's own, and waits for its address.
func startKillable(t *testing.T, bin, dbURL string, env ...string) *killable {
	t.Helper()
	k := &killable{logs: &syncBuffer{}, exited: make(chan struct{})}
	k.cmd = exec.Command(bin, "serve", "--allow-demo-tokens")
	k.cmd.Env = append(cleanEnv(), "FLEET_DATABASE_URL="+dbURL, "FLEET_ADDR=127.0.0.1:0", "FLEET_DECISION_LOG=off", "FLEET_RATE_LIMIT=100000")
	k.cmd.Env = append(k.cmd.Env, env...)
	k.cmd.Stdout, k.cmd.Stderr = k.logs, k.logs
	if err := k.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { k.err = k.cmd.Wait(); close(k.exited) }()
	t.Cleanup(func() {
		_ = k.cmd.Process.Kill()
		<-k.exited
	})
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if m := listenRe.FindStringSubmatch(k.logs.String()); m != nil {
			k.origin = "http://" + m[1]
			return k
		}
		select {
		case <-k.exited:
			t.Fatalf("fleetapi serve exited: %v\n%s", k.err, k.logs.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("fleetapi serve did not start\n%s", k.logs.String())
	return nil
}

// TestIngestKilledMidStream: a gateway posts batches of readings that trip
// an overspeed rule again and again while the server is killed with
// SIGKILL mid-stream; it restarts, and the gateway re-posts every batch
// it has no 200 for. Every reading is stored once and every transition
// of the rule yields exactly one notification: evaluation happens in the
// batch's transaction (a killed batch left nothing), a re-posted batch's
// stored readings are duplicates (never evaluated again).
func TestIngestKilledMidStream(t *testing.T) {
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
	// 40 batches of 10 readings, one a second; the speed is above the
	// limit for 3 readings, then below for 4: a transition every 7.
	const batches, per = 40, 10
	base := time.Now().UTC().Add(-2 * time.Hour).Truncate(time.Second)
	speed := func(k int) int {
		if k%7 < 3 {
			return 150
		}
		return 40
	}
	body := func(b int) string {
		items := make([]string, per)
		for i := range per {
			k := b*per + i
			items[i] = fmt.Sprintf(`{"imei":%q,"time":%q,"speed":%d}`, imei, base.Add(time.Duration(k)*time.Second).Format(time.RFC3339), speed(k))
		}
		return `{"readings":[` + strings.Join(items, ",") + `]}`
	}
	transitions := 0
	for k := range batches * per {
		if speed(k) > 100 && (k == 0 || speed(k-1) <= 100) {
			transitions++
		}
	}
	client := &http.Client{Timeout: 10 * time.Second}
	post := func(origin string, b int) bool {
		req, _ := http.NewRequest(http.MethodPost, origin+"/api/v2/readings", strings.NewReader(body(b)))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		_, _ = io.ReadAll(resp.Body)
		return resp.StatusCode == http.StatusOK
	}

	srv := startKillable(t, bin, db.URL)
	acked := make([]bool, batches)
	var sent atomic.Int64
	stop := make(chan struct{})
	streamed := make(chan struct{})
	go func() {
		defer close(streamed)
		for b := range batches {
			select {
			case <-stop:
				return
			default:
			}
			acked[b] = post(srv.origin, b)
			sent.Add(1)
		}
	}()
	// Kill -9 once a third of the stream is through, whatever is in flight.
	deadline := time.Now().Add(2 * time.Minute)
	for sent.Load() < batches/3 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if err := srv.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-srv.exited
	close(stop)
	<-streamed
	// Restart; the gateway re-posts every batch without a 200, in order.
	srv = startKillable(t, bin, db.URL)
	lost := 0
	for b := range batches {
		if acked[b] {
			continue
		}
		lost++
		if !post(srv.origin, b) {
			t.Fatalf("batch %d after the restart: not accepted\n%s", b, srv.logs.String())
		}
	}
	if lost == 0 || lost == batches {
		t.Fatalf("%d batches unacknowledged: the kill did not land mid-stream", lost)
	}
	var positions, notes int
	if err := db.NewRaw("SELECT count(*) FROM positions WHERE imei = ?", imei).Scan(ctx, &positions); err != nil {
		t.Fatal(err)
	}
	if err := db.NewRaw(`SELECT count(*) FROM notifications n JOIN events e ON e.event_id = n.event_id
		WHERE n.imei = ? AND e.name = 'e2e fast'`, imei).Scan(ctx, &notes); err != nil {
		t.Fatal(err)
	}
	if positions != batches*per {
		t.Errorf("%d positions, want %d", positions, batches*per)
	}
	if notes != transitions {
		t.Errorf("%d notifications of the rule, want exactly %d (one per transition)", notes, transitions)
	}
}
