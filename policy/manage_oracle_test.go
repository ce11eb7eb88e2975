package policy

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/tenancy"
)

// The escalation oracle: an independent reading of docs/design.md §9 in Go,
// written from its text and not from the Rego, compared with
// DecideManagement on generated cases: every caller type × action ×
// target relation × field change, on random trees.

const (
	oracleSeed  = 20261212
	oracleTrees = 6
)

// oNode is an account of a generated tree.
type oNode struct {
	id, manager int64 // manager 0: none
	typ         string
	devices     []string
}

type oTree struct {
	nodes map[int64]*oNode
	ids   []int64
}

// newOracleTree builds a random tree: admins at the top; managers at the
// top, under an admin or (odd but stored) under a manager; users under
// managers, at the top and under an admin; subaccounts under users and
// one under a manager. Users and managers own devices.
func newOracleTree(r *rand.Rand) *oTree {
	t := &oTree{nodes: map[int64]*oNode{}}
	next := int64(1)
	add := func(typ string, manager int64) *oNode {
		n := &oNode{id: next, manager: manager, typ: typ}
		next++
		if typ == "user" || typ == "manager" {
			for i := range 1 + r.IntN(3) {
				n.devices = append(n.devices, fmt.Sprintf("dev-%d-%d", n.id, i))
			}
		}
		t.nodes[n.id] = n
		t.ids = append(t.ids, n.id)
		return n
	}
	pick := func(ns []*oNode) *oNode { return ns[r.IntN(len(ns))] }
	admins := []*oNode{add("admin", 0), add("admin", 0)}
	var managers []*oNode
	for range 2 + r.IntN(3) {
		boss := int64(0)
		if r.IntN(2) == 0 {
			boss = pick(admins).id
		}
		managers = append(managers, add("manager", boss))
	}
	managers = append(managers, add("manager", pick(managers).id))
	var users []*oNode
	for _, m := range managers {
		for range 1 + r.IntN(3) {
			users = append(users, add("user", m.id))
		}
	}
	users = append(users, add("user", 0), add("user", pick(admins).id))
	for _, u := range users {
		for range r.IntN(3) {
			add("subaccount", u.id)
		}
	}
	add("subaccount", pick(managers).id)
	add("user", pick(users).id) // a user under a user: no rule may treat it as a subaccount
	return t
}

// up returns the accounts above id, nearest first.
func (t *oTree) up(id int64) []*oNode {
	var out []*oNode
	for n := t.nodes[id]; n.manager != 0; n = t.nodes[n.manager] {
		out = append(out, t.nodes[n.manager])
	}
	return out
}

func (t *oTree) chain(id int64) []AncestorInput {
	out := []AncestorInput{}
	for _, a := range t.up(id) {
		out = append(out, AncestorInput{ID: a.id, Type: a.typ, Active: true})
	}
	return out
}

// relation names how target stands to caller.
func (t *oTree) relation(caller, target int64) string {
	c, x := t.nodes[caller], t.nodes[target]
	switch {
	case caller == target:
		return "self"
	case x.manager == caller:
		return "child"
	case x.manager != 0 && t.nodes[x.manager].manager == caller:
		return "grandchild"
	case c.manager == target:
		return "parent"
	case c.manager != 0 && x.manager == c.manager:
		return "sibling"
	}
	for _, a := range t.up(target) {
		if a.id == caller {
			return "descendant"
		}
	}
	for _, a := range t.up(caller) {
		if a.id == target {
			return "ancestor"
		}
	}
	return "other_tenant"
}

// oCase is one generated management request.
type oCase struct {
	caller     *oNode
	active     bool
	expired    bool
	privileges []string
	token      ManagementToken
	action     string
	target     *oNode // nil: an account created at the top
	relation   string
	change     map[string]any
	owned      []string
	// limit is the caller's own account rate limit (input.limits); nil:
	// none.
	limit *int
}

// §9 in Go. Each function cites the sentence it implements.

// oUsable: "An account with active = false, or ... expired, cannot use the
// API" (§2); its type must be one of the four.
func oUsable(c oCase) bool {
	return c.active && !c.expired && slices.Contains([]string{"admin", "manager", "user", "subaccount"}, c.caller.typ)
}

