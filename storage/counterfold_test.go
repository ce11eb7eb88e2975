package storage_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/demodata"
	"github.com/fleetapi/fleetapi/storage/storagetest"
)

// counterState is, per (resource, account), the counters' rows, the sum
// of n and the sum of changes.
type counterState map[string][3]int64

func readCounterState(t *testing.T, ctx context.Context, db *storagetest.DB) counterState {
	t.Helper()
	var rows []struct {
		Resource  string
		AccountID int64
		Rows      int64
		N         int64
		Changes   int64
	}
	if err := db.DB.NewRaw(`SELECT resource, account_id, count(*) AS rows, sum(n)::bigint AS n, sum(changes)::bigint AS changes
		FROM account_row_counts GROUP BY 1, 2`).Scan(ctx, &rows); err != nil {
		t.Fatal(err)
	}
	out := counterState{}
	for _, r := range rows {
		out[fmt.Sprintf("%s/%d", r.Resource, r.AccountID)] = [3]int64{r.Rows, r.N, r.Changes}
	}
	return out
}

// TestFoldCounters: passengers created on eight connections at once
// spread one account's counter over several stripes; folding them, with
// creates still running, never fails a create and never changes a sum:
// afterwards every account's counter equals its rows, a last fold leaves
// one row per account and resource with the same sums of n and changes,
// and a searched list's total (kept before the folds) still equals a
// fresh count after them.
func TestFoldCounters(t *testing.T) {
	ctx := context.Background()
	_, db := newStore(t)
	importJSON(t, db, demodata.File())
	s := storage.NewStore(db.DB)
	e := newEngine(t)
	acme := principalOf(t, s, "acme").Account
	scope := scopeOf(t, e, s, "acme", "passengers")
	services := scopeOf(t, e, s, "acme", "services")
	search := storage.ListRequest{Page: 1, PerPage: 2, Search: "o"}
	create := func(workers, each int, tag string) {
		t.Helper()
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					if _, _, err := s.CreatePassenger(ctx, scope, acme.ID, storage.Passenger{PassengerName: fmt.Sprintf("%s fold %d-%d", tag, w, i)}, nil); err != nil {
						t.Errorf("create: %v", err)
						return
					}
				}
			}()
		}
		wg.Wait()
	}
	create(8, 10, "before")
	key := fmt.Sprintf("passengers/%d", acme.ID)
	if rows := readCounterState(t, ctx, db)[key][0]; rows < 2 {
		t.Fatalf("acme's passengers counter has %d rows: the creates did not spread it", rows)
	}
	kept, err := storage.List(ctx, s, services, storage.Services, search)
	if err != nil {
		t.Fatal(err)
	}

	// Folds while creates run.
	done := make(chan struct{})
	var folded int64
	go func() {
		defer close(done)
		for range 20 {
			n, err := s.FoldCounters(ctx)
			if err != nil {
				t.Errorf("fold: %v", err)
				return
			}
			folded += n
		}
	}()
	create(8, 10, "during")
	<-done
	if folded == 0 {
		t.Error("no stripe row folded")
	}

	before := readCounterState(t, ctx, db)
	if _, err := s.FoldCounters(ctx); err != nil {
		t.Fatal(err)
	}
	after := readCounterState(t, ctx, db)
	if len(after) != len(before) {
		t.Fatalf("%d (resource, account) counters after the fold, %d before", len(after), len(before))
	}
	for k, b := range before {
		a := after[k]
		if a[0] != 1 || a[1] != b[1] || a[2] != b[2] {
			t.Errorf("%s: rows, n, changes %v after the fold, %v before", k, a, b)
		}
	}
	var rows int64
	if err := db.DB.NewRaw(`SELECT count(*) FROM passengers WHERE account_id = ?`, acme.ID).Scan(ctx, &rows); err != nil {
		t.Fatal(err)
	}
	if after[key][1] != rows {
		t.Errorf("acme's passengers counter %d, rows %d", after[key][1], rows)
	}
	page, err := storage.List(ctx, s, services, storage.Services, search)
	if err != nil {
		t.Fatal(err)
	}
	var fresh int64
	if err := db.DB.NewRaw(`SELECT count(*) FROM services WHERE account_id = ? AND (name ILIKE '%o%' OR imei ILIKE '%o%')`, acme.ID).Scan(ctx, &fresh); err != nil {
		t.Fatal(err)
	}
	if page.Total != fresh || kept.Total != fresh || fresh < 3 {
		t.Errorf("searched total %d after the folds, %d before, fresh count %d", page.Total, kept.Total, fresh)
	}
}
