package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/fleetapi/fleetapi/tenancy"
)

// TestManagementScopeTrees pins the condition tree of the management scope
// for every account type (account 7, manager 3): the partial evaluation's
// shapes.
func TestManagementScopeTrees(t *testing.T) {
	e := engine(t)
	text := func(f string, v string) Condition { return Condition{Op: OpEq, Field: f, Value: v} }
	cases := map[string]Scope{
		"admin": {unrestricted: true},
		"manager": {where: &Condition{Op: OpOr, Children: []Condition{
			eq("id", 7), eq("manager_id", 7),
			{Op: OpAnd, Children: []Condition{text("type", "subaccount"), eq("grand_manager_id", 7)}},
		}}},
		"user": {where: &Condition{Op: OpOr, Children: []Condition{
			eq("id", 7),
			{Op: OpAnd, Children: []Condition{text("type", "subaccount"), eq("manager_id", 7)}},
		}}},
		"subaccount": {where: ptr(eq("id", 7))},
	}
	for typ, want := range cases {
		t.Run(typ, func(t *testing.T) {
			got, err := e.ManagementScope(context.Background(), principal(typ))
			if err != nil {
				t.Fatal(err)
			}
			got.key = "" // the cache's (TestManagementScopeCompiled)
			want.resource = ManagementResource
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %s %+v\nwant %s", got, got, want)
			}
		})
	}
}

// TestManagementScopeNone: a caller that cannot use the API, or of an
// unknown type, manages nothing.
func TestManagementScopeNone(t *testing.T) {
	e := engine(t)
	for _, typ := range append(accountTypes(), "reseller", "") {
		for _, mut := range []func(*Input){
			func(in *Input) { in.Account.Active = false },
			func(in *Input) { in.Account.Expired = true },
		} {
			in := principal(typ)
			mut(&in)
			if got, err := e.ManagementScope(context.Background(), in); err != nil || !got.None() {
				t.Errorf("%s %+v: got %s, %v; want no account", typ, in.Account, got, err)
			}
		}
	}
	if got, err := e.ManagementScope(context.Background(), principal("reseller")); err != nil || !got.None() {
		t.Errorf("unknown type: %s, %v", got, err)
	}
}

// TestManagementScopeCompiled: the management scope goes through the
// schema's check at start-up and the cache like the row scopes (one Key
// per account), and is not handed to the schema on a request; New refuses
// a Schema that rejects it.
func TestManagementScopeCompiled(t *testing.T) {
	var seen []Resource
	e := newEngine(t, Options{Schema: checkingSchema{ResourceList(testResources), func(s Scope) error { seen = append(seen, s.Resource()); return nil }}})
	n := len(seen)
	if n == 0 || seen[n-1] != ManagementResource {
		t.Fatalf("the schema checked %v at start-up, not the management scope last", seen)
	}
	got, err := e.ManagementScope(context.Background(), principal("subaccount"))
	if err != nil || got.String() != "id = 7" || got.Key() == "" || len(seen) != n {
		t.Fatalf("ManagementScope: %v, %v, key %q (schema asked %v on a request)", got, err, got.Key(), seen[n:])
	}
	again, err := e.ManagementScope(context.Background(), principal("subaccount").at("POST", "/tokens"))
	if err != nil || again.Key() != got.Key() || again.where != got.where || len(seen) != n {
		t.Errorf("the same account compiled again: %v (key %q, %q)", err, again.Key(), got.Key())
	}
	_, err = New(context.Background(), Options{Schema: checkingSchema{ResourceList(testResources), func(s Scope) error {
		if _, ok := s.Where(); ok && s.Resource() == ManagementResource {
			return errors.New("column grand_manager_id not allowed")
		}
		return nil
	}}})
	if err == nil || !strings.Contains(err.Error(), "management scope for a manager principal") {
		t.Errorf("New: %v", err)
	}
}

// TestManagementRulesRequired: a policy set without fleet.manage, or a
// tenant resource named like the management scope, does not start.
func TestManagementRulesRequired(t *testing.T) {
	dir := copyPolicy(t)
	if err := os.RemoveAll(filepath.Join(dir, "fleet/manage")); err != nil {
		t.Fatal(err)
	}
	if _, err := New(context.Background(), Options{Dir: dir, Schema: ResourceList(testResources)}); err == nil ||
		!strings.Contains(err.Error(), "data.fleet.manage.decision") {
		t.Errorf("New without fleet.manage: %v", err)
	}
	if _, err := New(context.Background(), Options{Schema: ResourceList(append(testResources[:4:4], ManagementResource))}); err == nil {
		t.Error("New accepted a tenant resource named accounts")
	}
}

