package tenancy

import (
	"fmt"
	"strings"
)

// Route is one route of the client API: a method and a route template
// relative to the API's base path ("GET", "/events/{id}"). Token
// permissions name routes, and the policy decides on them (docs/design.md §3, §6).
type Route struct {
	Method   string
	Template string
}

// String is the route as a permission spells it: "GET /events/{id}".
func (r Route) String() string { return r.Method + " " + r.Template }

// Routes returns the routes of the client API, in the order of the spec.
// The api package registers exactly these (a test there compares them),
// and the policy's data.fleet.authz.routes lists the same (a test in
// policy compares them), so that a new route cannot be forgotten by the
// permission grammar.
func Routes() []Route {
	return []Route{
		{"GET", "/me"},
		{"GET", "/services"},
		{"GET", "/services/due"},
		{"POST", "/passengers"},
		{"GET", "/reports"},
		{"GET", "/events"},
		{"GET", "/events/{id}"},
		{"GET", "/notifications"},
		{"GET", "/notifications/stream"},
		{"GET", "/notifications/{id}"},
		{"GET", "/objects"},
		{"GET", "/objects/{id}"},
		{"GET", "/accounts"},
		{"POST", "/accounts"},
		{"GET", "/accounts/{id}"},
		{"PATCH", "/accounts/{id}"},
		{"DELETE", "/accounts/{id}"},
		{"GET", "/audit-events"},
		{"GET", "/tokens"}, {"POST", "/tokens"}, {"DELETE", "/tokens/{id}"},
		{"GET", "/accounts/{id}/objects"}, {"PUT", "/accounts/{id}/objects"}, {"POST", "/objects"},
		{"PATCH", "/objects/{id}"},
		{"GET", "/usage"},
		{"POST", "/readings"},
		{"GET", "/objects/{id}/positions"},
		{"GET", "/webhooks"}, {"POST", "/webhooks"},
		{"GET", "/webhooks/{id}"}, {"PATCH", "/webhooks/{id}"}, {"DELETE", "/webhooks/{id}"},
		{"POST", "/webhooks/{id}/rotate-secret"}, {"POST", "/webhooks/{id}/test"},
		{"GET", "/webhooks/{id}/deliveries"}, {"POST", "/webhooks/{id}/deliveries/{delivery_id}/retry"},
		{"GET", "/zones"}, {"POST", "/zones"},
		{"GET", "/zones/{id}"}, {"PATCH", "/zones/{id}"}, {"DELETE", "/zones/{id}"},
		{"POST", "/events"}, {"PATCH", "/events/{id}"}, {"DELETE", "/events/{id}"},
		{"POST", "/services"}, {"PATCH", "/services/{id}"}, {"DELETE", "/services/{id}"}, {"POST", "/services/{id}/done"},
		{"POST", "/reports"}, {"PATCH", "/reports/{id}"}, {"DELETE", "/reports/{id}"},
	}
}

// permissionMethods are the methods a permission may name.
const permissionMethods = "GET, POST, PUT, PATCH, DELETE"

// MaxPermissions is the most permissions a token may hold (docs/design.md §9):
// more than the API has routes, times two, so that no real token needs
// more, and small enough that a token's list stays a few kilobytes in
// every replica's caches.
const MaxPermissions = 64

// ValidatePermissions checks a token's permission list: at most
// MaxPermissions entries, no permission twice, each valid
// (ValidatePermission). It is the one check of the list wherever a token
// is made (POST /tokens, the CLI, the import); the error names the
// offending permission or the count.
func ValidatePermissions(perms []string) error {
	if len(perms) > MaxPermissions {
		return fmt.Errorf("%d permissions: a token holds at most %d", len(perms), MaxPermissions)
	}
	seen := make(map[string]bool, len(perms))
	for _, p := range perms {
		if seen[p] {
			return fmt.Errorf("permission %q is listed twice", p)
		}
		seen[p] = true
		if err := ValidatePermission(p); err != nil {
			return err
		}
	}
	return nil
}

// ValidatePermission checks one token permission against docs/design.md §3: "*"
// (every route), "METHOD *" (every route of that method) or
// "METHOD /template", and the permission must match at least one route of
// Routes, so that a misspelt route ("GET /servics"), a method the route
// does not have ("PUT /services") or a raw path instead of a template
// ("GET /events/12") is refused rather than stored as a permission that
// never grants anything. The error names the permission and, where one
// route is meant, that route.
func ValidatePermission(p string) error {
	if p == "*" {
		return nil
	}
	method, target, ok := strings.Cut(p, " ")
	if !ok || method == "" || target == "" {
		return fmt.Errorf(`permission %q: want "*", "METHOD *" or "METHOD /route"`, p)
	}
	if !knownMethod(method) {
		return fmt.Errorf("permission %q: method must be one of %s", p, permissionMethods)
	}
	routes := Routes()
	if target == "*" {
		for _, r := range routes {
			if r.Method == method {
				return nil
			}
		}
		return fmt.Errorf("permission %q matches no route of the API: no route has the method %s (routes: %s)", p, method, routeList(routes))
	}
	for _, r := range routes {
		if r.Method == method && r.Template == target {
			return nil
		}
	}
	r, reason := resolve(routes, method, target)
	if reason != "" {
		return fmt.Errorf("permission %q matches no route of the API: %s", p, reason)
	}
	return fmt.Errorf("permission %q matches no route of the API: permissions name route templates; did you mean %q?", p, r.String())
}

// ResolveRoute finds the route that a request METHOD path would reach:
// path is a route template ("/events/{id}") or a concrete path
// ("/events/12", where a {param} segment matches any one non-empty
// segment); a literal segment wins over a parameter, as in net/http. The
// error says what is wrong: no route has the path, or the path's routes
// have other methods.
func ResolveRoute(method, path string) (Route, error) {
	r, reason := resolve(Routes(), method, path)
	if reason != "" {
		return Route{}, fmt.Errorf("route %s %s: %s", method, path, reason)
	}
	return r, nil
}

// resolve is ResolveRoute over routes; reason is empty when it found one.
func resolve(routes []Route, method, path string) (Route, string) {
	var best *Route
	bestLiterals := -1
	var others []string
	for i, r := range routes {
		literals, ok := matchTemplate(r.Template, path)
		if !ok {
			continue
		}
		if r.Method != method {
			others = append(others, r.String())
			continue
		}
		if literals > bestLiterals {
			best, bestLiterals = &routes[i], literals
		}
	}
	switch {
	case best != nil:
		return *best, ""
	case len(others) > 0:
		return Route{}, fmt.Sprintf("the API has %s only", strings.Join(others, ", "))
	}
	return Route{}, fmt.Sprintf("no route of the API has this path (routes: %s)", routeList(routes))
}

// matchTemplate reports whether path matches template (a template matches
// itself too) and how many of the template's segments are literal.
func matchTemplate(template, path string) (literals int, ok bool) {
	ts := strings.Split(template, "/")
	ps := strings.Split(path, "/")
	if len(ts) != len(ps) {
		return 0, false
	}
	for i, t := range ts {
		if strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}") {
			if ps[i] == "" {
				return 0, false
			}
			continue
		}
		if t != ps[i] {
			return 0, false
		}
		literals++
	}
	return literals, true
}

func knownMethod(m string) bool {
	switch m {
	case "GET", "POST", "PUT", "PATCH", "DELETE":
		return true
	}
	return false
}

func routeList(routes []Route) string {
	s := make([]string, len(routes))
	for i, r := range routes {
		s[i] = r.String()
	}
	return strings.Join(s, ", ")
}
