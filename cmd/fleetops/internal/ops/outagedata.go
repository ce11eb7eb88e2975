package ops

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/storage"
)

// checkData compares the creates with the passengers table.
func (o *outage) checkData(ctx context.Context, c *checks, pg *cluster) error {
	e := o.e
	created, retried, abandoned := splitKeys(o.keys)
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
		if res.ok(http.StatusCreated) {
			st.created, st.id = true, passengerID(res.body)
		}
	}
	// Every key created during or around the outage is sent once more:
	// the replay must answer the same passenger and write nothing.
	replayed, sameID := 0, 0
	for _, k := range retried {
		res := o.post(ctx, k, o.keys[k].body)
		if res.ok(http.StatusCreated) {
			replayed++
			if passengerID(res.body) == o.keys[k].id {
				sameID++
			}
		}
	}
	db := storage.Open(pg.server.URL, storage.Options{MaxOpenConns: 1})
	defer db.Close()
	// The API stores assign ids upper-cased; the keys are lower case.
	stored, err := storedPassengers(ctx, db, "passenger_assign_id", strings.ToUpper("outage-"+o.runID+"-"))
	if err != nil {
		return fmt.Errorf("read passengers: %w", err)
	}
	byKey := make(map[string]storedRows, len(stored))
	for id, rows := range stored {
		byKey[strings.ToLower(id)] = rows
	}
	var pending int
	if err := db.NewRaw(`SELECT count(*) FROM idempotency_keys WHERE key LIKE ? AND status <> 201`, "outage-"+o.runID+"-%").Scan(ctx, &pending); err != nil {
		return fmt.Errorf("read idempotency_keys: %w", err)
	}
	t := tallyRows(o.keys, byKey)
	e.printf("  rows: %d keys with exactly one passenger row; %d created keys without a row; %d keys with more than one row; %d rows of unknown keys\n",
		t.once, t.missing, t.dup, t.strays)
	e.printf("  replays of the %d keys that needed retries: %d answered 201 with the same passenger_id (%d)\n", len(retried), replayed, sameID)
	c.expect(t.exactlyOnce(len(o.keys)), "every create is stored exactly once (%d of %d keys)", t.once, len(o.keys))
	c.expect(t.wrongID == 0, "every row is the passenger its 201 answered (%d differ)", t.wrongID)
	c.expect(replayed == len(retried) && sameID == len(retried), "a retried key replays its first answer and adds no row")
	c.expect(pending == 0, "no idempotency key is left half-written (%d without a stored 201)", pending)
	return c.err()
}

// splitKeys sorts the creates' keys: created (retried ones included),
// created after more than one attempt, and not created.
func splitKeys(keys map[string]*keyState) (created, retried, abandoned []string) {
	for k, st := range keys {
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
	slices.Sort(created)
	slices.Sort(retried)
	slices.Sort(abandoned)
	return created, retried, abandoned
}

// storedPassengers reads the passengers whose column col
// (passenger_assign_id, passenger_name) starts with prefix, grouped by
// that column: its value → the rows stored for it.
func storedPassengers(ctx context.Context, db bun.IDB, col, prefix string) (map[string]storedRows, error) {
	var rows []struct {
		Value string `bun:"value"`
		N     int    `bun:"n"`
		ID    int64  `bun:"id"`
	}
	err := db.NewRaw(`SELECT ? AS value, count(*) AS n, min(passenger_id) AS id FROM passengers
		WHERE ? LIKE ? GROUP BY 1`, bun.Ident(col), bun.Ident(col), prefix+"%").Scan(ctx, &rows)
	out := make(map[string]storedRows, len(rows))
	for _, r := range rows {
		out[r.Value] = storedRows{r.N, r.ID}
	}
	return out, err
}

// storedRows are the passenger rows stored for one key: how many, and the
// smallest passenger_id.
type storedRows struct {
	n  int
	id int64
}

// rowTally compares the creates with the rows stored for their keys.
type rowTally struct {
	// once counts created keys with exactly one row; wrongID those of them
	// whose row is not the passenger the 201 answered.
	once, wrongID int
	// missing counts created keys without a row, dup keys with more than
	// one row, strays rows of keys the run never sent.
	missing, dup, strays int
}

// exactlyOnce reports whether each of keys creates is stored once and
// nothing else is.
func (t rowTally) exactlyOnce(keys int) bool {
	return t.once == keys && t.missing == 0 && t.dup == 0 && t.strays == 0
}

// tallyRows compares keys (what the run created) with byKey (the rows
// stored, by lower-case key).
func tallyRows(keys map[string]*keyState, byKey map[string]storedRows) rowTally {
	var t rowTally
	for k, st := range keys {
		got := byKey[k]
		switch {
		case got.n > 1:
			t.dup++
		case st.created && got.n == 1:
			t.once++
			if got.id != st.id {
				t.wrongID++
			}
		case st.created && got.n == 0:
			t.missing++
		}
	}
	for k := range byKey {
		if keys[k] == nil {
			t.strays++
		}
	}
	return t
}
