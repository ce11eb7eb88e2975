package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/api"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/limits"
)

// escAccount is what the escalation oracle knows about an account: the
// facts it reads from the database once, after building the tree.
type escAccount struct {
	id         int64
	username   string
	typ        string
	manager    int64 // 0 at the top
	active     bool
	readOnly   bool
	privileges []string
	token      string // a "*" token without limits; "" for accounts not used as callers
	narrow     string // "GET *", "POST /tokens", expiring at escNarrowExpiry, escNarrowRate per minute
	devices    []string
	rateLimit  int // the account's own rate_limit (escAccountRate on every other tree account); 0: none
}

// escWorld is one random tree and the oracle's view of it.
type escWorld struct {
	a        *testAPI
	rng      *rand.Rand
	seed     uint64
	accounts map[int64]*escAccount
	callers  []*escAccount
	targets  []int64 // tree accounts, other tenants' accounts and a missing id
	expiry   time.Time
	serial   int
}

const (
	escMissingID  = 999999999
	escNarrowRate = 600
	// escAccountRate is the account rate limit of every other account of
	// the tree: roomy enough never to refuse a request of the test.
	escAccountRate = 100000
)

// escExpect is the answer docs/design.md §9 requires.
type escExpect struct {
	status int
	code   string
	reason string
}

// allow is a success with the given status.
func allow(status int) escExpect { return escExpect{status: status} }

// deny403 is 403 MANAGEMENT_DENIED with a reason.
func deny403(reason string) escExpect {
	return escExpect{status: http.StatusForbidden, code: "MANAGEMENT_DENIED", reason: reason}
}

var (
	escNotFound   = escExpect{status: http.StatusNotFound, code: "NOT_FOUND"}
	escValidation = escExpect{status: http.StatusBadRequest, code: "VALIDATION_FAILED"}
	escBadParam   = escExpect{status: http.StatusBadRequest, code: "INVALID_PARAMETER"}
	escBadBody    = escExpect{status: http.StatusBadRequest, code: "INVALID_BODY"}
)

// TestEscalation compares what the management API allows with an oracle
// written from the text of docs/design.md §9 (and the precedence of docs/policy.md
// §10), not from the policy: every account type as caller (including
// read-only and suspended branches) × every action × target relation
// (self, child, grandchild, sibling, parent, other tenant, missing) ×
// field change, on random trees. Each case is a real HTTP request; status,
// error code and details.reason must agree.
func TestEscalation(t *testing.T) {
	total := 0
	reasons := map[string]int{}
	allows := map[string]int{}
	relations := map[string]int{}
	for _, seed := range []uint64{1, 2} {
		w := newEscWorld(t, seed)
		n := w.run(t, reasons, allows, relations)
		total += n
	}
	t.Logf("escalation cases: %d; reasons %v; allows %v; relations %v", total, reasons, allows, relations)
	if total < 1000 {
		t.Fatalf("only %d cases", total)
	}
	// privilege_not_held and immutable_field cannot be reached through the
	// API: every caller that manages another subaccount holds both
	// privileges, and an immutable field is 400 INVALID_BODY before the
	// policy. They are covered by the Rego tests; here the 400 is checked.
	for _, r := range []string{"not_below_caller", "own_account", "exceeds_account", "device_not_owned", "exceeds_token", "wrong_target_type",
		"NOT_FOUND", "INVALID_BODY", "VALIDATION_FAILED", "INVALID_PARAMETER", "READ_ONLY_ACCOUNT", "ACCOUNT_INACTIVE"} {
		if reasons[r] == 0 {
			t.Errorf("no case answered %s", r)
		}
	}
	for _, action := range []string{"account.create", "account.update", "grants.replace", "object.create", "token.create", "token.revoke", "usage.read"} {
		if allows[action] == 0 {
			t.Errorf("no case allowed %s", action)
		}
	}
	for _, rel := range []string{"self", "child", "grandchild", "sibling", "parent", "other tenant", "missing"} {
		if relations[rel] == 0 {
			t.Errorf("no case with target relation %s", rel)
		}
	}
}

