package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/fleetapi/fleetapi/api"
)

// TestEraseRacesCreatesOnEveryLevel (issue 39 item 3): the admin erases a
// manager while, through two servers, creates run on every level of its
// subtree: users under the manager, subaccounts under its users, devices
// and tokens of its users, tokens of their subaccounts, passengers (a
// user's and a subaccount's, its parent's), grants to a subaccount; with
// and without an Idempotency-Key. The erase locks each level below the
// account before reading the next (storage's subtree), so every erase
// answers 204 (never a foreign key's refusal, never a 5xx), every create
// answers 201 or the answer of a caller or target erased meanwhile (401,
// 404), PostgreSQL detects no deadlock, and nothing is left of the
// subtree, rows created during the erase included.
func TestEraseRacesCreatesOnEveryLevel(t *testing.T) {
	a := newTestAPIWith(t, func(c *api.Config) { c.RateLimit = 1_000_000 })
	names := []string{"erase-a", "erase-b"}
	var servers [2]*testAPI
	var pools [2]*bun.DB
	for i, name := range names {
		servers[i], pools[i] = pairServer(t, a, name)
	}
	admin, adminID := demoToken(t, "admin-all"), a.accountID(t, "admin")
	before := deadlocks(t, a)
	for round := range 6 {
		eraseRound(t, a, servers, admin, adminID, round)
	}
	closePairServers(t, a, names, pools[0], pools[1])
	if n := deadlocks(t, a) - before; n != 0 {
		t.Errorf("PostgreSQL detected %d deadlocks in the test database", n)
	}
}