// oManages: "an admin manages every account; a manager itself, the
// accounts it manages and their subaccounts; a user itself and its
// subaccounts; a subaccount itself."
func oManages(t *oTree, c oCase, x *oNode) bool {
	if !oUsable(c) {
		return false
	}
	me := c.caller
	switch {
	case me.typ == "admin", x.id == me.id:
		return true
	case me.typ == "manager":
		return x.manager == me.id || x.typ == "subaccount" && x.manager != 0 && t.nodes[x.manager].manager == me.id
	case me.typ == "user":
		return x.typ == "subaccount" && x.manager == me.id
	}
	return false
}

// oMayCreate: "an admin creates managers and users; a manager creates
// users under itself and subaccounts under its users; a user creates
// subaccounts under itself; a subaccount creates nothing. Nobody creates
// an admin." With manager_id "null or an admin for a manager or user an
// admin creates; ... never a manager for a manager", and §2's fixed
// levels: "a user at the top or directly under a manager or an admin".
func oMayCreate(c oCase) bool {
	if !oUsable(c) {
		return false
	}
	typ, _ := c.change["type"].(string)
	mid, _ := c.change["manager_id"].(int64)
	under := c.target
	if under == nil && mid != 0 || under != nil && mid != under.id {
		return false
	}
	me := c.caller
	switch me.typ {
	case "admin":
		return typ == "manager" && (under == nil || under.typ == "admin") ||
			typ == "user" && (under == nil || under.typ == "admin" || under.typ == "manager")
	case "manager":
		return under != nil && (typ == "user" && under.id == me.id || typ == "subaccount" && under.typ == "user" && under.manager == me.id)
	case "user":
		return typ == "subaccount" && under != nil && under.id == me.id
	}
	return false
}

// oMintWithin: "A token is minted only for the caller's own account or an
// account below it whose data and management scopes are contained in the
// caller's" (§9). The scopes are computed on the tree from §2 and §9
// (oDataScope, oManages), not from the policy; an admin's scopes hold
// every account, all of which count as below it.
func oMintWithin(t *oTree, c oCase) bool {
	x := c.target
	if x.id == c.caller.id || c.caller.typ == "admin" {
		return true
	}
	below := slices.ContainsFunc(t.up(x.id), func(a *oNode) bool { return a.id == c.caller.id })
	as := func(n *oNode) oCase { return oCase{caller: n, active: true} }
	for _, id := range t.ids {
		n := t.nodes[id]
		if oDataScope(x, n) && !oDataScope(c.caller, n) || oManages(t, as(x), n) && !oManages(t, as(c.caller), n) {
			return false
		}
	}
	return below
}

// oDataScope: whose rows account a sees (§2's table): an admin every
// row; a manager its own and those of every account whose manager_id is
// it; a user its own; a subaccount (a part of) its parent's.
func oDataScope(a, owner *oNode) bool {
	switch a.typ {
	case "admin":
		return true
	case "manager":
		return owner.id == a.id || owner.manager == a.id
	case "user":
		return owner.id == a.id
	case "subaccount":
		return owner.id == a.manager
	}
	return false
}

func oHeld(c oCase) []string {
	if c.caller.typ == "subaccount" {
		var out []string
		for _, p := range c.privileges {
			if p == "reports" || p == "event_notifications" {
				out = append(out, p)
			}
		}
		return out
	}
	return []string{"reports", "event_notifications"}
}

// oCovered: "`*` covers all; `GET *` covers every GET route; a route
// covers itself".
func oCovered(held []string, p string) bool {
	if slices.Contains(held, "*") || slices.Contains(held, p) {
		return true
	}
	for _, h := range held {
		if m, ok := cutSuffix(h, " *"); ok && len(p) > len(m)+2 && p[:len(m)+2] == m+" /" {
			return true
		}
	}
	return false
}

func cutSuffix(s, suffix string) (string, bool) {
	if len(s) >= len(suffix) && s[len(s)-len(suffix):] == suffix {
		return s[:len(s)-len(suffix)], true
	}
	return "", false
}

