package api_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/fleetapi/fleetapi/api"
)

// TestWriteOnAccountErasedMeanwhile (issue 34 item 9): a write whose
// account is erased while it waits for that account's lock answers as a
// write on an erased account does, with or without an Idempotency-Key:
// 404 NOT_FOUND for a management write whose target (or the account a
// target belongs to) is gone, 401 INVALID_TOKEN for POST /passengers,
// whose account is the caller's own (its token went with it); never 400
// VALIDATION_FAILED (a foreign key's refusal) nor a 5xx; and it writes
// nothing. Each case holds the account's row FOR UPDATE as an erase does,
// sends the write, waits until the write waits for that lock
// (pg_stat_activity), deletes the account and commits.
func TestWriteOnAccountErasedMeanwhile(t *testing.T) {
	a := newTestAPIWith(t, func(c *api.Config) { c.RateLimit = 1_000_000 })
	srv, pool := pairServer(t, a, "erased-target")
	defer closePairServers(t, a, []string{"erased-target"}, pool)
	mID := a.accountID(t, "fleetco")
	type target int
	const (
		user target = iota
		sub
		other
	)
	cases := []struct {
		name   string
		erased target
		write  func(w *lockWorld) response
		status int
		code   string
	}{
		{"POST /accounts under it", user, func(w *lockWorld) response {
			return w.keyedSend(srv, "POST", "/api/v2/accounts", w.m, fmt.Sprintf(`{"username":"lk%d-new","type":"subaccount","manager_id":%d}`, w.n, w.u))
		}, 404, api.CodeNotFound},
		{"POST /accounts under its own account", user, func(w *lockWorld) response {
			return w.keyedSend(srv, "POST", "/api/v2/accounts", w.tU, fmt.Sprintf(`{"username":"lk%d-new","type":"subaccount","manager_id":%d}`, w.n, w.u))
		}, 404, api.CodeNotFound},
		{"POST /objects for it", user, func(w *lockWorld) response {
			return w.keyedSend(srv, "POST", "/api/v2/objects", w.m, fmt.Sprintf(`{"imei":"lk%d-new","account_id":%d}`, w.n, w.u))
		}, 404, api.CodeNotFound},
		{"POST /objects for its own account", user, func(w *lockWorld) response {
			return w.keyedSend(srv, "POST", "/api/v2/objects", w.tU, fmt.Sprintf(`{"imei":"lk%d-new","account_id":%d}`, w.n, w.u))
		}, 404, api.CodeNotFound},
		{"POST /tokens for it", user, func(w *lockWorld) response {
			return w.keyedSend(srv, "POST", "/api/v2/tokens", w.m, fmt.Sprintf(`{"account_id":%d,"name":"new","permissions":["GET /me"]}`, w.u))
		}, 404, api.CodeNotFound},
		{"POST /tokens for its own account", user, func(w *lockWorld) response {
			return w.keyedSend(srv, "POST", "/api/v2/tokens", w.tU, `{"name":"new","permissions":["GET /me"]}`)
		}, 404, api.CodeNotFound},
		{"POST /passengers of its own account", user, func(w *lockWorld) response {
			return w.keyedSend(srv, "POST", "/api/v2/passengers", w.tU, `{"passenger_name":"new"}`)
		}, 401, api.CodeInvalidToken},
		{"PATCH /accounts (its rate limit and quotas)", user, func(w *lockWorld) response {
			return srv.send("PATCH", fmt.Sprint("/api/v2/accounts/", w.u), w.m, `{"rate_limit":1000,"quotas":{"devices":5}}`)
		}, 404, api.CodeNotFound},
		{"PUT /accounts/{id}/objects (the subaccount)", sub, func(w *lockWorld) response {
			return srv.send("PUT", fmt.Sprintf("/api/v2/accounts/%d/objects", w.s), w.tU, fmt.Sprintf(`{"imei":[%q]}`, w.imei2))
		}, 404, api.CodeNotFound},
		{"PATCH /objects/{id} (to it)", other, func(w *lockWorld) response {
			return srv.send("PATCH", fmt.Sprint("/api/v2/objects/", w.d1), w.m, fmt.Sprintf(`{"account_id":%d}`, w.v))
		}, 404, api.CodeNotFound},
		{"PATCH /objects/{id} (from it)", user, func(w *lockWorld) response {
			return srv.send("PATCH", fmt.Sprint("/api/v2/objects/", w.d1), w.m, fmt.Sprintf(`{"account_id":%d}`, w.v))
		}, 404, api.CodeNotFound},
		{"DELETE /tokens/{id} (its token)", user, func(w *lockWorld) response {
			return srv.send("DELETE", fmt.Sprint("/api/v2/tokens/", w.x), w.m, "")
		}, 404, api.CodeNotFound},
		{"DELETE /accounts/{id} (it)", sub, func(w *lockWorld) response {
			return srv.send("DELETE", fmt.Sprint("/api/v2/accounts/", w.s), w.tU, "")
		}, 404, api.CodeNotFound},
	}
	for _, c := range cases {
		for _, keyed := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/keyed=%v", c.name, keyed), func(t *testing.T) {
				w, err := newLockWorld(a, mID, keyed, false, [2]*testAPI{srv, srv})
				if err != nil {
					t.Fatal(err)
				}
				erased := map[target][]int64{user: {w.s, w.u}, sub: {w.s}, other: {w.v}}[c.erased]
				before := rowCount(t, a)
				res := eraseWhileWaiting(t, a, "erased-target", erased, func() response { return c.write(w) })
				if res.status != c.status || res.errorCode(t) != c.code {
					t.Fatalf("%d %s, want %d %s", res.status, res.raw, c.status, c.code)
				}
				if after := rowCount(t, a); after != before-len(erased) {
					t.Errorf("%d rows of accounts, objects, tokens, passengers, grants, keys and audit events, want %d",
						after, before-len(erased))
				}
			})
		}
	}
}