// eraseRound builds a manager's subtree, races creates on every level of
// it against its erase, and checks the outcome.
func eraseRound(t *testing.T, a *testAPI, servers [2]*testAPI, admin string, adminID int64, round int) {
	ctx := context.Background()
	p := fmt.Sprintf("er%d-%d", round, worldSeq.Add(1))
	keyed := round%2 == 1
	var r, u, s int64
	var tR, tU, tS string
	err := a.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var err error
		if r, err = insertAccount(ctx, tx, p+"-r", "manager", adminID); err != nil {
			return err
		}
		if u, err = insertAccount(ctx, tx, p+"-u", "user", r); err != nil {
			return err
		}
		if s, err = insertAccount(ctx, tx, p+"-s", "subaccount", u); err != nil {
			return err
		}
		var rTok, uTok int64
		if rTok, tR, err = insertToken(ctx, tx, r, "r", nil); err != nil {
			return err
		}
		if uTok, tU, err = insertToken(ctx, tx, u, "u", &rTok); err != nil {
			return err
		}
		if _, tS, err = insertToken(ctx, tx, s, "s", &uTok); err != nil {
			return err
		}
		_, err = tx.NewRaw(`INSERT INTO objects (imei, account_id) VALUES (?, ?), (?, ?)`, p+"-g1", u, p+"-g2", u).Exec(ctx)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// Each create is one level of the subtree; i numbers its attempts.
	type create struct {
		what string
		do   func(srv *testAPI, i int) response
	}
	isAccount := func(c create) bool {
		return strings.HasPrefix(c.what, "a user") || strings.HasPrefix(c.what, "a subaccount")
	}
	post := func(srv *testAPI, path, token, body string, i int, what string) response {
		var h []string
		if keyed {
			h = []string{"Idempotency-Key", fmt.Sprintf("%s-%s-%d", p, what, i)}
		}
		return srv.send(http.MethodPost, path, token, body, h...)
	}
	creates := []create{
		{"a user under the manager", func(srv *testAPI, i int) response {
			return post(srv, "/api/v2/accounts", tR, fmt.Sprintf(`{"username":"%s-u%d","type":"user","manager_id":%d}`, p, i, r), i, "user")
		}},
		{"a subaccount under a user, by the manager", func(srv *testAPI, i int) response {
			return post(srv, "/api/v2/accounts", tR, fmt.Sprintf(`{"username":"%s-ms%d","type":"subaccount","manager_id":%d}`, p, i, u), i, "msub")
		}},
		{"a subaccount under a user, by the user", func(srv *testAPI, i int) response {
			return post(srv, "/api/v2/accounts", tU, fmt.Sprintf(`{"username":"%s-us%d","type":"subaccount","manager_id":%d}`, p, i, u), i, "usub")
		}},
		{"a device of a user, by the manager", func(srv *testAPI, i int) response {
			return post(srv, "/api/v2/objects", tR, fmt.Sprintf(`{"imei":"%s-d%d","account_id":%d}`, p, i, u), i, "device")
		}},
		{"a token of a user, by the manager", func(srv *testAPI, i int) response {
			return post(srv, "/api/v2/tokens", tR, fmt.Sprintf(`{"account_id":%d,"name":"ut%d","permissions":["GET /me"]}`, u, i), i, "utoken")
		}},
		{"a token of a subaccount, by its user", func(srv *testAPI, i int) response {
			return post(srv, "/api/v2/tokens", tU, fmt.Sprintf(`{"account_id":%d,"name":"st%d","permissions":["GET /me"]}`, s, i), i, "stoken")
		}},
		{"a passenger of a user", func(srv *testAPI, i int) response {
			return post(srv, "/api/v2/passengers", tU, fmt.Sprintf(`{"passenger_name":"%s-up%d"}`, p, i), i, "upass")
		}},
		{"a passenger of a subaccount (its parent's)", func(srv *testAPI, i int) response {
			return post(srv, "/api/v2/passengers", tS, fmt.Sprintf(`{"passenger_name":"%s-sp%d"}`, p, i), i, "spass")
		}},
		{"grants to a subaccount", func(srv *testAPI, i int) response {
			imei := fmt.Sprintf(`["%s-g1","%s-g2"]`, p, p)
			if i%2 == 1 {
				imei = fmt.Sprintf(`["%s-g2"]`, p)
			}
			return srv.send(http.MethodPut, fmt.Sprintf("/api/v2/accounts/%d/objects", s), tU, `{"imei":`+imei+`}`)
		}},
	}
	var (
		mu       sync.Mutex
		created  []int64 // accounts created during the round
		problems []string
		wg       sync.WaitGroup
	)
	var erased atomic.Bool
	succeeded := make([]atomic.Int64, len(creates))
	ready := make(chan struct{}) // closed once every create has succeeded once
	var readyOnce sync.Once
	for k, c := range creates {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Creates go on until a while after the erase (bounded).
			for i, after := 0, 0; i < 200 && after < 4; i++ {
				if erased.Load() {
					after++
				}
				res := c.do(servers[i%2], i)
				switch {
				case res.status == http.StatusCreated || res.status == http.StatusOK:
					succeeded[k].Add(1)
					if d, ok := res.body["data"].(map[string]any); ok && isAccount(c) {
						mu.Lock()
						created = append(created, int64(d["id"].(float64)))
						mu.Unlock()
					}
				case res.status == http.StatusUnauthorized || res.status == http.StatusNotFound:
				default:
					mu.Lock()
					problems = append(problems, fmt.Sprintf("%s: %d %s", c.what, res.status, res.raw))
					mu.Unlock()
				}
				all := true
				for j := range succeeded {
					all = all && succeeded[j].Load() > 0
				}
				if all {
					readyOnce.Do(func() { close(ready) })
				}
			}
		}()
	}
	var eraseStatus int
	var eraseBody []byte
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-ready
		res := servers[round%2].send(http.MethodDelete, fmt.Sprint("/api/v2/accounts/", r), admin, "")
		eraseStatus, eraseBody = res.status, res.raw
		erased.Store(true)
	}()
	// A create that never succeeds leaves ready open: the creates end on
	// their bound, then the erase waits; the check below names the create.
	wg.Wait()
	if eraseStatus != http.StatusNoContent {
		t.Errorf("round %d: the erase answered %d %s", round, eraseStatus, eraseBody)
	}
	for _, pr := range problems {
		t.Errorf("round %d: %s", round, pr)
	}
	ids := append([]int64{r, u, s}, created...)
	var left int
	if err := a.db.NewRaw(`SELECT (SELECT count(*) FROM accounts WHERE id = ANY(?0) OR username LIKE ?1)
		+ (SELECT count(*) FROM objects WHERE account_id = ANY(?0) OR imei LIKE ?1)
		+ (SELECT count(*) FROM tokens WHERE account_id = ANY(?0))
		+ (SELECT count(*) FROM passengers WHERE account_id = ANY(?0) OR passenger_name LIKE ?1)
		+ (SELECT count(*) FROM object_grants WHERE subaccount_id = ANY(?0) OR imei LIKE ?1)
		+ (SELECT count(*) FROM idempotency_keys WHERE account_id = ANY(?0))
		+ (SELECT count(*) FROM account_row_counts WHERE account_id = ANY(?0))`,
		pgdialect.Array(ids), p+"-%").Scan(ctx, &left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Errorf("round %d: %d rows of the erased subtree left", round, left)
	}
	for k, c := range creates {
		if succeeded[k].Load() == 0 {
			t.Errorf("round %d: %s never succeeded: the race did not run", round, c.what)
		}
	}
}