// oDecide is the oracle's answer: "" (allowed) or the reason, in the
// precedence of docs/policy.md.
func oDecide(t *oTree, c oCase) string {
	known := []string{ActionAccountCreate, ActionAccountUpdate, ActionGrantsReplace, ActionObjectCreate, ActionObjectMove, ActionTokenCreate, ActionTokenRevoke, ActionUsageRead, ActionAccountErase}
	if !slices.Contains(known, c.action) {
		return "unknown_action"
	}
	if !(c.action == ActionAccountCreate && c.target == nil) && !oManages(t, c, c.target) {
		return "outside_scope"
	}
	if c.action == ActionTokenCreate && !oMintWithin(t, c) {
		return "outside_scope"
	}
	if c.action == ActionAccountCreate && !oMayCreate(c) {
		return "not_below_caller"
	}
	if c.action == ActionGrantsReplace && c.target.typ != "subaccount" || (c.action == ActionObjectCreate || c.action == ActionObjectMove) && c.target.typ == "subaccount" {
		return "wrong_target_type"
	}
	// docs/design.md §12: "an admin or the account's manager" erases an account;
	// an admin account is the operator's own and is never erased.
	if c.action == ActionAccountErase && c.target.typ == "admin" {
		return "wrong_target_type"
	}
	// "PATCH accepts only the fields listed"; "type and manager_id never
	// change through the API".
	if c.action == ActionAccountUpdate {
		for k := range c.change {
			if !slices.Contains([]string{"email", "active", "read_only", "account_expire", "account_expire_dt", "privileges", "rate_limit", "quotas", "timezone"}, k) {
				return "immutable_field"
			}
		}
	}
	// "Nobody changes its own active, read_only, account_expire,
	// account_expire_dt or privileges"; its own devices are its limits too.
	if c.target != nil && c.target.id == c.caller.id {
		// "never one's own account" (docs/design.md §12)
		if c.action == ActionGrantsReplace || c.action == ActionAccountErase {
			return "own_account"
		}
		if c.action == ActionAccountUpdate {
			for _, k := range []string{"active", "read_only", "account_expire", "account_expire_dt", "privileges", "rate_limit", "quotas"} {
				if _, ok := c.change[k]; ok {
					return "own_account"
				}
			}
		}
	}
	// "never above the setter's own account limit when it has one"
	// (docs/design.md §12); none (null) is above any limit.
	if (c.action == ActionAccountCreate || c.action == ActionAccountUpdate) && c.limit != nil {
		if v, ok := c.change["rate_limit"]; ok {
			if n, isInt := v.(int); !isInt || n > *c.limit {
				return "exceeds_account"
			}
		}
	}
	// §12: quotas are set "never above the setter's own" (an admin sets
	// any; unlimited is above every number), and a created account's are
	// "at most its creator's" (issue 34 item 3).
	if q, ok := c.change["quotas"].(map[string]any); ok && (c.action == ActionAccountCreate || c.action == ActionAccountUpdate) && c.caller.typ != "admin" {
		for _, name := range slices.Sorted(maps.Keys(q)) {
			own := oCallerQuotas(c)[name]
			if own == nil {
				continue
			}
			if v, ok := q[name].(int64); !ok || v > *own {
				return "exceeds_own_quota"
			}
		}
	}
	// "A subaccount's privileges are a subset of reports,
	// event_notifications held by the account that grants them".
	if c.action == ActionAccountCreate || c.action == ActionAccountUpdate {
		privs, _ := c.change["privileges"].([]any)
		for _, p := range privs {
			if !slices.Contains(oHeld(c), p.(string)) {
				return "privilege_not_held"
			}
		}
	}
	// "its devices belong to its parent".
	if c.action == ActionGrantsReplace {
		for _, d := range c.change["imei"].([]any) {
			if !slices.Contains(c.owned, d.(string)) {
				return "device_not_owned"
			}
		}
	}
	// "A new token never holds more than the token that creates it".
	if c.action == ActionTokenCreate {
		for _, p := range c.change["permissions"].([]any) {
			if !oCovered(c.token.Permissions, p.(string)) {
				return "exceeds_token"
			}
		}
		if c.token.ExpiresAt != nil {
			s, ok := c.change["expires_at"].(string)
			if !ok {
				return "exceeds_token"
			}
			at, _ := time.Parse(time.RFC3339Nano, s)
			if at.After(*c.token.ExpiresAt) {
				return "exceeds_token"
			}
		}
		if c.token.RateLimit != nil {
			n, ok := c.change["rate_limit"].(int)
			if !ok || n > *c.token.RateLimit {
				return "exceeds_token"
			}
		}
		// "A token of MaxTokenGeneration mints no more" (the lineage's
		// bound, docs/design.md §9 and docs/decisions.md).
		if c.token.Generation >= tenancy.MaxTokenGeneration {
			return "exceeds_token"
		}
	}
	return ""
}

