package storage_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
)

// armedStore returns a Store over f's pool whose query hook runs the armed
// write once, just before the first statement match accepts.
func armedStore(f listFixture, match func(q string) bool) (*storage.Store, func(func()), func() bool) {
	var mu sync.Mutex
	var write func()
	s := storage.NewStore(f.db.WithQueryHook(beforeQuery(func(_ context.Context, q string) {
		mu.Lock()
		w := write
		if w != nil && match(q) {
			write = nil
		} else {
			w = nil
		}
		mu.Unlock()
		if w != nil {
			w()
		}
	})))
	arm := func(w func()) { mu.Lock(); write = w; mu.Unlock() }
	fired := func() bool { mu.Lock(); defer mu.Unlock(); return write == nil }
	return s, arm, fired
}

func samePage(a, b storage.Page[storage.Service]) bool {
	return slices.Equal(idsOf(a.Items), idsOf(b.Items)) && a.Total == b.Total && (a.Next == nil) == (b.Next == nil)
}

func showPage(p storage.Page[storage.Service]) string {
	return fmt.Sprintf("%v of %d (next %v)", idsOf(p.Items), p.Total, p.Next != nil)
}

func execOn(t *testing.T, f listFixture, q string, args ...any) {
	t.Helper()
	if _, err := f.db.ExecContext(context.Background(), q, args...); err != nil {
		t.Errorf("%s: %v", q, err)
	}
}

// addNamedServices adds n services named prefix || ' ' || g to account id.
func addNamedServices(t *testing.T, f listFixture, id int64, prefix string, n int) {
	t.Helper()
	execOn(t, f, `INSERT INTO services (account_id, imei, name)
		SELECT ?, (SELECT imei FROM objects WHERE account_id = ? ORDER BY imei LIMIT 1), ? || ' ' || g
		FROM generate_series(1, ?) AS g`, id, id, prefix, n)
}

