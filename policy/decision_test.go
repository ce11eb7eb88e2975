package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/fleetapi/fleetapi/tenancy"
)

// testRoutes are the API routes, [method, template], from the one list
// of them (tenancy.Routes), so that the table covers every route.
var testRoutes = func() [][2]string {
	var out [][2]string
	for _, r := range tenancy.Routes() {
		out = append(out, [2]string{r.Method, r.Template})
	}
	return out
}()

// state is one variation of a principal's facts.
type state struct {
	name string
	mut  func(*Input)
}

var testStates = []state{
	{"ok", func(*Input) {}},
	{"inactive", func(in *Input) { in.Account.Active = false }},
	{"expired", func(in *Input) { in.Account.Expired = true }},
	{"inactive_expired", func(in *Input) { in.Account.Active = false; in.Account.Expired = true }},
	{"read_only", func(in *Input) { in.Account.ReadOnly = true }},
	{"token_get_all", func(in *Input) { in.Token.Permissions = []string{"GET *"} }},
	{"token_services_only", func(in *Input) { in.Token.Permissions = []string{"GET /services"} }},
	{"token_event_by_id", func(in *Input) { in.Token.Permissions = []string{"GET /events/{id}", "POST /passengers"} }},
	{"token_none", func(in *Input) { in.Token.Permissions = []string{} }},
	{"priv_reports", func(in *Input) { in.Account.Privileges = []string{"reports"} }},
	{"priv_events", func(in *Input) { in.Account.Privileges = []string{"event_notifications"} }},
	{"priv_both_read_only", func(in *Input) {
		in.Account.Privileges = []string{"reports", "event_notifications"}
		in.Account.ReadOnly = true
	}},
	{"read_only_token_none", func(in *Input) { in.Account.ReadOnly = true; in.Token.Permissions = nil }},
	// state flows down the tree (docs/design.md §2): the chain above the account
	{"above_ok", chain(ancestor(5, "user"), ancestor(3, "manager"), ancestor(1, "admin"))},
	{"above_user_inactive", chain(ancestor(5, "user", inactiveA), ancestor(3, "manager"), ancestor(1, "admin"))},
	{"above_user_expired", chain(ancestor(5, "user", expiredA), ancestor(3, "manager"), ancestor(1, "admin"))},
	{"above_user_read_only", chain(ancestor(5, "user", readOnlyA), ancestor(3, "manager"), ancestor(1, "admin"))},
	{"above_manager_inactive", chain(ancestor(5, "user"), ancestor(3, "manager", inactiveA), ancestor(1, "admin"))},
	{"above_manager_expired", chain(ancestor(3, "manager", expiredA), ancestor(1, "admin"))},
	{"above_manager_read_only", chain(ancestor(5, "user"), ancestor(3, "manager", readOnlyA), ancestor(1, "admin"))},
	{"above_nearest_first", chain(ancestor(5, "user", expiredA, readOnlyA), ancestor(3, "manager", inactiveA, readOnlyA))},
	{"above_inactive_and_expired", chain(ancestor(3, "manager", inactiveA, expiredA))},
	{"above_admin_everything", chain(ancestor(1, "admin", inactiveA, expiredA, readOnlyA))},
	{"above_unknown_type", chain(ancestor(3, "reseller"))},
	{"above_manager_inactive_own_expired", func(in *Input) {
		chain(ancestor(3, "manager", inactiveA))(in)
		in.Account.Expired = true
	}},
	{"above_user_expired_token_none", func(in *Input) {
		chain(ancestor(5, "user", expiredA))(in)
		in.Token.Permissions = []string{}
	}},
	{"above_read_only_own_read_only", func(in *Input) {
		chain(ancestor(5, "user", readOnlyA))(in)
		in.Account.ReadOnly = true
	}},
}

// ancestor is an active, unexpired, writable account above the caller,
// changed by the options.
func ancestor(id int64, typ string, opts ...func(*AncestorInput)) AncestorInput {
	a := AncestorInput{ID: id, Type: typ, Active: true}
	for _, o := range opts {
		o(&a)
	}
	return a
}

func inactiveA(a *AncestorInput) { a.Active = false }
func expiredA(a *AncestorInput)  { a.Expired = true }
func readOnlyA(a *AncestorInput) { a.ReadOnly = true }

// chain sets the accounts above the caller.
func chain(above ...AncestorInput) func(*Input) {
	return func(in *Input) { in.Account.Chain = above }
}