// newEscWorld builds a random tree in a fresh database holding the demo
// data: an admin, two managers, users under them (one read-only and one
// suspended branch), subaccounts per user, devices per user, a "*" token and
// a narrow token per account.
func newEscWorld(t *testing.T, seed uint64) *escWorld {
	a := newTestAPI(t)
	w := &escWorld{a: a, rng: rand.New(rand.NewPCG(seed, 12)), seed: seed, accounts: map[int64]*escAccount{},
		expiry: time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)}
	ctx := context.Background()
	insert := func(name, typ string, manager int64, active, readOnly bool, privs []string) int64 {
		var mgr any
		if manager != 0 {
			mgr = manager
		}
		var id int64
		if err := a.db.NewRaw(`INSERT INTO accounts (username, email, type, manager_id, active, read_only, privileges)
			VALUES (?, ?, ?, ?, ?, ?, ?::text[]) RETURNING id`, name, name+"@example.com", typ, mgr, active, readOnly,
			"{"+strings.Join(privs, ",")+"}").Scan(ctx, &id); err != nil {
			t.Fatalf("account %s: %v", name, err)
		}
		return id
	}
	device := func(owner int64, imei string) {
		a.exec(t, "INSERT INTO objects (imei, account_id, name) VALUES (?, ?, ?)", imei, owner, imei)
	}
	tree := []int64{}
	p := fmt.Sprintf("esc%d", seed)
	admin := insert(p+"-admin", "admin", 0, true, false, nil)
	tree = append(tree, admin)
	privChoices := [][]string{nil, {"reports"}, {"event_notifications"}, {"event_notifications", "reports"}}
	for m := range 2 {
		mgr := insert(fmt.Sprintf("%s-m%d", p, m), "manager", 0, true, false, nil)
		tree = append(tree, mgr)
		users := 1 + w.rng.IntN(3)
		for u := range users + 1 {
			active, readOnly := true, false
			kind := "u"
			if m == 0 && u == users { // one read-only branch
				readOnly, kind = true, "ro"
			} else if m == 1 && u == users { // one suspended branch
				active, kind = false, "off"
			}
			user := insert(fmt.Sprintf("%s-m%d-%s%d", p, m, kind, u), "user", mgr, active, readOnly, nil)
			tree = append(tree, user)
			for d := range 2 {
				device(user, fmt.Sprintf("%s-%d-dev%d", p, user, d))
			}
			for s := range 1 + w.rng.IntN(2) {
				sub := insert(fmt.Sprintf("%s-m%d-%s%d-s%d", p, m, kind, u, s), "subaccount", user, true, false,
					privChoices[w.rng.IntN(len(privChoices))])
				tree = append(tree, sub)
			}
		}
	}
	// Other tenants: demo accounts outside the tree, of every type.
	others := []int64{}
	for _, u := range []string{"admin", "fleetco", "acme", "acme-night"} {
		others = append(others, a.accountID(t, u))
	}
	// The oracle's facts, read once.
	var rows []struct {
		ID         int64    `bun:"id"`
		Username   string   `bun:"username"`
		Type       string   `bun:"type"`
		ManagerID  *int64   `bun:"manager_id"`
		Active     bool     `bun:"active"`
		ReadOnly   bool     `bun:"read_only"`
		Privileges []string `bun:"privileges,array"`
	}
	if err := a.db.NewRaw("SELECT id, username, type, manager_id, active, read_only, privileges FROM accounts").Scan(ctx, &rows); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		acc := &escAccount{id: r.ID, username: r.Username, typ: r.Type, active: r.Active, readOnly: r.ReadOnly, privileges: r.Privileges}
		if r.ManagerID != nil {
			acc.manager = *r.ManagerID
		}
		w.accounts[r.ID] = acc
	}
	var devs []struct {
		IMEI      string `bun:"imei"`
		AccountID int64  `bun:"account_id"`
	}
	if err := a.db.NewRaw("SELECT imei, account_id FROM objects").Scan(ctx, &devs); err != nil {
		t.Fatal(err)
	}
	for _, d := range devs {
		w.accounts[d.AccountID].devices = append(w.accounts[d.AccountID].devices, d.IMEI)
	}
	for i, id := range tree {
		acc := w.accounts[id]
		if i%2 == 0 {
			acc.rateLimit = escAccountRate
			a.exec(t, "UPDATE accounts SET rate_limit = ? WHERE id = ?", escAccountRate, id)
		}
		acc.token = a.mintToken(t, acc.username, "esc-all", []string{"*"}, nil, 0)
		acc.narrow = a.mintToken(t, acc.username, "esc-narrow", []string{"GET *", "POST /tokens"}, &w.expiry, escNarrowRate)
		w.callers = append(w.callers, acc)
	}
	w.targets = append(append(append(w.targets, tree...), others...), escMissingID)
	// A snapshot of every account, to undo each allowed PATCH.
	a.exec(t, "CREATE TABLE esc_snapshot AS SELECT * FROM accounts")
	return w
}

// --- the oracle: docs/design.md §2 and §9 as text ---

// chainState is the route decision on a write (docs/design.md §2): an account that
// is suspended, or below a suspended account, cannot use the API; one that
// is read-only, or below a read-only account, cannot write.
func (w *escWorld) chainState(c *escAccount) *escExpect {
	for acc := c; acc != nil; acc = w.accounts[acc.manager] {
		if !acc.active {
			return &escExpect{status: http.StatusUnauthorized, code: "ACCOUNT_INACTIVE"}
		}
	}
	for acc := c; acc != nil; acc = w.accounts[acc.manager] {
		if acc.readOnly {
			return &escExpect{status: http.StatusForbidden, code: "READ_ONLY_ACCOUNT"}
		}
	}
	return nil
}