// TestDecideManagementLog: a management decision is logged with its
// action, target and reason, is never cached, and a malformed answer is an
// error.
func TestDecideManagementLog(t *testing.T) {
	var buf bytes.Buffer
	e := newEngine(t, Options{DecisionLog: &buf})
	in := NewManagementInput(tenancy.Principal{
		Token:   tenancy.Token{ID: 42, Permissions: []string{"GET *"}},
		Account: tenancy.Account{ID: 3, Type: tenancy.User, ManagerID: 2, Active: true},
	}, time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC), 1200)
	in.Action = ActionTokenCreate
	in.Target = &TargetInput{ID: 3, Type: "user", ManagerID: 2, ChainComplete: true}
	in.Change = TokenChange(3, "ci", []string{"POST /passengers"}, nil, ptr(10))
	for range 2 {
		d, err := e.DecideManagement(context.Background(), in)
		if err != nil || d.Allow || d.Code != CodeManagementDenied || d.Details["reason"] != "exceeds_token" ||
			d.Details["permission"] != "POST /passengers" {
			t.Fatalf("DecideManagement: %+v, %v", d, err)
		}
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d log lines", len(lines))
	}
	var rec DecisionRecord
	if err := json.Unmarshal([]byte(lines[1]), &rec); err != nil {
		t.Fatal(err)
	}
	if c := rec.Custom; c.Action != ActionTokenCreate || c.TargetAccountID != 3 || c.Reason != "exceeds_token" || c.Code != CodeManagementDenied ||
		c.Cached || c.TokenID != 42 || c.AccountID != 3 || c.Route != "" || rec.Revision != e.Revision() {
		t.Errorf("record %+v", rec)
	}
	in.Change = TokenChange(3, "ci", []string{"GET /services"}, nil, ptr(10))
	if d, err := e.DecideManagement(context.Background(), in); err != nil || !d.Allow {
		t.Errorf("allowed token: %+v, %v", d, err)
	}
	if !strings.Contains(buf.String(), `"code":"ALLOW"`) {
		t.Errorf("no ALLOW line:\n%s", buf.String())
	}
	in.Change = map[string]any{"bad": make(chan int)}
	if _, err := e.DecideManagement(context.Background(), in); err == nil {
		t.Error("a change that is not JSON was decided")
	}
	if !strings.Contains(buf.String(), `"code":"POLICY_ERROR"`) {
		t.Errorf("no POLICY_ERROR line:\n%s", buf.String())
	}
}

// TestManagementDecisionShape: a denial that is not MANAGEMENT_DENIED
// with a reason is an error (fail closed).
func TestManagementDecisionShape(t *testing.T) {
	for _, doc := range []string{
		`{"allow": false, "code": "MANAGEMENT_DENIED", "details": {}}`,
		`{"allow": false, "code": "OTHER", "details": {"reason": "x"}}`,
		`{"allow": "yes"}`,
	} {
		rs, err := rego.New(rego.Query("x = " + doc)).Eval(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		rs[0].Expressions[0].Value = rs[0].Bindings["x"]
		if _, err := managementDecisionFrom(rs); !errors.Is(err, ErrUndefined) {
			t.Errorf("%s: %v", doc, err)
		}
	}
}

// TestNewManagementInput: the caller's token limits and the target are
// built from the stored facts; the rate limit falls back to the default.
func TestNewManagementInput(t *testing.T) {
	today := time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC)
	exp := time.Date(2026, 6, 1, 2, 0, 0, 0, time.FixedZone("x", 7200))
	p := tenancy.Principal{Token: tenancy.Token{ID: 1, Permissions: []string{"*"}, ExpiresAt: &exp, RateLimit: 30},
		Account: tenancy.Account{ID: 3, Type: tenancy.User, ManagerID: 2, Active: true}}
	in := NewManagementInput(p, today, 1200)
	if *in.Token.RateLimit != 30 || !in.Token.ExpiresAt.Equal(exp) || in.Token.ExpiresAt.Location() != time.UTC {
		t.Errorf("token %+v", in.Token)
	}
	p.Token.RateLimit = 0
	if in := NewManagementInput(p, today, 1200); *in.Token.RateLimit != 1200 {
		t.Errorf("default rate limit: %v", *in.Token.RateLimit)
	}
	if in := NewManagementInput(p, today, 0); in.Token.RateLimit != nil {
		t.Errorf("no limit at all: %v", *in.Token.RateLimit)
	}
	target := NewTargetInput(tenancy.Account{ID: 5, Type: tenancy.Subaccount, ManagerID: 3},
		[]tenancy.Account{{ID: 3, Type: tenancy.User, ManagerID: 2, Active: true}, {ID: 2, Type: tenancy.Manager, AccountExpire: true, ExpireDate: today.AddDate(0, 0, -1)}}, true, today)
	if target.ID != 5 || target.Type != "subaccount" || target.ManagerID != 3 || !target.ChainComplete ||
		!reflect.DeepEqual(target.Chain, []AncestorInput{{ID: 3, Type: "user", Active: true}, {ID: 2, Type: "manager", Expired: true}}) {
		t.Errorf("target %+v", target)
	}
	c := TokenChange(3, "n", []string{"GET *"}, &exp, nil)
	if c["expires_at"] != "2026-06-01T00:00:00Z" || c["rate_limit"] != nil {
		t.Errorf("change %v", c)
	}
}

