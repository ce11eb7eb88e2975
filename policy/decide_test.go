package policy

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
)

// routes are the API routes of spec §4.1.
var testRoutes = [][2]string{
	{"GET", "/me"}, {"GET", "/services"}, {"GET", "/services/due"}, {"POST", "/passengers"},
	{"GET", "/reports"}, {"GET", "/events"}, {"GET", "/events/{id}"},
}

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
}

// expectCode is an independent statement of DESIGN §2–§4 for the table:
// the code Decide must return ("" = allow).
func expectCode(in Input) (string, map[string]any) {
	a := in.Account
	route := in.Request.Method + " " + in.Request.Route
	switch {
	case !a.Active || !slices.Contains(accountTypes(), a.Type):
		return "ACCOUNT_INACTIVE", nil
	case a.Expired:
		return "ACCOUNT_EXPIRED", nil
	}
	p := in.Token.Permissions
	if route != "GET /me" && !slices.Contains(p, "*") && !slices.Contains(p, in.Request.Method+" *") && !slices.Contains(p, route) {
		return "TOKEN_PERMISSION_DENIED", map[string]any{"method": in.Request.Method, "route": in.Request.Route}
	}
	need := map[string]string{"GET /reports": "reports", "GET /events": "event_notifications", "GET /events/{id}": "event_notifications"}[route]
	if a.Type == "subaccount" && need != "" && !slices.Contains(a.Privileges, need) {
		return "PRIVILEGE_REQUIRED", map[string]any{"privilege": need}
	}
	if a.ReadOnly && in.Request.Method != "GET" {
		return "READ_ONLY_ACCOUNT", nil
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
						if d.Err() != nil {
							t.Errorf("Err() = %v for an allow", d.Err())
						}
						return
					}
					if d.Message == "" || !errors.Is(d.Err(), ErrDenied) {
						t.Errorf("denial without message or ErrDenied: %+v", d)
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
		}(), Decision{Code: "READ_ONLY_ACCOUNT", Message: "the account is read-only", Details: map[string]any{}}},
		{"unknown_type", principal("reseller"), Decision{
			Code: "ACCOUNT_INACTIVE", Message: "the account type is not recognised",
			Details: map[string]any{"account_type": "reseller"},
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
	want := map[string]any{
		"read_only":  true,
		"privileges": []any{"event_notifications"},
		"token":      []any{"GET *"},
		"routes": map[string]any{
			"GET /me": true, "GET /services": true, "GET /services/due": true, "POST /passengers": false,
			"GET /reports": false, "GET /events": true, "GET /events/{id}": true,
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
	// the caller owns its copy: changing it does not change the cached answer
	got["routes"].(map[string]any)["GET /reports"] = true
	again, _ := e.Permissions(context.Background(), in)
	if !reflect.DeepEqual(again, want) {
		t.Errorf("cached answer changed: %v", again)
	}
	manager, _ := e.Permissions(context.Background(), principal("manager"))
	if !reflect.DeepEqual(manager["privileges"], []any{"event_notifications", "reports"}) {
		t.Errorf("manager privileges = %v", manager["privileges"])
	}
}