// manages is the management scope of §9: an admin manages every account; a
// manager itself, the accounts it manages and their subaccounts; a user
// itself and its subaccounts; a subaccount itself.
func (w *escWorld) manages(c *escAccount, id int64) bool {
	t, ok := w.accounts[id]
	if !ok {
		return false
	}
	switch c.typ {
	case "admin":
		return true
	case "manager":
		if t.id == c.id || t.manager == c.id {
			return true
		}
		parent := w.accounts[t.manager]
		return t.typ == "subaccount" && parent != nil && parent.manager == c.id
	case "user":
		return t.id == c.id || t.typ == "subaccount" && t.manager == c.id
	case "subaccount":
		return t.id == c.id
	}
	return false
}

// relation names where the target sits relative to the caller (for the
// coverage count only; the oracle does not use it).
func (w *escWorld) relation(c *escAccount, id int64) string {
	t, ok := w.accounts[id]
	switch {
	case !ok:
		return "missing"
	case t.id == c.id:
		return "self"
	case t.manager == c.id:
		return "child"
	case t.manager != 0 && w.accounts[t.manager].manager == c.id:
		return "grandchild"
	case c.manager == t.id:
		return "parent"
	case c.manager != 0 && w.accounts[c.manager].manager == t.id:
		return "grandparent"
	case t.manager == c.manager && t.manager != 0:
		return "sibling"
	}
	if w.top(c) == w.top(t) {
		return "same tenant"
	}
	return "other tenant"
}

// top is the topmost ancestor of an account: its tenant.
func (w *escWorld) top(acc *escAccount) int64 {
	for acc.manager != 0 {
		acc = w.accounts[acc.manager]
	}
	return acc.id
}

// heldPrivileges: admins, managers and users hold every privilege (§2).
func heldPrivileges(c *escAccount) []string {
	if c.typ == "subaccount" {
		return c.privileges
	}
	return []string{"reports", "event_notifications"}
}

// mayCreate is "creation goes strictly downward" of §9, within §2's fixed
// levels: a manager at the top or under an admin, a user at the top or
// under a manager or an admin, a subaccount under a user.
func (w *escWorld) mayCreate(c *escAccount, typ string, under int64) bool {
	parent := w.accounts[under]
	switch c.typ {
	case "admin":
		return typ == "manager" && (under == 0 || parent.typ == "admin") ||
			typ == "user" && (under == 0 || parent.typ == "admin" || parent.typ == "manager")
	case "manager":
		return typ == "user" && under == c.id ||
			typ == "subaccount" && under != 0 && parent.typ == "user" && parent.manager == c.id
	case "user":
		return typ == "subaccount" && under == c.id
	}
	return false
}

// covers is the attenuation rule of §9: "*" covers all, "METHOD *" every
// route of that method (and itself), a permission itself.
func covers(held []string, p string) bool {
	for _, h := range held {
		if h == "*" || h == p {
			return true
		}
		if method, ok := strings.CutSuffix(h, " *"); ok && strings.HasPrefix(p, method+" /") {
			return true
		}
	}
	return false
}

// --- the cases ---

func (w *escWorld) name(kind string) string {
	w.serial++
	return fmt.Sprintf("esc%d-%s-%d", w.seed, kind, w.serial)
}

