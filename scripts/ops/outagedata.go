package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/fleetapi/fleetapi/storage"
)

// checkData compares the creates with the passengers table.
func (o *outage) checkData(ctx context.Context, c *checks, pg *cluster) error {
	e := o.e
	var created, retried, abandoned []string
	for k, st := range o.keys {
		switch {
		case st.created && st.createdOnTry > 1:
			retried = append(retried, k)
			created = append(created, k)
		case st.created:
			created = append(created, k)
		default:
			abandoned = append(abandoned, k)
		}
	}
	failReasons := map[string]int{}
	for _, st := range o.keys {
		for r, n := range st.failures {
			failReasons[r] += n
		}
	}
	e.printf("\ndata: %d passenger creates with an Idempotency-Key; %d created at the first attempt, %d after retries, %d not created when the run ended\n",
		len(o.keys), len(created)-len(retried), len(retried), len(abandoned))
	e.printf("  failed attempts by cause: %v\n", failReasons)
	// The creates the run gave up on are retried now that the database is back.
	for _, k := range abandoned {
		st := o.keys[k]
		res := o.post(ctx, k, st.body)
		if res.err == nil && res.status == http.StatusCreated {
			st.created, st.id = true, passengerID(res.body)
		}
	}
	// Every key created during or around the outage is sent once more:
	// the replay must answer the same passenger and write nothing.
	replayed, sameID := 0, 0
	for _, k := range retried {
		res := o.post(ctx, k, o.keys[k].body)
		if res.err == nil && res.status == http.StatusCreated {
			replayed++
			if passengerID(res.body) == o.keys[k].id {
				sameID++
			}
		}
	}
	db := storage.Open(pg.server.URL, storage.Options{MaxOpenConns: 1})
	defer db.Close()
	var rows []struct {
		AssignID string `bun:"passenger_assign_id"`
		N        int    `bun:"n"`
		ID       int64  `bun:"id"`
	}
	prefix := strings.ToUpper("outage-" + o.runID + "-")
	if err := db.NewRaw(`SELECT passenger_assign_id, count(*) AS n, min(passenger_id) AS id FROM passengers
		WHERE passenger_assign_id LIKE ? GROUP BY passenger_assign_id`, prefix+"%").Scan(ctx, &rows); err != nil {
		return fmt.Errorf("read passengers: %w", err)
	}
	byKey := map[string]struct {
		n  int
		id int64
	}{}
	for _, r := range rows {
		byKey[strings.ToLower(r.AssignID)] = struct {
			n  int
			id int64
		}{r.N, r.ID}
	}
	var pending int
	if err := db.NewRaw(`SELECT count(*) FROM idempotency_keys WHERE key LIKE ? AND status <> 201`, "outage-"+o.runID+"-%").Scan(ctx, &pending); err != nil {
		return fmt.Errorf("read idempotency_keys: %w", err)
	}
	once, wrongID, missing, dup := 0, 0, 0, 0
	for k, st := range o.keys {
		got := byKey[k]
		switch {
		case st.created && got.n == 1:
			once++
			if got.id != st.id {
				wrongID++
			}
		case st.created && got.n == 0:
			missing++
		case got.n > 1:
			dup++
		}
	}
	strays := 0
	for k := range byKey {
		if o.keys[k] == nil {
			strays++
		}
	}
	e.printf("  rows: %d keys with exactly one passenger row; %d created keys without a row; %d keys with more than one row; %d rows of unknown keys\n",
		once, missing, dup, strays)
	e.printf("  replays of the %d keys that needed retries: %d answered 201 with the same passenger_id (%d)\n", len(retried), replayed, sameID)
	c.expect(once == len(o.keys) && missing == 0 && dup == 0 && strays == 0,
		"every create is stored exactly once (%d of %d keys)", once, len(o.keys))
	c.expect(wrongID == 0, "every row is the passenger its 201 answered (%d differ)", wrongID)
	c.expect(replayed == len(retried) && sameID == len(retried), "a retried key replays its first answer and adds no row")
	c.expect(pending == 0, "no idempotency key is left half-written (%d without a stored 201)", pending)
	return c.err()
}