// TestManagementInputSchema: the documents DecideManagement evaluates
// match schemas/manage_input.json, and so does its example.
func TestManagementInputSchema(t *testing.T) {
	doc, match := schemaMatcher(t, "schemas/manage_input.json")
	today := time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC)
	exp := today.AddDate(0, 3, 0)
	p := tenancy.Principal{Token: tenancy.Token{ID: 1, Permissions: []string{"GET *"}, ExpiresAt: &exp},
		Account:   tenancy.Account{ID: 3, Type: tenancy.User, ManagerID: 2, Active: true},
		Ancestors: []tenancy.Account{{ID: 2, Type: tenancy.Manager, Active: true}}}
	create := NewManagementInput(p, today, 1200)
	create.Action = ActionAccountCreate
	create.Change = map[string]any{"type": "subaccount", "manager_id": int64(3), "username": "n", "privileges": []string{"reports"}}
	create.Target = NewTargetInput(p.Account, p.Ancestors, true, today)
	top := NewManagementInput(p, today, 0)
	top.Action = ActionAccountCreate
	grants := NewManagementInput(p, today, 1200)
	grants.Action = ActionGrantsReplace
	grants.Target = &TargetInput{ID: 5, Type: "subaccount", ManagerID: 3, ChainComplete: true, OwnedIMEI: []string{"A"}}
	grants.Change = map[string]any{"imei": []string{"A", "B"}}
	object := NewManagementInput(p, today, 1200)
	object.Action = ActionObjectCreate
	object.Target = NewTargetInput(p.Account, p.Ancestors, true, today)
	object.Change = map[string]any{"imei": "356938035643809", "name": "Truck 7", "account_id": int64(3)}
	for i, in := range []ManagementInput{create, top, grants, object} {
		v, err := in.value()
		if err != nil {
			t.Fatal(err)
		}
		generic, err := ast.JSON(v)
		if err != nil {
			t.Fatal(err)
		}
		if ok, errs := match(generic); !ok {
			t.Errorf("input %d does not match the schema: %v", i, errs)
		}
	}
	for i, ex := range doc["examples"].([]any) {
		if ok, errs := match(ex); !ok {
			t.Errorf("example %d does not match the schema: %v", i, errs)
		}
	}
	bad := grants
	bad.Action = "account.delete"
	v, _ := bad.value()
	generic, _ := ast.JSON(v)
	if ok, _ := match(generic); ok {
		t.Error("an unknown action matches the schema")
	}
}

// BenchmarkDecideManagement is the cost of one management decision (never
// cached): a token.create by a user, allowed after every rule ran.
func BenchmarkDecideManagement(b *testing.B) {
	e := newEngine(b, Options{})
	exp := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	p := tenancy.Principal{Token: tenancy.Token{ID: 1, Permissions: []string{"GET *", "POST /tokens"}, ExpiresAt: &exp},
		Account:   tenancy.Account{ID: 3, Type: tenancy.User, ManagerID: 2, Active: true},
		Ancestors: []tenancy.Account{{ID: 2, Type: tenancy.Manager, Active: true}}}
	today := time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC)
	in := NewManagementInput(p, today, 1200)
	in.Action = ActionTokenCreate
	in.Target = NewTargetInput(p.Account, p.Ancestors, true, today)
	in.Change = TokenChange(3, "ci", []string{"GET /services", "GET /events/{id}"}, &exp, ptr(60))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		d, err := e.DecideManagement(ctx, in)
		if err != nil || !d.Allow {
			b.Fatal(d, err)
		}
	}
}

// TestMaxGenerationAgrees: the policy's max_generation is
// tenancy.MaxTokenGeneration, the bound storage loads minters to: a token
// the policy lets mint has a lineage storage loads whole.
func TestMaxGenerationAgrees(t *testing.T) {
	ctx := context.Background()
	q, err := engine(t).cur.Load().prepareEval(ctx, "data.fleet.manage.max_generation")
	if err != nil {
		t.Fatal(err)
	}
	rs, err := q.Eval(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := single(rs).(json.Number); !ok || n.String() != strconv.Itoa(tenancy.MaxTokenGeneration) {
		t.Errorf("data.fleet.manage.max_generation = %v, tenancy.MaxTokenGeneration = %d", single(rs), tenancy.MaxTokenGeneration)
	}
}