// expectCode is an independent statement of docs/design.md §2–§4 for the table:
// the code Decide must return ("" = allow) and its details.
func expectCode(in Input) (string, map[string]any) {
	a := in.Account
	own := map[string]any{"account_id": json.Number(strconv.FormatInt(a.ID, 10))}
	route := in.Request.Method + " " + in.Request.Route
	switch {
	case !a.Active:
		return "ACCOUNT_INACTIVE", own
	case !slices.Contains(accountTypes(), a.Type):
		return "ACCOUNT_INACTIVE", map[string]any{"account_id": own["account_id"], "account_type": a.Type}
	case a.Expired:
		return "ACCOUNT_EXPIRED", own
	}
	// the nearest account above that is not an admin and cannot use the API
	var readOnlyAbove []int64
	for _, c := range a.Chain {
		if c.Type == "admin" {
			continue // admins aside
		}
		named := map[string]any{"account_id": json.Number(strconv.FormatInt(c.ID, 10))}
		switch {
		case !c.Active || !slices.Contains(accountTypes(), c.Type):
			return "ACCOUNT_INACTIVE", named
		case c.Expired:
			return "ACCOUNT_EXPIRED", named
		}
		if c.ReadOnly {
			readOnlyAbove = append(readOnlyAbove, c.ID)
		}
	}
	p := in.Token.Permissions
	if route != "GET /me" && !slices.Contains(p, "*") && !slices.Contains(p, in.Request.Method+" *") && !slices.Contains(p, route) {
		return "TOKEN_PERMISSION_DENIED", map[string]any{"method": in.Request.Method, "route": in.Request.Route}
	}
	if a.Type == "subaccount" && slices.Contains([]string{"POST /readings", "POST /events", "PATCH /events/{id}", "DELETE /events/{id}",
		"POST /services", "PATCH /services/{id}", "DELETE /services/{id}", "POST /services/{id}/done", "POST /reports",
		"PATCH /reports/{id}", "DELETE /reports/{id}", "POST /zones", "PATCH /zones/{id}", "DELETE /zones/{id}"}, route) {
		// subaccounts never ingest (§14) and write no event rules, service
		// records, reports or zones (§15)
		return "PRIVILEGE_REQUIRED", map[string]any{"account_type": "subaccount"}
	}
	need := map[string]string{"GET /reports": "reports", "GET /events": "event_notifications", "GET /events/{id}": "event_notifications",
		"GET /notifications": "event_notifications", "GET /notifications/{id}": "event_notifications", "GET /notifications/stream": "event_notifications",
		"GET /webhooks": "event_notifications", "POST /webhooks": "event_notifications", "GET /webhooks/{id}": "event_notifications",
		"PATCH /webhooks/{id}": "event_notifications", "DELETE /webhooks/{id}": "event_notifications",
		"POST /webhooks/{id}/rotate-secret": "event_notifications", "POST /webhooks/{id}/test": "event_notifications",
		"GET /webhooks/{id}/deliveries": "event_notifications", "POST /webhooks/{id}/deliveries/{delivery_id}/retry": "event_notifications",
		"GET /zones": "event_notifications", "GET /zones/{id}": "event_notifications"}[route]
	if a.Type == "subaccount" && need != "" && !slices.Contains(a.Privileges, need) {
		return "PRIVILEGE_REQUIRED", map[string]any{"privilege": need}
	}
	if in.Request.Method != "GET" {
		if a.ReadOnly {
			return "READ_ONLY_ACCOUNT", own
		}
		if len(readOnlyAbove) > 0 {
			return "READ_ONLY_ACCOUNT", map[string]any{"account_id": json.Number(strconv.FormatInt(readOnlyAbove[0], 10))}
		}
	}
	return "", nil
}

// TestDecideTable covers every account type × route × state.
func TestDecideTable(t *testing.T) {
	e := engine(t)
	ctx := context.Background()
	for _, typ := range append(accountTypes(), "reseller") {
		for _, st := range testStates {
			for _, r := range testRoutes {
				in := principal(typ).at(r[0], r[1])
				st.mut(&in)
				name := fmt.Sprintf("%s/%s/%s_%s", typ, st.name, r[0], r[1])
				t.Run(name, func(t *testing.T) {
					d, err := e.Decide(ctx, in)
					if err != nil {
						t.Fatal(err)
					}
					code, details := expectCode(in)
					if d.Allow != (code == "") || d.Code != code {
						t.Fatalf("got allow=%t code=%q, want code %q", d.Allow, d.Code, code)
					}
					if code == "" {
						return
					}
					if d.Message == "" {
						t.Errorf("denial without message: %+v", d)
					}
					if details != nil && !reflect.DeepEqual(d.Details, details) {
						t.Errorf("details = %v, want %v", d.Details, details)
					}
				})
			}
		}
	}
}