var (
	oracleActions = []string{ActionAccountCreate, ActionAccountUpdate, ActionGrantsReplace, ActionObjectCreate,
		ActionTokenCreate, ActionTokenRevoke, "account.delete"}
	// oracleLaterActions are actions added after the oracle's random
	// stream was fixed: their cases come from a stream of their own
	// (oracleCases), so that the cases of the others stay what they were.
	oracleLaterActions = []string{ActionObjectMove, ActionAccountErase}
	// oracleUsageActions are the reads the decision knows (docs/design.md §12:
	// "GET /usage in the management scope"), from a third stream.
	oracleUsageActions = []string{ActionUsageRead}
	oracleRelations    = []string{"self", "child", "grandchild", "sibling", "parent", "ancestor", "descendant", "other_tenant", "top"}
	oracleHeld         = [][]string{{"*"}, {"GET *"}, {"GET /services", "POST /tokens"}, {"GET *", "POST /tokens"}, {"POST *", "GET /events/{id}"}}
	oracleAsked        = []string{"*", "GET *", "POST *", "GET /services", "GET /events/{id}", "POST /passengers", "DELETE /tokens/{id}", "POST /tokens"}
	oracleUpdates      = []map[string]any{
		{"email": "x@example.com"}, {"active": false}, {"read_only": true}, {"account_expire": true},
		{"account_expire_dt": "2026-12-31"}, {"privileges": []any{"reports"}}, {"privileges": []any{"reports", "event_notifications"}},
		{"privileges": []any{"bogus"}}, {"type": "admin"}, {"manager_id": int64(1)}, {"username": "root"},
		{"email": "y@example.com", "active": true},
		{"rate_limit": 50}, {"rate_limit": 100}, {"rate_limit": 101}, {"rate_limit": nil},
		{"quotas": map[string]any{"devices": int64(5)}}, {"quotas": map[string]any{"devices": int64(6), "passengers": int64(100)}},
		{"quotas": map[string]any{"tokens": nil}}, {"quotas": map[string]any{"subaccounts": int64(1000), "tokens": int64(0)}},
		{"timezone": "Europe/Lisbon"},
	}
	oracleExpiry = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	// oracleCreateQuotas are the quotas of account.create cases: within
	// the creator's own limits, and above them in two ways.
	oracleCreateQuotas = []map[string]any{
		{"subaccounts": nil, "tokens": int64(10), "devices": int64(5), "passengers": nil},
		{"subaccounts": int64(3), "tokens": int64(10), "devices": int64(6), "passengers": nil},
		{"subaccounts": int64(0), "tokens": int64(0), "devices": int64(0), "passengers": int64(0)},
		{"subaccounts": nil, "tokens": nil, "devices": int64(5), "passengers": int64(9)},
		{"subaccounts": int64(1000), "tokens": int64(1), "devices": int64(1), "passengers": int64(1000)},
	}
)

// oracleCases generates the cases of one tree: for every caller type,
// action, relation and change variant, one random caller of that type and
// one random target of that relation (combinations the tree lacks are
// skipped).
func oracleCases(t *oTree, r *rand.Rand) []oCase {
	out := oracleCasesOf(t, r, oracleActions)
	// A stream of its own, seeded from the tree (not drawn from r).
	later := rand.New(rand.NewPCG(oracleSeed^uint64(len(t.ids)), uint64(len(out))))
	out = append(out, oracleCasesOf(t, later, oracleLaterActions)...)
	usage := rand.New(rand.NewPCG(oracleSeed^uint64(len(t.ids))^0x75736167, uint64(len(out))))
	return append(out, oracleCasesOf(t, usage, oracleUsageActions)...)
}