// run sends every case and returns how many it checked.
func (w *escWorld) run(t *testing.T, reasons, allows, relations map[string]int) int {
	n := 0
	check := func(c *escAccount, action, rel, desc string, want escExpect, r response) {
		t.Helper()
		n++
		got := escExpect{status: r.status}
		if r.status >= 400 {
			e, _ := r.body["error"].(map[string]any)
			got.code, _ = e["code"].(string)
			if got.code == "MANAGEMENT_DENIED" {
				d, _ := e["details"].(map[string]any)
				got.reason, _ = d["reason"].(string)
			}
		}
		if got != want {
			t.Errorf("seed %d: %s (%s) as %s: %s → %d %s %s, oracle %d %s %s: %s", w.seed, action, rel, c.username, desc,
				got.status, got.code, got.reason, want.status, want.code, want.reason, r.raw)
			return
		}
		relations[rel]++
		switch {
		case want.status < 300:
			allows[action]++
		case want.reason != "":
			reasons[want.reason]++
		default:
			reasons[want.code]++
		}
	}
	for _, c := range w.callers {
		route := w.chainState(c)
		gate := func(e escExpect) escExpect {
			if route != nil {
				return *route
			}
			return e
		}
		for _, target := range w.targets {
			rel := w.relation(c, target)
			inScope := w.manages(c, target)
			tgt := w.accounts[target]

			// account.create under the target, and at the top.
			for _, under := range []int64{target, 0} {
				if under == 0 && target != w.targets[0] {
					continue // the top once per caller
				}
				typ := []string{"admin", "manager", "user", "subaccount"}[w.rng.IntN(4)]
				body := map[string]any{"username": w.name("acct"), "email": "x@example.com", "type": typ}
				if under != 0 {
					body["manager_id"] = under
				}
				withPrivs := w.rng.IntN(3) == 0
				if withPrivs {
					body["privileges"] = []string{"reports"}
				}
				want := deny403("not_below_caller")
				switch {
				// privileges on a non-subaccount: the body alone says so
				// (its type), so it is refused with the body, before the
				// scope; it reveals nothing about the manager_id.
				case withPrivs && typ != "subaccount":
					want = escValidation
				case under != 0 && !w.manages(c, under):
					want = escNotFound
				case !w.mayCreate(c, typ, under):
				case withPrivs && !covers(heldPrivileges(c), "reports"):
					want = deny403("privilege_not_held")
				default:
					want = allow(http.StatusCreated)
				}
				r := w.send(http.MethodPost, "/api/v2/accounts", c.token, body)
				cr := rel
				if under == 0 {
					cr = "top"
				}
				check(c, "account.create", cr, fmt.Sprint(body), gate(want), r)
			}

			// account.update of one or two fields of the target.
			fields := []string{"email", "active", "read_only", "account_expire", "account_expire_dt", "privileges", "type", "manager_id", "username", "rate_limit"}
			body := map[string]any{}
			for range 1 + w.rng.IntN(2) {
				f := fields[w.rng.IntN(len(fields))]
				switch f {
				case "email":
					body[f] = w.name("mail") + "@example.com"
				case "active":
					body[f] = false
				case "read_only", "account_expire":
					body[f] = true
				case "account_expire_dt":
					body[f] = "2031-01-01"
				case "privileges":
					body[f] = [][]string{{}, {"reports"}, {"event_notifications"}, {"reports", "event_notifications"}}[w.rng.IntN(4)]
				case "type":
					body[f] = "admin"
				case "manager_id":
					body[f] = c.id
				case "username":
					body[f] = w.name("rename")
				case "rate_limit":
					body[f] = []any{escAccountRate / 2, escAccountRate, escAccountRate + 1, nil}[w.rng.IntN(4)]
				}
			}
			want := allow(http.StatusOK)
			immutable := slices.ContainsFunc([]string{"type", "manager_id", "username"}, func(f string) bool { _, ok := body[f]; return ok })
			_, privs := body["privileges"]
			ownFields := slices.ContainsFunc([]string{"active", "read_only", "account_expire", "account_expire_dt", "privileges", "rate_limit"}, func(f string) bool { _, ok := body[f]; return ok })
			rate, rated := body["rate_limit"]
			// never above the caller's own account limit, nor none (docs/design.md §12)
			aboveOwn := rated && c.rateLimit > 0 && (rate == nil || rate.(int) > c.rateLimit)
			switch {
			case immutable:
				want = escBadBody
			case !inScope:
				want = escNotFound
			case privs && tgt.typ != "subaccount":
				want = escValidation
			case target == c.id && ownFields:
				want = deny403("own_account")
			case aboveOwn:
				want = deny403("exceeds_account")
			case privs && slices.ContainsFunc(body["privileges"].([]string), func(p string) bool { return !slices.Contains(heldPrivileges(c), p) }):
				want = deny403("privilege_not_held")
			}
			r := w.send(http.MethodPatch, fmt.Sprintf("/api/v2/accounts/%d", target), c.token, body)
			check(c, "account.update", rel, fmt.Sprint(body), gate(want), r)
			if r.status == http.StatusOK {
				w.a.exec(t, `UPDATE accounts a SET email = s.email, active = s.active, read_only = s.read_only,
					account_expire = s.account_expire, account_expire_dt = s.account_expire_dt, privileges = s.privileges,
					rate_limit = s.rate_limit
					FROM esc_snapshot s WHERE a.id = s.id AND a.id = ?`, target)
			}

			// grants.replace on the target.
			kind := []string{"none", "owned", "foreign", "unknown", "mixed"}[w.rng.IntN(5)]
			imeis := []string{}
			var parentDevices []string
			if tgt != nil && tgt.manager != 0 {
				parentDevices = w.accounts[tgt.manager].devices
			}
			foreign := w.foreignDevice(tgt)
			switch kind {
			case "owned":
				imeis = append(imeis, parentDevices...)
			case "foreign":
				imeis = append(imeis, foreign)
			case "unknown":
				imeis = append(imeis, w.name("nodev"))
			case "mixed":
				imeis = append(append(imeis, parentDevices...), foreign)
			}
			want = allow(http.StatusOK)
			switch {
			case !inScope:
				want = escNotFound
			case tgt.typ != "subaccount":
				want = escBadParam // the path parameter id names no subaccount
			case target == c.id:
				want = deny403("own_account")
			case slices.ContainsFunc(imeis, func(m string) bool { return !slices.Contains(parentDevices, m) }):
				want = deny403("device_not_owned")
			}
			r = w.send(http.MethodPut, fmt.Sprintf("/api/v2/accounts/%d/objects", target), c.token, map[string]any{"imei": imeis})
			check(c, "grants.replace", rel, kind+" "+fmt.Sprint(imeis), gate(want), r)

			// object.create for the target.
			want = allow(http.StatusCreated)
			switch {
			case !inScope:
				want = escNotFound
			case tgt.typ == "subaccount":
				want = deny403("wrong_target_type")
			}
			r = w.send(http.MethodPost, "/api/v2/objects", c.token, map[string]any{"imei": w.name("dev"), "account_id": target})
			check(c, "object.create", rel, "", gate(want), r)

			// token.create for the target, by the "*" token or the narrow one.
			w.tokenCase(c, target, rel, inScope, gate, check)

			// token.revoke of a fresh token of the target.
			if tgt != nil {
				victim, tok, err := w.a.store.CreateToken(context.Background(), storage.NewToken{Username: tgt.username,
					Name: w.name("victim"), Permissions: []string{"*"}})
				if err != nil {
					t.Fatal(err)
				}
				caller := c.token
				if target == c.id && w.rng.IntN(2) == 0 {
					caller = victim // a token revokes itself
				}
				id := tok.ID
				want = allow(http.StatusNoContent)
				if !inScope {
					want = escNotFound
				}
				r = w.send(http.MethodDelete, fmt.Sprintf("/api/v2/tokens/%d", id), caller, nil)
				check(c, "token.revoke", rel, fmt.Sprintf("self-token=%v", caller == victim), gate(want), r)
			} else {
				r = w.send(http.MethodDelete, fmt.Sprintf("/api/v2/tokens/%d", escMissingID), c.token, nil)
				check(c, "token.revoke", rel, "missing token", gate(escNotFound), r)
			}

			// usage.read of the target (GET /usage, docs/design.md §12): the
			// management scope decides; a read, so read-only does not apply.
			// It draws nothing from the random stream.
			want = allow(http.StatusOK)
			if !inScope {
				want = escNotFound
			}
			if st := w.chainState(c); st != nil && st.status == http.StatusUnauthorized {
				want = *st
			}
			r = w.send(http.MethodGet, fmt.Sprintf("/api/v2/usage?account_id=%d", target), c.token, nil)
			check(c, "usage.read", rel, "", want, r)
			// account.erase of the target (docs/design.md §12): only the refusals
			// are sent, since an allowed erase would remove the world's
			// accounts (TestAccountErase sends the allowed ones).
			eraseWant := allow(http.StatusNoContent)
			switch {
			case tgt == nil || !inScope:
				eraseWant = escNotFound
			case tgt.typ == "admin":
				eraseWant = deny403("wrong_target_type")
			case target == c.id:
				eraseWant = deny403("own_account")
			}
			if g := gate(eraseWant); g.status != http.StatusNoContent {
				r = w.send(http.MethodDelete, fmt.Sprintf("/api/v2/accounts/%d", target), c.token, nil)
				check(c, "account.erase", rel, "", g, r)
			}
		}
	}
	return n
}