// TestKeptIDsEachKindOfWrite: writes committed just before the page
// statement read by key (peek path: no statement before it), for the
// admin and a manager, pages 1 and 2, both directions: the page is the
// fresh one after the write.
func TestKeptIDsEachKindOfWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newListFixture(t)
	addServicesOf(t, f, "acme", 300)
	s, arm, fired := armedStore(f, func(q string) bool {
		return strings.Contains(q, `= ANY(`) && strings.Contains(q, `FROM "services" AS "s"`)
	})
	ids := map[string]int64{}
	for _, u := range []string{"northwind", "tailspin", "contoso", "globex", "umbrella", "fleetco", "soylent", "acme"} {
		ids[u] = f.accountIDs(t, u)[0]
	}
	var cur string // the subtest's term
	objOf := func(acct int64) string {
		for u, id := range ids {
			if id == acct {
				return "K" + cur + u
			}
		}
		t.Fatalf("no object of %d", acct)
		return ""
	}
	term := 0
	type write struct {
		name string
		do   func(search string)
	}
	writes := []write{
		{"account moved into the tree", func(search string) {
			execOn(t, f, `UPDATE accounts SET manager_id = ? WHERE id = ?`, ids["northwind"], ids["globex"])
		}},
		{"account moved out of the tree", func(search string) {
			execOn(t, f, `UPDATE accounts SET manager_id = ? WHERE id = ?`, ids["fleetco"], ids["contoso"])
		}},
		{"service moved between trees in one tx", func(search string) {
			execOn(t, f, `UPDATE services SET account_id = ?, imei = ?, name = name || ' moved' WHERE service_id = (SELECT min(service_id) FROM services WHERE account_id = ? AND name LIKE ? || '%')`,
				ids["tailspin"], objOf(ids["tailspin"]), ids["umbrella"], search)
		}},
		{"two accounts, one tx: one in, one out", func(search string) {
			tx, err := f.db.BeginTx(ctx, nil)
			if err != nil {
				t.Error(err)
				return
			}
			defer tx.Rollback() //nolint:errcheck
			if _, err := tx.ExecContext(ctx, `UPDATE services SET name = ? || ' in' WHERE service_id = (SELECT min(service_id) FROM services WHERE account_id = ? AND name LIKE 'Bulk%')`, search, ids["acme"]); err != nil {
				t.Error(err)
			}
			if _, err := tx.ExecContext(ctx, `UPDATE services SET name = 'out' WHERE service_id = (SELECT max(service_id) FROM services WHERE account_id = ? AND name LIKE ? || '%')`, ids["tailspin"], search); err != nil {
				t.Error(err)
			}
			if err := tx.Commit(); err != nil {
				t.Error(err)
			}
		}},
		{"low explicit id inserted", func(search string) {
			execOn(t, f, `INSERT INTO services (service_id, account_id, imei, name) VALUES ((SELECT -1 - count(*) FROM services WHERE service_id < 0), ?, ?, ? || ' low')`,
				ids["tailspin"], objOf(ids["tailspin"]), search)
		}},
		{"service id changed", func(search string) {
			execOn(t, f, `UPDATE services SET service_id = service_id + 5000000 WHERE service_id = (SELECT min(service_id) FROM services WHERE name LIKE ? || '%')`, search)
		}},
		{"object imei renamed (cascade)", func(search string) {
			// the search is on the imei: a device's imei takes the term
			imei := objOf(ids["contoso"])
			execOn(t, f, `UPDATE objects SET imei = ? WHERE imei = ?`, "gone"+search[2:]+"contoso", imei)
		}},
		{"object moved to another account (cascade)", func(search string) {
			execOn(t, f, `UPDATE objects SET account_id = ? WHERE imei = ?`, ids["soylent"], objOf(ids["tailspin"]))
		}},
		{"account renumbered", func(search string) {
			// a fresh account in the tree with no rows, renumbered: nothing changes, the version moves
			execOn(t, f, `INSERT INTO accounts (username, type, active, manager_id) VALUES (?, 'user', true, ?)`, "kept-"+search, ids["northwind"])
			execOn(t, f, `UPDATE accounts SET id = id + 100000 WHERE username = ?`, "kept-"+search)
		}},
	}
	for _, w := range writes {
		for _, who := range []string{"admin", "northwind"} {
			for _, desc := range []bool{false, true} {
				for _, page := range []int{1, 2} {
					t.Run(fmt.Sprintf("%s/%s/desc=%v/page=%d", w.name, who, desc, page), func(t *testing.T) {
						term++
						search := fmt.Sprintf("Aq%03dz", term)
						cur = search
						for _, u := range []string{"tailspin", "contoso", "globex", "umbrella"} {
							imei := newDevice(t, ctx, f.db, ids[u], "K"+search+u)
							execOn(t, f, `INSERT INTO services (account_id, imei, name) SELECT ?, ?, ? || ' ' || g FROM generate_series(1, 3) AS g`, ids[u], imei, search)
							execOn(t, f, `INSERT INTO services (account_id, imei, name) VALUES (?, ?, 'unrelated')`, ids[u], imei)
						}
						scope := f.scope(t, who, "services")
						req := storage.ListRequest{Page: page, PerPage: 2, Search: search, Desc: desc}
						if _, err := storage.List(ctx, s, scope, storage.Services, req); err != nil {
							t.Fatal(err)
						}
						arm(func() { w.do(search) })
						got, err := storage.List(ctx, s, scope, storage.Services, req)
						if err != nil {
							t.Fatal(err)
						}
						if !fired() {
							t.Fatal("no page statement read by key ran: the write never happened")
						}
						want := freshPage(t, ctx, f.db, scope, req)
						if !samePage(got, want) {
							t.Errorf("got %s, want %s", showPage(got), showPage(want))
						}
						// put the tree back
						execOn(t, f, `UPDATE accounts SET manager_id = ? WHERE id = ?`, ids["fleetco"], ids["globex"])
						execOn(t, f, `UPDATE accounts SET manager_id = ? WHERE id = ?`, ids["northwind"], ids["contoso"])
					})
				}
			}
		}
	}
}