// oracleCasesOf generates oracleCases' cases of the given actions with r.
func oracleCasesOf(t *oTree, r *rand.Rand, actions []string) []oCase {
	var out []oCase
	byType := map[string][]*oNode{}
	for _, id := range t.ids {
		n := t.nodes[id]
		byType[n.typ] = append(byType[n.typ], n)
	}
	for _, typ := range accountTypes() {
		for _, action := range actions {
			for _, rel := range oracleRelations {
				for _, change := range oracleChanges(r, action) {
					caller := byType[typ][r.IntN(len(byType[typ]))]
					c := oCase{caller: caller, active: r.IntN(12) != 0, expired: r.IntN(15) == 0,
						action: action, relation: rel, change: change}
					if caller.id%2 == 0 { // not from r: see oracleChanges
						c.limit = ptr(100)
					}
					for _, p := range []string{"reports", "event_notifications", "bogus"} {
						if r.IntN(2) == 0 {
							c.privileges = append(c.privileges, p)
						}
					}
					c.token = ManagementToken{ID: 1, Permissions: oracleHeld[r.IntN(len(oracleHeld))]}
					if r.IntN(3) > 0 {
						c.token.ExpiresAt = &oracleExpiry
					}
					if r.IntN(3) > 0 {
						c.token.RateLimit = ptr(100)
					}
					if r.IntN(6) == 0 {
						c.token.Generation = tenancy.MaxTokenGeneration - 1 + r.IntN(3)
					}
					if rel != "top" {
						var candidates []*oNode
						for _, id := range t.ids {
							if t.relation(caller.id, id) == rel {
								candidates = append(candidates, t.nodes[id])
							}
						}
						if len(candidates) == 0 {
							continue
						}
						c.target = candidates[r.IntN(len(candidates))]
					} else if action != ActionAccountCreate {
						continue
					}
					c.fill(t, r)
					out = append(out, c)
				}
			}
		}
	}
	return out
}

// oracleChanges are the change variants of an action; fill completes
// them for the chosen target.
func oracleChanges(r *rand.Rand, action string) []map[string]any {
	switch action {
	case ActionAccountCreate:
		var out []map[string]any
		for i, typ := range []string{"admin", "manager", "user", "subaccount"} {
			privs := [][]any{{}, {"reports"}, {"bogus"}}[r.IntN(3)]
			// the rate limit varies with the type, not from r, so that the
			// random stream of the other fields stays what it was
			out = append(out, map[string]any{"type": typ, "username": "new", "privileges": privs, "rate_limit": []any{nil, 100, 101, 50}[i]})
		}
		return out
	case ActionAccountUpdate:
		return oracleUpdates
	case ActionGrantsReplace:
		return []map[string]any{{"imei": "owned"}, {"imei": "some_foreign"}, {"imei": "empty"}}
	case ActionTokenCreate:
		var out []map[string]any
		for range 6 {
			var perms []any
			for _, p := range oracleAsked {
				if r.IntN(4) == 0 {
					perms = append(perms, p)
				}
			}
			var exp any
			switch r.IntN(4) {
			case 0:
				exp = oracleExpiry.Add(-time.Second).Format(time.RFC3339Nano)
			case 1:
				exp = oracleExpiry.Format(time.RFC3339Nano)
			case 2:
				exp = oracleExpiry.Add(time.Nanosecond).Format(time.RFC3339Nano)
			}
			var rate any = []int{99, 100, 101}[r.IntN(3)]
			if r.IntN(5) == 0 {
				rate = nil
			}
			if perms == nil {
				perms = []any{}
			}
			out = append(out, map[string]any{"permissions": perms, "expires_at": exp, "rate_limit": rate})
		}
		return out
	}
	return []map[string]any{{}}
}

// fill completes a case's change for its target: a new account's
// manager_id, and the devices of a grant.
func (c *oCase) fill(t *oTree, r *rand.Rand) {
	change := map[string]any{}
	for k, v := range c.change {
		change[k] = v
	}
	c.change = change
	switch c.action {
	case ActionAccountCreate:
		// the new account's limits, all four as the Go side fills them
		// in (oCallerQuotas: tokens 10, devices 5), varying with the
		// caller, not from r (the stream of the other fields stays)
		change["quotas"] = oracleCreateQuotas[c.caller.id%int64(len(oracleCreateQuotas))]
		change["manager_id"] = int64(0)
		if c.target != nil {
			change["manager_id"] = c.target.id
			if r.IntN(20) == 0 { // a manager_id that is not the target
				change["manager_id"] = c.target.id + 1
			}
		}
	case ActionGrantsReplace:
		var parent []string
		if c.target.manager != 0 {
			parent = t.nodes[c.target.manager].devices
		}
		c.owned = parent
		imeis := []any{}
		switch change["imei"] {
		case "owned":
			for _, d := range parent {
				if r.IntN(2) == 0 {
					imeis = append(imeis, d)
				}
			}
		case "some_foreign":
			for _, d := range parent {
				imeis = append(imeis, d)
			}
			imeis = append(imeis, fmt.Sprintf("dev-%d-0", t.ids[r.IntN(len(t.ids))]))
		}
		change["imei"] = imeis
	}
}