// tokenCase sends one POST /tokens with a random permission set, expiry
// and rate limit (narrower, equal, wider or omitted).
func (w *escWorld) tokenCase(c *escAccount, target int64, rel string, inScope bool, gate func(escExpect) escExpect,
	check func(*escAccount, string, string, string, escExpect, response)) {
	narrow := w.rng.IntN(2) == 0
	secret, held, expires, rate := c.token, []string{"*"}, (*time.Time)(nil), api.DefaultRateLimit
	if narrow {
		secret, held, expires, rate = c.narrow, []string{"GET *", "POST /tokens"}, &w.expiry, escNarrowRate
	}
	perms := [][]string{{}, {"GET /services"}, {"GET *"}, {"*"}, {"POST /tokens"}, {"DELETE /tokens/{id}"},
		{"GET /events/{id}", "POST /passengers"}, {"PATCH /accounts/{id}"}}[w.rng.IntN(8)]
	body := map[string]any{"name": w.name("tok"), "permissions": perms}
	if target != c.id || w.rng.IntN(2) == 0 {
		body["account_id"] = target
	}
	// expires_at: omitted (inherits), earlier, equal, later than w.expiry
	exceeds := slices.ContainsFunc(perms, func(p string) bool { return !covers(held, p) })
	switch w.rng.IntN(4) {
	case 1:
		body["expires_at"] = w.expiry.Add(-time.Hour).Format(time.RFC3339)
	case 2:
		body["expires_at"] = w.expiry.Format(time.RFC3339)
	case 3:
		body["expires_at"] = w.expiry.Add(time.Second).Format(time.RFC3339)
		if expires != nil {
			exceeds = true // later than the creating token's expiry
		}
	}
	switch w.rng.IntN(4) {
	case 1:
		body["rate_limit"] = rate / 2
	case 2:
		body["rate_limit"] = rate
	case 3:
		body["rate_limit"] = rate + 1
		exceeds = true // higher than the creating token's (effective) limit
	}
	want := allow(http.StatusCreated)
	tgt := w.accounts[target]
	switch {
	case !inScope:
		want = escNotFound
	// §9: only for the caller's own account or one below it whose scopes
	// are within the caller's: never another manager (or admin) but for
	// an admin
	case target != c.id && c.typ != "admin" && (tgt.typ == "manager" || tgt.typ == "admin"):
		want = deny403("outside_scope")
	case exceeds:
		want = deny403("exceeds_token")
	}
	r := w.send(http.MethodPost, "/api/v2/tokens", secret, body)
	check(c, "token.create", rel, fmt.Sprintf("narrow=%v %v", narrow, body), gate(want), r)
}