// TestListsStayInScopeAcrossSharedTotals: for every principal and request, every item
// is in the fresh list of the whole scope, and every page equals the
// fresh page; after the admin and each manager searched the same term
// with kept ids (sharing the cache), and with filters flipping.
func TestListsStayInScopeAcrossSharedTotals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newListFixture(t)
	addServicesOf(t, f, "acme", 300)
	for _, u := range []string{"tailspin", "contoso", "globex"} {
		addNamedServices(t, f, f.accountIDs(t, u)[0], "Shared", 5)
	}
	odo, _ := storage.Services.Field("odo")
	name, _ := storage.Services.Field("name")
	whos := []string{"admin", "fleetco", "northwind", "acme", "tailspin", "acme-night", "globex-day", "hooli"}
	reqs := []storage.ListRequest{
		{Search: "Shared"}, {Search: "Shared", Filters: []storage.Filter{{Field: odo, Value: true}}},
		{Search: "Shared", Filters: []storage.Filter{{Field: odo, Value: false}}}, {},
		{Filters: []storage.Filter{{Field: name, Value: "Shared 1"}}},
	}
	for round := range 2 {
		for _, who := range whos {
			scope := f.scope(t, who, "services")
			allowed := map[int64]bool{}
			for _, it := range freshAll(t, ctx, f.db, scope, storage.ListRequest{}) {
				allowed[it.ServiceID] = true
			}
			for _, base := range reqs {
				for _, desc := range []bool{false, true} {
					for _, per := range []int{1, 4, storage.MaxPerPage} {
						for page := 1; page <= 4; page++ {
							req := base
							req.Page, req.PerPage, req.Desc = page, per, desc
							got, err := storage.List(ctx, f.s, scope, storage.Services, req)
							if err != nil {
								t.Fatalf("%s %+v: %v", who, req, err)
							}
							for _, it := range got.Items {
								if !allowed[it.ServiceID] {
									t.Fatalf("%s %+v: row %d (account %d) outside the scope", who, req, it.ServiceID, it.AccountID)
								}
							}
							if want := freshPage(t, ctx, f.db, scope, req); !samePage(got, want) {
								t.Errorf("round %d %s %+v: got %s, want %s", round, who, req, showPage(got), showPage(want))
							}
						}
					}
				}
			}
		}
		// flip some odo values for round 2
		execOn(t, f, `UPDATE services SET odo = NOT odo WHERE name LIKE 'Shared%' AND service_id % 2 = 0`)
	}
}

// TestListOddSearchesAndPages: searches with LIKE metacharacters, quotes,
// backslashes, non-ASCII; per_page at its limits; pages past the end:
// no error, every page the fresh one.
func TestListOddSearchesAndPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newListFixture(t)
	addServicesOf(t, f, "acme", 300)
	tail := f.accountIDs(t, "tailspin")[0]
	for _, n := range []string{`50% off`, `a_b`, `back\slash`, `it's`, `quote"d`, `\'`, `''`, `ÄÖÜ straße`, `%_\'"`, `a\`, `?`, `$1`, `??`} {
		execOn(t, f, `INSERT INTO services (account_id, imei, name) SELECT ?, (SELECT imei FROM objects WHERE account_id = ? LIMIT 1), ?`, tail, tail, n)
	}
	searches := []string{`%`, `_`, `\`, `'`, `''`, `\'`, `"`, `%_`, `50%`, `a_b`, `\s`, `äöü`, `STRASSE`, `straße`, `?`, `$1`, `??`, `' OR '1'='1`, `\\`, `%%`, `ÄÖÜ`}
	for _, who := range []string{"admin", "northwind", "acme"} {
		scope := f.scope(t, who, "services")
		for _, search := range searches {
			for _, per := range []int{1, 2, 499, storage.MaxPerPage} {
				for _, page := range []int{1, 2, 3, math.MaxInt32} {
					for _, desc := range []bool{false, true} {
						req := storage.ListRequest{Page: page, PerPage: per, Search: search, Desc: desc}
						got, err := storage.List(ctx, f.s, scope, storage.Services, req)
						if err != nil {
							t.Fatalf("%s %+v: %v", who, req, err)
						}
						if want := freshPage(t, ctx, f.db, scope, req); !samePage(got, want) {
							t.Errorf("%s %+v: got %s, want %s", who, req, showPage(got), showPage(want))
						}
					}
				}
			}
		}
	}
}