// oCallerQuotas are a caller's own quota limits in force: every caller but
// an admin has tokens 10 and devices 5, the others unlimited.
func oCallerQuotas(c oCase) map[string]*int64 {
	ten, five := int64(10), int64(5)
	if c.caller.typ == "admin" {
		return map[string]*int64{"subaccounts": nil, "tokens": nil, "devices": nil, "passengers": nil}
	}
	return map[string]*int64{"subaccounts": nil, "tokens": &ten, "devices": &five, "passengers": nil}
}

func (c oCase) input(t *oTree) ManagementInput {
	in := ManagementInput{
		Account: AccountInput{ID: c.caller.id, Type: c.caller.typ, ManagerID: c.caller.manager, Active: c.active,
			Expired: c.expired, Privileges: c.privileges, Chain: t.chain(c.caller.id), ChainComplete: true},
		Token:  c.token,
		Limits: AccountLimits{RateLimit: c.limit},
		Action: c.action,
		Change: c.change,
	}
	if in.Account.Privileges == nil {
		in.Account.Privileges = []string{}
	}
	if _, ok := c.change["quotas"]; ok && (c.action == ActionAccountCreate || c.action == ActionAccountUpdate) {
		in.Limits.Quotas = oCallerQuotas(c)
	}
	if c.target != nil {
		in.Target = &TargetInput{ID: c.target.id, Type: c.target.typ, ManagerID: c.target.manager,
			Chain: t.chain(c.target.id), ChainComplete: true, OwnedIMEI: c.owned}
	}
	return in
}

// TestManagementOracle compares DecideManagement with the oracle on every
// generated case, and requires every reason and allowed writes of every
// action to occur, so that the comparison covers each rule.
func TestManagementOracle(t *testing.T) {
	res := runOracle(t, engine(t), oracleTrees, 10)
	t.Logf("%d cases over %d trees; allowed by action %v; denied by reason %v; by caller type %v",
		res.total, oracleTrees, res.allowed, res.reasons, res.perType)
	if res.total < 1000 {
		t.Errorf("only %d cases, want at least 1000", res.total)
	}
	for _, reason := range []string{"unknown_action", "outside_scope", "not_below_caller", "wrong_target_type", "immutable_field",
		"own_account", "exceeds_account", "exceeds_own_quota", "privilege_not_held", "device_not_owned", "exceeds_token"} {
		if res.reasons[reason] == 0 {
			t.Errorf("no case is denied for %s", reason)
		}
	}
	for _, action := range append(slices.DeleteFunc(slices.Clone(oracleActions), func(a string) bool { return a == "account.delete" }), oracleLaterActions...) {
		if res.allowed[action] == 0 {
			t.Errorf("no %s is ever allowed", action)
		}
	}
}