// foreignDevice is a device its target's parent does not own: another
// tree user's, or another tenant's.
func (w *escWorld) foreignDevice(tgt *escAccount) string {
	var all []string
	for _, acc := range w.accounts {
		if tgt == nil || acc.id != tgt.manager {
			all = append(all, acc.devices...)
		}
	}
	sort.Strings(all)
	return all[w.rng.IntN(len(all))]
}

// send makes a JSON request with a bearer token.
func (w *escWorld) send(method, path, token string, body any) response {
	b := ""
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			w.a.t.Fatal(err)
		}
		b = string(raw)
	}
	return w.a.send(method, path, token, b)
}

// TestEscalationQuotas: who may set quotas through PATCH /accounts/{id}
// (docs/design.md §12), attacked from each side: nobody sets its own (a user, a
// manager), a manager never above its own limit in force, another
// tenant's manager or user finds no account (404), and every malformed
// value (negative, huge, not an integer, a string, an unknown quota) is a
// 400 with its stable code whoever sends it.
func TestEscalationQuotas(t *testing.T) {
	a := newQuotaAPI(t, limits.Quotas{Devices: quota(4)})
	fleetco, acmeTok := demoToken(t, "fleetco-all"), demoToken(t, "acme-all")
	northwind, tailspin := demoToken(t, "northwind-all"), demoToken(t, "tailspin-all")
	acme, fleetcoID := a.accountID(t, "acme"), a.accountID(t, "fleetco")
	patch := func(token string, id int64, body string) response {
		return a.send(http.MethodPatch, fmt.Sprintf("/api/v2/accounts/%d", id), token, body)
	}
	for _, c := range []struct {
		name, token string
		id          int64
		body        string
		status      int
		code        string
		reason      string
	}{
		{"a user raises its own quota", acmeTok, acme, `{"quotas":{"devices":100}}`, 403, "MANAGEMENT_DENIED", "own_account"},
		{"a manager raises its own quota", fleetco, fleetcoID, `{"quotas":{"devices":100}}`, 403, "MANAGEMENT_DENIED", "own_account"},
		{"a manager above its own limit", fleetco, acme, `{"quotas":{"devices":5}}`, 403, "MANAGEMENT_DENIED", "exceeds_own_quota"},
		{"another tenant's manager", northwind, acme, `{"quotas":{"devices":1}}`, 404, "NOT_FOUND", ""},
		{"another tenant's user", tailspin, acme, `{"quotas":{"devices":1}}`, 404, "NOT_FOUND", ""},
		{"negative", fleetco, acme, `{"quotas":{"devices":-1}}`, 400, "VALIDATION_FAILED", ""},
		{"huge", fleetco, acme, `{"quotas":{"devices":99999999999999999999}}`, 400, "INVALID_BODY", ""},
		{"above the bound", fleetco, acme, `{"quotas":{"devices":1000000001}}`, 400, "VALIDATION_FAILED", ""},
		{"not an integer", fleetco, acme, `{"quotas":{"devices":1.5}}`, 400, "INVALID_BODY", ""},
		{"a string", fleetco, acme, `{"quotas":{"devices":"5"}}`, 400, "INVALID_BODY", ""},
		{"an unknown quota", fleetco, acme, `{"quotas":{"drivers":1}}`, 400, "INVALID_BODY", ""},
		{"within its own limit", fleetco, acme, `{"quotas":{"devices":4}}`, 200, "", ""},
		{"null: back to the platform default", fleetco, acme, `{"quotas":{"devices":null}}`, 200, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := patch(c.token, c.id, c.body)
			if r.status != c.status {
				t.Fatalf("%s: %d %s, want %d %s %s", c.body, r.status, r.raw, c.status, c.code, c.reason)
			}
			if c.code == "" {
				return
			}
			if got := r.errorCode(t); got != c.code {
				t.Fatalf("%s: code %s (%s), want %s", c.body, got, r.raw, c.code)
			}
			if c.reason != "" {
				if got := r.body["error"].(map[string]any)["details"].(map[string]any)["reason"]; got != c.reason {
					t.Fatalf("%s: reason %v, want %s", c.body, got, c.reason)
				}
			}
		})
	}
}

