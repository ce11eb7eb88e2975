package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/pgserver"
)

// adminToken is the demo data's admin token (registers devices).
const adminToken = "flt_demoAdmin00000000000000000000000"

// TestPointInTimeRecovery takes a full and an incremental pgBackRest
// backup of the HA cluster's primary while fleetapi registers devices
// under load (two clients, POST /objects), picks a time between two
// registrations, restores the backups and the archived WAL to that time
// into a new data directory, and starts `fleetapi serve` on it: GET
// /objects lists exactly the devices answered 201 before that time, and
// none registered after (docs/design.md §13, docs/operations.md "Backups and
// point-in-time recovery").
func TestPointInTimeRecovery(t *testing.T) {
	ctx := context.Background()
	began := time.Now()
	step := func(what string) { t.Logf("pitr: %s at %.1f s", what, time.Since(began).Seconds()) }
	c := startHA(t, pgserver.HAOptions{Archive: true})
	step("cluster up with the demo data")
	base := serve(t, c.URL)
	db := storage.Open(c.URL, storage.Options{MaxOpenConns: 2})
	t.Cleanup(func() { db.Close() })
	var acme int64
	if err := db.NewRaw("SELECT id FROM accounts WHERE username = 'acme'").Scan(ctx, &acme); err != nil {
		t.Fatal(err)
	}

	// Load: two clients register devices until stopped; paused holds
	// them between two registrations.
	client := &http.Client{Timeout: 20 * time.Second}
	var (
		mu        sync.Mutex
		answered  []string // imeis answered 201, in order
		gate      sync.RWMutex
		stop      atomic.Bool
		wg        sync.WaitGroup
		seq       atomic.Int64
		failures  atomic.Int64
		lastError atomic.Value
	)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				gate.RLock()
				imei := fmt.Sprintf("PITR-%06d", seq.Add(1))
				status, body, err := postObject(ctx, client, base, imei, acme)
				if err == nil && status == http.StatusCreated {
					mu.Lock()
					answered = append(answered, imei)
					mu.Unlock()
				} else {
					failures.Add(1)
					lastError.Store(fmt.Sprintf("%d %v %s", status, err, body))
				}
				gate.RUnlock()
				time.Sleep(10 * time.Millisecond)
			}
		}()
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(answered) }
	waitRows := func(n int) {
		deadline := time.Now().Add(60 * time.Second)
		for count() < n && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitRows(20)
	step("full backup starts")
	if err := c.Backup(ctx, "full"); err != nil {
		t.Fatal(err)
	}
	step("full backup done")
	afterFull := count()
	waitRows(afterFull + 20)
	if err := c.Backup(ctx, "incr"); err != nil {
		t.Fatal(err)
	}
	step("incremental backup done")
	afterIncr := count()
	waitRows(afterIncr + 20)

	// The chosen time: both clients held between two registrations.
	gate.Lock()
	time.Sleep(300 * time.Millisecond)
	target := time.Now()
	mu.Lock()
	before := append([]string(nil), answered...)
	mu.Unlock()
	time.Sleep(300 * time.Millisecond)
	gate.Unlock()
	waitRows(len(before) + 20)
	stop.Store(true)
	wg.Wait()
	if n := failures.Load(); n > 0 {
		t.Fatalf("%d registrations failed under the backups (last: %v)", n, lastError.Load())
	}
	// The WAL past the chosen time reaches the repository (check switches
	// the WAL segment and waits until it is archived).
	if err := c.ArchiveCheck(ctx); err != nil {
		t.Fatal(err)
	}
	info, err := c.BackRestInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(info, `"type":"full"`) || !strings.Contains(info, `"type":"incr"`) {
		t.Fatalf("the repository lacks a full or an incremental backup: %s", info)
	}
	t.Logf("pitr: %d devices registered, %d before the chosen time; full backup after %d, incremental after %d",
		count(), len(before), afterFull, afterIncr)

	// In the cluster's folder: the postgres user must reach it (a test's
	// TempDir is root's alone), and it goes with the cluster.
	step("archive checked")
	restored, err := c.Restore(ctx, filepath.Join(c.Dir, "restored"), target)
	if err != nil {
		t.Fatal(err)
	}
	step("restored and promoted")
	t.Cleanup(func() { _ = restored.Stop() })
	rbase := serve(t, restored.URL)
	got := listObjects(t, client, rbase)
	step("listed from fleetapi on the restored database")
	sort.Strings(before)
	if strings.Join(got, ",") != strings.Join(before, ",") {
		t.Fatalf("the restored database serves %d devices, want the %d answered before %s:\n got %v\nwant %v",
			len(got), len(before), target.Format(time.RFC3339Nano), got, before)
	}
}

// postObject registers the device imei for the account acme with the admin
// token.
func postObject(ctx context.Context, client *http.Client, base, imei string, account int64) (int, []byte, error) {
	body, _ := json.Marshal(map[string]any{"imei": imei, "name": imei, "account_id": account})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v2/objects", bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, nil
}

// listObjects returns the imeis starting with PITR- that GET /objects
// lists to the admin, sorted.
func listObjects(t *testing.T, client *http.Client, base string) []string {
	t.Helper()
	var imeis []string
	for page := 1; ; page++ {
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/api/v2/objects?page=%d&per_page=500", base, page), nil)
		req.Header.Set("Authorization", "Bearer "+adminToken)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /objects on the restored database: %d %s", resp.StatusCode, b)
		}
		var env struct {
			Data []struct {
				IMEI string `json:"imei"`
			} `json:"data"`
		}
		if err := json.Unmarshal(b, &env); err != nil {
			t.Fatal(err)
		}
		for _, o := range env.Data {
			if strings.HasPrefix(o.IMEI, "PITR-") {
				imeis = append(imeis, o.IMEI)
			}
		}
		if len(env.Data) < 500 {
			break
		}
	}
	sort.Strings(imeis)
	return imeis
}