// TestManagementOracleCatchesMutations: the oracle comparison fails for a
// policy with one rule weakened or tightened (its Rego tests removed, so
// that New accepts it): the comparison can fail, and does for each rule.
func TestManagementOracleCatchesMutations(t *testing.T) {
	mutations := map[string][2]string{
		"rate limit equal refused": {"input.change.rate_limit <= input.token.rate_limit", "input.change.rate_limit < input.token.rate_limit"},
		"expiry later allowed": {"time.parse_rfc3339_ns(input.change.expires_at) <= time.parse_rfc3339_ns(input.token.expires_at)",
			"time.parse_rfc3339_ns(input.change.expires_at) >= 0"},
		"user manages any child":                         {"input.account.type == \"user\"\n\ta.type == \"subaccount\"\n", "input.account.type == \"user\"\n"},
		"own privileges changeable":                      {`own_limits := {"active", "read_only", "account_expire", "account_expire_dt", "privileges", "rate_limit", "quotas"}`, `own_limits := {"active", "read_only", "account_expire", "account_expire_dt", "rate_limit", "quotas"}`},
		"own rate limit changeable":                      {`own_limits := {"active", "read_only", "account_expire", "account_expire_dt", "privileges", "rate_limit", "quotas"}`, `own_limits := {"active", "read_only", "account_expire", "account_expire_dt", "privileges", "quotas"}`},
		"account rate limit above one's own":             {"input.change.rate_limit <= input.limits.rate_limit", "input.change.rate_limit <= input.limits.rate_limit + 1"},
		"account rate limit cleared by a limited caller": {"account_rate_within if input.limits.rate_limit == null", "account_rate_within if input.change.rate_limit == null"},
		"manager creates users under others":             {"input.change.type == \"user\"\n\tunder_target\n\tinput.target.id == input.account.id\n", "input.change.type == \"user\"\n\tunder_target\n"},
		"devices unchecked":                              {"not d in object.get(input.target, \"owned_imei\", [])", "d == false"},
		"GET * covers POST routes":                       {`sprintf("%s *", [method]) in input.token.permissions`, `"GET *" in input.token.permissions`},
		"own quotas changeable":                          {`own_limits := {"active", "read_only", "account_expire", "account_expire_dt", "privileges", "rate_limit", "quotas"}`, `own_limits := {"active", "read_only", "account_expire", "account_expire_dt", "privileges", "rate_limit"}`},
		"quota above one's own":                          {"v <= input.limits.quotas[q]", "v >= 0"},
		"a created account's quotas unchecked": {"input.action in {\"account.create\", \"account.update\"}\n\tsome q, v in",
			"input.action == \"account.update\"\n\tsome q, v in"},
		"admin creates a manager under a manager": {"input.change.type == \"user\"\n\tunder_target\n\tinput.target.type == \"manager\"",
			"input.change.type in {\"manager\", \"user\"}\n\tunder_target\n\tinput.target.type == \"manager\""},
		"a manager mints for a sub-manager": {`input.target.type in {"user", "subaccount"}`, `input.target.type in {"user", "subaccount", "manager"}`},
	}
	for name, m := range mutations {
		t.Run(name, func(t *testing.T) {
			dir := copyPolicy(t)
			file := dir + "/fleet/manage/manage.rego"
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			mutated := strings.Replace(string(src), m[0], m[1], 1)
			if mutated == string(src) {
				t.Fatalf("mutation %q does not apply", m[0])
			}
			if err := os.WriteFile(file, []byte(mutated), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(dir + "/fleet/manage/manage_test.rego"); err != nil {
				t.Fatal(err)
			}
			e := newEngine(t, Options{Dir: dir, CacheSize: -1})
			if res := runOracle(t, e, 2, 0); res.failures == 0 {
				t.Errorf("the oracle agrees with a policy where %s (%d cases)", name, res.total)
			}
		})
	}
}

type oracleResult struct {
	total, failures           int
	reasons, allowed, perType map[string]int
}

// runOracle compares e with the oracle on trees random trees (seeded) and
// reports up to report disagreements as test errors.
func runOracle(t *testing.T, e *Engine, trees, report int) oracleResult {
	t.Helper()
	ctx := context.Background()
	r := rand.New(rand.NewPCG(oracleSeed, oracleSeed))
	res := oracleResult{reasons: map[string]int{}, allowed: map[string]int{}, perType: map[string]int{}}
	for range trees {
		tree := newOracleTree(r)
		for _, c := range oracleCases(tree, r) {
			res.total++
			want := oDecide(tree, c)
			d, err := e.DecideManagement(ctx, c.input(tree))
			if err != nil {
				t.Fatalf("DecideManagement: %v", err)
			}
			got, _ := d.Details["reason"].(string)
			if !d.Allow && got == "" || d.Allow && got != "" {
				t.Fatalf("malformed decision %+v", d)
			}
			if got != want {
				res.failures++
				if res.failures <= report {
					t.Errorf("%s %d (active %t, expired %t, privileges %v) %s on %s %+v, change %v, token %+v: policy %q, oracle %q",
						c.caller.typ, c.caller.id, c.active, c.expired, c.privileges, c.action, c.relation, c.target, c.change, c.token, got, want)
				}
			}
			if want == "" {
				res.allowed[c.action]++
			} else {
				res.reasons[want]++
			}
			res.perType[c.caller.typ]++
		}
	}
	return res
}