// keyedSend sends a create with, in a keyed world, an Idempotency-Key.
func (w *lockWorld) keyedSend(srv *testAPI, method, path, token, body string) response {
	if w.keyed {
		return srv.send(method, path, token, body, "Idempotency-Key", fmt.Sprintf("lk%d-erased", w.n))
	}
	return srv.send(method, path, token, body)
}

// rowCount counts the rows a write could add (the erased accounts' own
// rows are counted as accounts only: their tokens, grants and devices
// are deleted with them by eraseWhileWaiting's cascade of deletes, so it
// counts rows not cascaded).
func rowCount(t *testing.T, a *testAPI) int {
	t.Helper()
	var n int
	if err := a.db.NewRaw(`SELECT (SELECT count(*) FROM accounts) + (SELECT count(*) FROM objects WHERE imei LIKE '%-new')
		+ (SELECT count(*) FROM tokens WHERE name = 'new') + (SELECT count(*) FROM passengers)
		+ (SELECT count(*) FROM idempotency_keys) + (SELECT count(*) FROM audit_events)`).Scan(context.Background(), &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// eraseWhileWaiting locks the accounts ids FOR UPDATE in a transaction,
// as an erase does, sends the write, waits until a backend of the server's
// pool (application name app) waits for a lock, deletes the accounts (the
// last id first, with their tokens, grants and devices), commits and
// returns the write's answer.
func eraseWhileWaiting(t *testing.T, a *testAPI, app string, ids []int64, write func() response) response {
	t.Helper()
	ctx := context.Background()
	tx, err := a.db.BeginTx(ctx, &sql.TxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	if _, err := tx.NewRaw("SELECT id FROM accounts WHERE id = ANY(?) ORDER BY type, id FOR UPDATE", pgdialect.Array(ids)).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	answer := make(chan response, 1)
	go func() { answer <- write() }()
	for waiting := false; !waiting; {
		select {
		case res := <-answer:
			t.Fatalf("the write answered before the erase: %d %s", res.status, res.raw)
		default:
		}
		if err := a.db.NewRaw(`SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE application_name = ? AND wait_event_type = 'Lock')`, app).
			Scan(ctx, &waiting); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
	eraseIn(t, tx, ids)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return <-answer
}

// eraseIn deletes the accounts ids and what references them, inside tx.
func eraseIn(t *testing.T, tx bun.Tx, ids []int64) {
	t.Helper()
	for _, q := range []string{
		"DELETE FROM object_grants WHERE subaccount_id = ANY(?0) OR imei IN (SELECT imei FROM objects WHERE account_id = ANY(?0))",
		"DELETE FROM tokens WHERE account_id = ANY(?0)",
		// the lock world's event rule, service record and report (docs/design.md §15)
		"DELETE FROM events WHERE account_id = ANY(?0)",
		"DELETE FROM services WHERE account_id = ANY(?0)",
		"DELETE FROM reports WHERE account_id = ANY(?0)",
		"DELETE FROM objects WHERE account_id = ANY(?0)",
		"DELETE FROM accounts WHERE id = ANY(?0)",
	} {
		if _, err := tx.NewRaw(q, pgdialect.Array(ids)).Exec(context.Background()); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}