// TestKeptIDsAtTheBound: exactly paging.KeptIDsMax (50,000) matches, one more,
// one fewer: the shape, the last pages, pages past the end, descending.
func TestKeptIDsAtTheBound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newListFixture(t)
	acme := f.accountIDs(t, "acme")[0]
	tail := f.accountIDs(t, "tailspin")[0]
	addNamedServices(t, f, acme, "Edge", 49_990)
	addNamedServices(t, f, tail, "Edge", 10)
	execOn(t, f, `ANALYZE services`)
	check := func(stage string, wantShape string) {
		for _, who := range []string{"admin", "northwind"} {
			scope := f.scope(t, who, "services")
			all := freshPage(t, ctx, f.db, scope, storage.ListRequest{Page: 1, PerPage: 1, Search: "Edge"})
			n := int(all.Total)
			reqs := []storage.ListRequest{{Page: 1, PerPage: 50}, {Page: 1, PerPage: 50, Desc: true}}
			for _, per := range []int{1, 7, 499, storage.MaxPerPage} {
				last := (n + per - 1) / per
				for _, p := range []int{last - 1, last, last + 1, last + 2} {
					if p >= 1 {
						reqs = append(reqs, storage.ListRequest{Page: p, PerPage: per}, storage.ListRequest{Page: p, PerPage: per, Desc: true})
					}
				}
			}
			for _, req := range reqs {
				req.Search = "Edge"
				got, err := storage.List(ctx, f.s, scope, storage.Services, req)
				if err != nil {
					t.Fatal(err)
				}
				if want := freshPage(t, ctx, f.db, scope, req); !samePage(got, want) {
					t.Errorf("%s %s %+v: got %v..%d of %d (next %v), want %v..%d of %d (next %v)", stage, who, req,
						len(got.Items), lastServiceID(got), got.Total, got.Next != nil, len(want.Items), lastServiceID(want), want.Total, want.Next != nil)
				}
			}
			if who == "admin" {
				sh, err := storage.PageShape(ctx, f.s, scope, storage.ListRequest{Page: 2, PerPage: 50, Search: "Edge"})
				if err != nil || sh != wantShape {
					t.Errorf("%s: admin shape %s (%v), want %s (total %d)", stage, sh, err, wantShape, n)
				}
			}
		}
	}
	check("exactly 50000", "ids")
	addNamedServices(t, f, tail, "Edge more", 1)
	check("50001", "walk")
	execOn(t, f, `DELETE FROM services WHERE service_id IN (SELECT service_id FROM services WHERE name LIKE 'Edge%' ORDER BY service_id LIMIT 2)`)
	check("49999", "ids")
}

func lastServiceID(p storage.Page[storage.Service]) int64 {
	if len(p.Items) == 0 {
		return 0
	}
	return p.Items[len(p.Items)-1].ServiceID
}