// TestDecidePinned pins whole decisions, messages included.
func TestDecidePinned(t *testing.T) {
	e := engine(t)
	cases := []struct {
		name string
		in   Input
		want Decision
	}{
		{"user_allowed", principal("user"), Decision{Allow: true}},
		{"subaccount_without_reports", principal("subaccount").at("GET", "/reports"), Decision{
			Code: "PRIVILEGE_REQUIRED", Message: "the subaccount lacks the reports privilege",
			Details: map[string]any{"privilege": "reports"},
		}},
		{"token_denied", func() Input {
			in := principal("manager").at("GET", "/events/{id}")
			in.Token.Permissions = []string{"GET /events"}
			return in
		}(), Decision{
			Code: "TOKEN_PERMISSION_DENIED", Message: "the token does not grant GET /events/{id}",
			Details: map[string]any{"method": "GET", "route": "/events/{id}"},
		}},
		{"read_only_write", func() Input {
			in := principal("admin").at("POST", "/passengers")
			in.Account.ReadOnly = true
			return in
		}(), Decision{Code: "READ_ONLY_ACCOUNT", Message: "the account is read-only", Details: map[string]any{"account_id": json.Number("7")}}},
		{"unknown_type", principal("reseller"), Decision{
			Code: "ACCOUNT_INACTIVE", Message: "the account type is not recognised",
			Details: map[string]any{"account_id": json.Number("7"), "account_type": "reseller"},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := e.Decide(context.Background(), c.in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %#v\nwant %#v", got, c.want)
			}
		})
	}
}

// TestPermissions pins the /me permissions object.
func TestPermissions(t *testing.T) {
	e := engine(t)
	in := principal("subaccount", "event_notifications")
	in.Account.ReadOnly = true
	in.Token.Permissions = []string{"GET *"}
	got, err := e.Permissions(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	// routes: every API route, allowed as the independent model of the
	// decision table says; pinned on four of them
	routes := map[string]bool{}
	for _, r := range testRoutes {
		code, _ := expectCode(in.at(r[0], r[1]))
		routes[r[0]+" "+r[1]] = code == ""
	}
	for r, allowed := range map[string]bool{"GET /me": true, "POST /passengers": false, "GET /reports": false, "GET /events": true} {
		if routes[r] != allowed {
			t.Fatalf("the model allows %s: %v, want %v", r, routes[r], allowed)
		}
	}
	want := Permissions{
		ReadOnly:   true,
		Privileges: []string{"event_notifications"},
		Token:      []string{"GET *"},
		Routes:     routes,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
	// the caller owns its copy: changing it does not change the cached answer
	got.Routes["GET /reports"] = true
	got.Privileges[0] = "reports"
	got.Token[0] = "*"
	again, _ := e.Permissions(context.Background(), in)
	if !reflect.DeepEqual(again, want) {
		t.Errorf("cached answer changed: %v", again)
	}
	manager, _ := e.Permissions(context.Background(), principal("manager"))
	if !reflect.DeepEqual(manager.Privileges, []string{"event_notifications", "reports"}) {
		t.Errorf("manager privileges = %v", manager.Privileges)
	}
}

// TestDecodePermissions: a permission object of another shape is
// ErrUndefined, never a partly filled answer.
func TestDecodePermissions(t *testing.T) {
	good := func() map[string]any {
		return map[string]any{"read_only": false, "privileges": []any{"reports"}, "token": []any{"*"}, "routes": map[string]any{"GET /me": true}, "extra": 1}
	}
	if p, err := decodePermissions(good()); err != nil || !reflect.DeepEqual(p, Permissions{Privileges: []string{"reports"}, Token: []string{"*"}, Routes: map[string]bool{"GET /me": true}}) {
		t.Fatalf("good: %+v, %v", p, err)
	}
	for name, mut := range map[string]func(m map[string]any){
		"read_only missing":  func(m map[string]any) { delete(m, "read_only") },
		"read_only string":   func(m map[string]any) { m["read_only"] = "false" },
		"privileges object":  func(m map[string]any) { m["privileges"] = map[string]any{} },
		"privileges of ints": func(m map[string]any) { m["privileges"] = []any{1} },
		"token missing":      func(m map[string]any) { delete(m, "token") },
		"token of null":      func(m map[string]any) { m["token"] = []any{nil} },
		"routes array":       func(m map[string]any) { m["routes"] = []any{"GET /me"} },
		"routes of strings":  func(m map[string]any) { m["routes"] = map[string]any{"GET /me": "true"} },
		"routes missing":     func(m map[string]any) { delete(m, "routes") },
	} {
		m := good()
		mut(m)
		if _, err := decodePermissions(m); !errors.Is(err, ErrUndefined) {
			t.Errorf("%s: %v, want ErrUndefined", name, err)
		}
	}
	if _, err := decodePermissions([]any{}); !errors.Is(err, ErrUndefined) {
		t.Errorf("array: %v", err)
	}
}
