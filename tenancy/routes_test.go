package tenancy_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/fleetapi/fleetapi/tenancy"
)

var methods = []string{"GET", "POST", "PUT", "PATCH", "DELETE"}

// concrete turns a template into a request path ("/events/{id}" →
// "/events/12").
func concrete(template string) string {
	segs := strings.Split(template, "/")
	for i, s := range segs {
		if strings.HasPrefix(s, "{") {
			segs[i] = "12"
		}
	}
	return strings.Join(segs, "/")
}

// hasRoute reports whether some route has method and template.
func hasRoute(method, template string) bool {
	for _, r := range tenancy.Routes() {
		if r.Method == method && r.Template == template {
			return true
		}
	}
	return false
}

// TestValidPermissions: every permission that names a route of the API,
// or all routes of a method the API has, is accepted (docs/design.md §3).
func TestValidPermissions(t *testing.T) {
	valid := []string{"*", "GET *", "POST *", "GET /services", "GET /events/{id}", "POST /passengers", "GET /me"}
	for _, r := range tenancy.Routes() {
		valid = append(valid, r.String(), r.Method+" *")
	}
	for _, p := range valid {
		if err := tenancy.ValidatePermission(p); err != nil {
			t.Errorf("%q refused: %v", p, err)
		}
	}
}

// TestPermissionsMatchingNoRoute enumerates the permissions that match no
// route: every route with every method it does not have, every method
// with no route at all ("PUT *"), every templated route written as a
// request path, misspellings, the base path, trailing slashes, query
// strings, lower-case methods and what is not a permission at all. Each is
// refused with an error that names it.
func TestPermissionsMatchingNoRoute(t *testing.T) {
	var bad []string
	for _, r := range tenancy.Routes() {
		for _, m := range methods {
			if !hasRoute(m, r.Template) {
				bad = append(bad, m+" "+r.Template)
			}
		}
		if c := concrete(r.Template); c != r.Template {
			bad = append(bad, r.Method+" "+c)
		}
		bad = append(bad,
			r.Method+" "+r.Template+"/",
			r.Method+" /api/v2"+r.Template,
			r.Method+" "+r.Template+"?x=1",
			r.Method+" "+strings.TrimPrefix(r.Template, "/"),
			strings.ToLower(r.Method)+" "+r.Template,
			r.Method+"  "+r.Template,
			r.Method+" "+r.Template+"x",
		)
	}
	for _, m := range methods {
		has := false
		for _, r := range tenancy.Routes() {
			has = has || r.Method == m
		}
		if !has {
			bad = append(bad, m+" *")
		}
	}
	bad = append(bad, "GET /servics", "PUT /services", "GET /events/12", "GET /events/{event_id}/x",
		"", " ", "**", "GET", "GET ", "* *", "FETCH /services", "get *", "GET */", "/services", "GET /")
	for _, p := range bad {
		err := tenancy.ValidatePermission(p)
		if err == nil {
			t.Errorf("%q accepted", p)
			continue
		}
		if !strings.Contains(err.Error(), `"`+p+`"`) {
			t.Errorf("%q: the error does not name it: %v", p, err)
		}
	}
}

// TestPermissionHints: a request path is told its template, a route of
// another method what the API has.
func TestPermissionHints(t *testing.T) {
	hints := map[string]string{
		"GET /events/12": `did you mean "GET /events/{id}"?`,
		"PUT /services":  "the API has GET /services, POST /services only",
		"GET /servics":   "routes: GET /me, GET /services",
	}
	// Every method that has no route yet (derived: the routes grow).
	for _, m := range methods {
		if !slices.ContainsFunc(tenancy.Routes(), func(r tenancy.Route) bool { return r.Method == m }) {
			hints[m+" *"] = "no route has the method " + m
		}
	}
	for p, want := range hints {
		if err := tenancy.ValidatePermission(p); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want it to say %q", p, err, want)
		}
	}
}

// TestResolveRoute: every route resolves from its template and from a
// request path; a literal segment wins over a parameter; an unknown path
// or method is refused.
func TestResolveRoute(t *testing.T) {
	for _, r := range tenancy.Routes() {
		for _, path := range []string{r.Template, concrete(r.Template)} {
			got, err := tenancy.ResolveRoute(r.Method, path)
			if err != nil || got != r {
				t.Errorf("ResolveRoute(%s, %s) = %v, %v; want %v", r.Method, path, got, err, r)
			}
		}
		for _, m := range methods {
			if hasRoute(m, r.Template) {
				continue
			}
			// another route of the method may take the path through a
			// parameter (PATCH /services/due is PATCH /services/{id}, as
			// net/http routes it); else the method has no route there
			if got, err := tenancy.ResolveRoute(m, concrete(r.Template)); err == nil && (got.Method != m || !viaParameter(got.Template, concrete(r.Template))) {
				t.Errorf("ResolveRoute(%s, %s) = %v, want an error", m, concrete(r.Template), got)
			}
		}
	}
	if got, err := tenancy.ResolveRoute("GET", "/services/due"); err != nil || got.Template != "/services/due" {
		t.Errorf("literal segment: %v %v", got, err)
	}
	for _, path := range []string{"/nope", "/events/", "/events/12/x", "/", "", "/me/"} {
		if got, err := tenancy.ResolveRoute("GET", path); err == nil {
			t.Errorf("ResolveRoute(GET, %q) = %v, want an error", path, got)
		}
	}
}

// TestValidatePermissionsList: a permission list is at most MaxPermissions
// long, holds no permission twice and only valid permissions (issue 19).
func TestValidatePermissionsList(t *testing.T) {
	if err := tenancy.ValidatePermissions(nil); err != nil {
		t.Errorf("no permissions: %v", err)
	}
	if err := tenancy.ValidatePermissions([]string{"*", "GET *", "GET /services"}); err != nil {
		t.Errorf("distinct permissions: %v", err)
	}
	for _, c := range []struct {
		perms []string
		want  string
	}{
		{[]string{"GET *", "GET *"}, `permission "GET *" is listed twice`},
		{[]string{"GET /services", "GET /servics"}, `permission "GET /servics" matches no route`},
		{make([]string, tenancy.MaxPermissions+1), fmt.Sprintf("%d permissions: a token holds at most %d", tenancy.MaxPermissions+1, tenancy.MaxPermissions)},
	} {
		err := tenancy.ValidatePermissions(c.perms)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.perms, err, c.want)
		}
	}
}

// viaParameter reports whether the route template reaches path with at
// least one {param} segment standing for a literal one.
func viaParameter(template, path string) bool {
	ts, ps := strings.Split(template, "/"), strings.Split(path, "/")
	if len(ts) != len(ps) {
		return false
	}
	param := false
	for i := range ts {
		switch {
		case strings.HasPrefix(ts[i], "{"):
			param = param || ts[i] != ps[i]
		case ts[i] != ps[i]:
			return false
		}
	}
	return param
}