// TestKeptIDsConcurrentWriters: readers of the same term (admin, manager, both
// directions, several page sizes) while writers keep the number of
// matches fixed (one tx renames one row in and one row out, across two
// accounts of the tree) and the number of the tree's rows fixed (one tx
// inserts one and deletes one). In any snapshot the totals are then
// constant, so every page's total, length and next are known; every item
// must match the search and be in the scope.
func TestKeptIDsConcurrentWriters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newListFixture(t)
	addServicesOf(t, f, "acme", 3000)
	tail, cont := f.accountIDs(t, "tailspin")[0], f.accountIDs(t, "contoso")[0]
	addNamedServices(t, f, tail, "Cq", 20)
	addNamedServices(t, f, cont, "Other", 20)
	addNamedServices(t, f, cont, "Cq", 20)
	addNamedServices(t, f, tail, "Other", 20)
	scopes := map[string]policy.Scope{"admin": f.scope(t, "admin", "services"), "northwind": f.scope(t, "northwind", "services")}
	type key struct {
		who    string
		search string
	}
	totals := map[key]int64{}
	for who, sc := range scopes {
		for _, search := range []string{"Cq", ""} {
			totals[key{who, search}] = freshPage(t, ctx, f.db, sc, storage.ListRequest{Page: 1, PerPage: 1, Search: search}).Total
		}
	}
	tree := map[int64]bool{tail: true, cont: true, f.accountIDs(t, "northwind")[0]: true}
	// Each writer commits 150 transactions (giving up after 1,500
	// attempts); the readers read until the writers are done.
	var writers, readers sync.WaitGroup
	var done atomic.Bool
	var writes, reads, bad atomic.Int64
	var errs sync.Map
	for w := range 2 {
		writers.Add(1)
		go func() {
			defer writers.Done()
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for committed, attempt := 0, 0; committed < 150 && attempt < 1500; attempt++ {
				tx, err := f.db.BeginTx(ctx, nil)
				if err != nil {
					t.Error(err)
					return
				}
				a, b := tail, cont
				if r.IntN(2) == 0 {
					a, b = b, a
				}
				var n1, n2 int64 = -1, -1
				run := func(q string, args ...any) int64 {
					res, err := tx.ExecContext(ctx, q, args...)
					if err != nil {
						return -1
					}
					n, _ := res.RowsAffected()
					return n
				}
				if w == 0 {
					// one match renamed out, one non-match renamed in
					n1 = run(`UPDATE services SET name = 'Other ' || service_id WHERE name LIKE 'Cq%' AND service_id = (SELECT service_id FROM services WHERE account_id = ? AND name LIKE 'Cq%' ORDER BY random() LIMIT 1)`, a)
					n2 = run(`UPDATE services SET name = 'Cq ' || service_id WHERE name LIKE 'Other%' AND service_id = (SELECT service_id FROM services WHERE account_id = ? AND name LIKE 'Other%' ORDER BY random() LIMIT 1)`, b)
				} else {
					// one Other row deleted, one inserted
					n1 = run(`DELETE FROM services WHERE name LIKE 'Other%' AND service_id = (SELECT service_id FROM services WHERE account_id = ? AND name LIKE 'Other%' ORDER BY random() LIMIT 1)`, a)
					n2 = run(`INSERT INTO services (account_id, imei, name) SELECT ?, (SELECT imei FROM objects WHERE account_id = ? LIMIT 1), 'Other new ' || nextval('services_service_id_seq')`, b, b)
				}
				if n1 != 1 || n2 != 1 {
					tx.Rollback() //nolint:errcheck
					continue
				}
				if err := tx.Commit(); err == nil {
					writes.Add(1)
					committed++
				}
				time.Sleep(time.Duration(r.IntN(3)) * time.Millisecond)
			}
		}()
	}
	for rd := range 4 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			r := rand.New(rand.NewPCG(uint64(rd), 11))
			for !done.Load() {
				who := []string{"admin", "northwind"}[r.IntN(2)]
				search := []string{"Cq", "Cq", ""}[r.IntN(3)]
				per := []int{1, 3, 7, 40}[r.IntN(4)]
				total := totals[key{who, search}]
				maxPage := int(total)/per + 2
				if search == "" {
					maxPage = min(maxPage, 30)
				}
				page := 1 + r.IntN(maxPage)
				desc := r.IntN(2) == 0
				req := storage.ListRequest{Page: page, PerPage: per, Search: search, Desc: desc}
				got, err := storage.List(ctx, f.s, scopes[who], storage.Services, req)
				reads.Add(1)
				msg := ""
				if err != nil {
					msg = err.Error()
				} else {
					offset := int64((page - 1) * per)
					wantN := max(0, min(int64(per), total-offset))
					wantNext := offset+int64(per) < total
					if got.Total != total || int64(len(got.Items)) != wantN || (got.Next != nil) != wantNext {
						msg = fmt.Sprintf("%s %+v: %d items of %d (next %v), want %d of %d (next %v)", who, req, len(got.Items), got.Total, got.Next != nil, wantN, total, wantNext)
					}
					for i, it := range got.Items {
						if search != "" && !strings.HasPrefix(it.Name, "Cq") {
							msg = fmt.Sprintf("%s %+v: item %d %q does not match", who, req, it.ServiceID, it.Name)
						}
						if who == "northwind" && !tree[it.AccountID] {
							msg = fmt.Sprintf("%s %+v: item %d of account %d outside the tree", who, req, it.ServiceID, it.AccountID)
						}
						if i > 0 && (it.ServiceID > got.Items[i-1].ServiceID) == desc {
							msg = fmt.Sprintf("%s %+v: out of order %v", who, req, idsOf(got.Items))
						}
					}
				}
				if msg != "" {
					bad.Add(1)
					errs.Store(msg, true)
				}
			}
		}()
	}
	writers.Wait()
	done.Store(true)
	readers.Wait()
	if writes.Load() < 100 || reads.Load() < 100 {
		t.Fatalf("%d writes, %d reads: want a hundred of each at least", writes.Load(), reads.Load())
	}
	for k, want := range totals {
		if got := freshPage(t, ctx, f.db, scopes[k.who], storage.ListRequest{Page: 1, PerPage: 1, Search: k.search}).Total; got != want {
			t.Fatalf("the writers changed the total of %+v: %d, was %d (the test's invariant broke)", k, got, want)
		}
	}
	n := 0
	errs.Range(func(k, _ any) bool {
		if n < 15 {
			t.Error(k)
		}
		n++
		return true
	})
	counted, reused := storage.KeptTotals(f.s)
	t.Logf("%d writes, %d reads, %d bad; kept totals counted %d reused %d", writes.Load(), reads.Load(), bad.Load(), counted, reused)
}