// TestEscalationCreateQuotas (issue 34 item 3): a created account never
// has limits above its creator's. POST /accounts without quotas gives
// each quota the platform default or the creator's own limit when that is
// lower (a manager held to 2 devices registers no more per customer than
// 2, not the platform's 100,000), with quotas it is judged by the same
// rule as PATCH (403 exceeds_own_quota above the creator's own, an admin
// gives any), a bad value is a 400 with its stable code, and the created
// account is held to what it got.
func TestEscalationCreateQuotas(t *testing.T) {
	a := newQuotaAPI(t, limits.Quotas{Tokens: quota(1000), Devices: quota(100000)})
	admin, fleetco, acmeTok := demoToken(t, "admin-all"), demoToken(t, "fleetco-all"), demoToken(t, "acme-all")
	acme, fleetcoID := a.accountID(t, "acme"), a.accountID(t, "fleetco")
	if r := a.send(http.MethodPatch, fmt.Sprintf("/api/v2/accounts/%d", fleetcoID), admin, `{"quotas":{"devices":2,"subaccounts":50}}`); r.status != http.StatusOK {
		t.Fatalf("admin holds fleetco to 2 devices: %d %s", r.status, r.raw)
	}
	n := 0
	create := func(t *testing.T, token string, body string) response {
		t.Helper()
		n++
		var fields map[string]any
		if err := json.Unmarshal([]byte(body), &fields); err != nil {
			t.Fatal(err)
		}
		fields["username"] = fmt.Sprintf("created-%d", n)
		b, _ := json.Marshal(fields)
		return a.send(http.MethodPost, "/api/v2/accounts", token, string(b))
	}
	// limits returns the quotas in force of the account created by r.
	limits := func(t *testing.T, r response) map[string]any {
		t.Helper()
		if r.status != http.StatusCreated {
			t.Fatalf("create: %d %s", r.status, r.raw)
		}
		id := int64(r.data(t)["id"].(float64))
		return a.get(fmt.Sprintf("/api/v2/accounts/%d", id), admin).data(t)["quotas"].(map[string]any)
	}
	user := fmt.Sprintf(`{"type":"user","manager_id":%d`, fleetcoID)
	sub := fmt.Sprintf(`{"type":"subaccount","manager_id":%d`, acme)
	for _, c := range []struct {
		name, token, body string
		want              map[string]any // the created account's quotas in force
		status            int
		code, reason      string
	}{
		{"omitted: the creator's where lower, else the default", fleetco, user + `}`,
			map[string]any{"devices": 2.0, "subaccounts": 50.0, "tokens": 1000.0, "passengers": nil, "webhooks": nil, "zones": nil, "events": nil}, 201, "", ""},
		{"null: the same", fleetco, user + `,"quotas":{"devices":null}}`,
			map[string]any{"devices": 2.0, "subaccounts": 50.0, "tokens": 1000.0, "passengers": nil, "webhooks": nil, "zones": nil, "events": nil}, 201, "", ""},
		{"quotas null: the same", fleetco, user + `,"quotas":null}`,
			map[string]any{"devices": 2.0, "subaccounts": 50.0, "tokens": 1000.0, "passengers": nil, "webhooks": nil, "zones": nil, "events": nil}, 201, "", ""},
		{"up to the creator's own", fleetco, user + `,"quotas":{"devices":2,"tokens":1000,"passengers":7}}`,
			map[string]any{"devices": 2.0, "subaccounts": 50.0, "tokens": 1000.0, "passengers": 7.0, "webhooks": nil, "zones": nil, "events": nil}, 201, "", ""},
		{"lower", fleetco, user + `,"quotas":{"devices":0}}`,
			map[string]any{"devices": 0.0, "subaccounts": 50.0, "tokens": 1000.0, "passengers": nil, "webhooks": nil, "zones": nil, "events": nil}, 201, "", ""},
		{"a subaccount under its customer", fleetco, sub + `}`,
			map[string]any{"devices": 2.0, "subaccounts": 50.0, "tokens": 1000.0, "passengers": nil, "webhooks": nil, "zones": nil, "events": nil}, 201, "", ""},
		{"the platform's default, above the creator's", fleetco, user + `,"quotas":{"devices":100000}}`, nil, 403, "MANAGEMENT_DENIED", "exceeds_own_quota"},
		{"one more than the creator's", fleetco, user + `,"quotas":{"devices":3}}`, nil, 403, "MANAGEMENT_DENIED", "exceeds_own_quota"},
		{"above the creator's default", fleetco, user + `,"quotas":{"tokens":1001}}`, nil, 403, "MANAGEMENT_DENIED", "exceeds_own_quota"},
		{"a subaccount above its creator", fleetco, sub + `,"quotas":{"subaccounts":51}}`, nil, 403, "MANAGEMENT_DENIED", "exceeds_own_quota"},
		{"a user's subaccount above the user", acmeTok, sub + `,"quotas":{"devices":100001}}`, nil, 403, "MANAGEMENT_DENIED", "exceeds_own_quota"},
		{"a user's subaccount within the user", acmeTok, sub + `,"quotas":{"tokens":3}}`,
			map[string]any{"devices": 100000.0, "subaccounts": nil, "tokens": 3.0, "passengers": nil, "webhooks": nil, "zones": nil, "events": nil}, 201, "", ""},
		{"the admin gives any", admin, `{"type":"manager","quotas":{"devices":1000000000}}`,
			map[string]any{"devices": 1e9, "subaccounts": nil, "tokens": 1000.0, "passengers": nil, "webhooks": nil, "zones": nil, "events": nil}, 201, "", ""},
		{"the admin's omitted: the defaults", admin, `{"type":"manager"}`,
			map[string]any{"devices": 100000.0, "subaccounts": nil, "tokens": 1000.0, "passengers": nil, "webhooks": nil, "zones": nil, "events": nil}, 201, "", ""},
		{"the creation order first", fleetco, fmt.Sprintf(`{"type":"manager","manager_id":%d,"quotas":{"devices":100000}}`, fleetcoID), nil, 403, "MANAGEMENT_DENIED", "not_below_caller"},
		{"negative", fleetco, user + `,"quotas":{"devices":-1}}`, nil, 400, "VALIDATION_FAILED", ""},
		{"above the bound", admin, `{"type":"manager","quotas":{"devices":1000000001}}`, nil, 400, "VALIDATION_FAILED", ""},
		{"huge", fleetco, user + `,"quotas":{"devices":99999999999999999999}}`, nil, 400, "INVALID_BODY", ""},
		{"not an integer", fleetco, user + `,"quotas":{"devices":1.5}}`, nil, 400, "INVALID_BODY", ""},
		{"a string", fleetco, user + `,"quotas":{"devices":"5"}}`, nil, 400, "INVALID_BODY", ""},
		{"an unknown quota", fleetco, user + `,"quotas":{"drivers":1}}`, nil, 400, "INVALID_BODY", ""},
		{"not an object", fleetco, user + `,"quotas":[1]}`, nil, 400, "INVALID_BODY", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := create(t, c.token, c.body)
			if c.want != nil {
				if got := limits(t, r); !reflect.DeepEqual(got, c.want) {
					t.Fatalf("%s: quotas %v, want %v", c.body, got, c.want)
				}
				return
			}
			if r.status != c.status || r.errorCode(t) != c.code {
				t.Fatalf("%s: %d %s, want %d %s %s", c.body, r.status, r.raw, c.status, c.code, c.reason)
			}
			if c.reason != "" {
				if got := r.body["error"].(map[string]any)["details"].(map[string]any)["reason"]; got != c.reason {
					t.Fatalf("%s: reason %v, want %s", c.body, got, c.reason)
				}
			}
		})
	}

	// A creator whose own limit is above the platform default gives the
	// default (stored as none, following the default), not its own.
	if r := a.send(http.MethodPatch, fmt.Sprintf("/api/v2/accounts/%d", fleetcoID), admin, `{"quotas":{"tokens":5000}}`); r.status != http.StatusOK {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	r := create(t, fleetco, user+`}`)
	if got := limits(t, r)["tokens"]; got != 1000.0 {
		t.Fatalf("tokens of a customer of a creator allowed 5000: %v, want the default 1000", got)
	}
	var stored *int64
	if err := a.db.NewRaw("SELECT quota_tokens FROM accounts WHERE id = ?", int64(r.data(t)["id"].(float64))).Scan(context.Background(), &stored); err != nil || stored != nil {
		t.Fatalf("stored tokens override %v (%v), want none", stored, err)
	}

	// The created customer is held to what it got: its third device is refused.
	customer := r.data(t)["username"].(string)
	tok := a.mint(t, fleetco, map[string]any{"name": "customer", "permissions": []string{"*"}, "account_id": a.accountID(t, customer)}).secret
	for i := range 3 {
		r := a.send(http.MethodPost, "/api/v2/objects", tok, fmt.Sprintf(`{"imei":"35693803565%04d","name":"Van %d","account_id":%d}`, i, i, a.accountID(t, customer)))
		if want := map[bool]int{true: 201, false: 403}[i < 2]; r.status != want {
			t.Fatalf("device %d of a customer held to 2: %d %s", i, r.status, r.raw)
		}
	}
}
