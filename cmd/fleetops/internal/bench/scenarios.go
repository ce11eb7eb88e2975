package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/tenancy"
)

// apiRequest is one HTTP request of a scenario and the status it expects.
type apiRequest struct {
	method, path string
	body         []byte
	status       int
	// token is the caller's secret; empty for the scenario role's fixed
	// token.
	token string
}

// call numbers one request of a measurement. k is its draw: the mixed
// workload derives the principal, term and page from (seed, scenario, k),
// and the API and the floor number their requests alike, so that both do
// the same draws. n is unique across the run (creates do not repeat).
type call struct{ k, n int64 }

// scenario is one measured operation, seen from both sides: the HTTP
// request the API answers, and the storage calls that answer it (the
// floor), with the scope the policy engine compiles for the same input.
type scenario struct {
	name    string
	role    string
	request string
	// input and resource are the policy questions the API asks (Decide,
	// then Scope of resource), timed separately from the cache.
	input    policy.Input
	resource policy.Resource
	// api returns the request of a call; floor runs the storage calls of a
	// call and returns what the check compares (a total, a count or an
	// id). A variant (RLS, OPA sidecar) has no api: its floor is the
	// variant's path.
	api   func(c call) apiRequest
	floor func(ctx context.Context, c call) (int64, error)
	// answer reads the same figure from an API response body.
	answer func(body []byte) (int64, error)
	// checks is how many draws the check compares (1 when zero).
	checks int
	// reference, for a variant, is fleetapi's floor of the same draws:
	// the check compares the variant's answers with it.
	reference func(ctx context.Context, c call) (int64, error)
	// sidecarPID is the process whose CPU time is charged to this
	// scenario besides the harness's (the OPA server); 0 for none.
	sidecarPID int
}

// scenarioNames are the scenarios run by default, in order.
func scenarioNames() []string {
	return []string{"user_list", "manager_list", "subaccount_list", "admin_search", "user_search",
		"event_by_id", "due_services", "passenger_create"}
}

// authScenario is a diagnostic, not in the default set: the token lookup
// that authenticates every API request (one query), floor only. It shows
// what authentication adds to each scenario's floor.
func (h *harness) authScenario() (scenario, error) {
	secret, ok := h.tokens["user"]
	if !ok {
		return scenario{}, fmt.Errorf("auth_lookup: no user token")
	}
	hash, err := tenancy.HashToken(secret)
	if err != nil {
		return scenario{}, err
	}
	p := h.principals["user"]
	return scenario{
		name: "auth_lookup", role: "user", request: "token lookup (PrincipalByTokenHash), floor only",
		input: policy.NewInput(p, "GET", "/me", h.today), resource: "services",
		floor: func(ctx context.Context, _ call) (int64, error) {
			p, _, err := h.store.PrincipalByTokenHash(ctx, hash)
			return p.Account.ID, err
		},
	}, nil
}

// base is the API's path prefix.
const base = "/api/v2"

// scenario builds the named scenario with its scope.
func (h *harness) scenario(ctx context.Context, name string) (scenario, error) {
	switch name {
	case "user_list":
		return h.listScenario(ctx, name, "user", "per_page=50")
	case "manager_list":
		return h.listScenario(ctx, name, "manager", h.cfg.ManagerQuery)
	case "subaccount_list":
		return h.listScenario(ctx, name, "subaccount", "")
	case "admin_search":
		return h.listScenario(ctx, name, "admin", "search="+url.QueryEscape(h.cfg.AdminSearch))
	case "admin_list":
		// the admin's unfiltered page 1: its total is every service
		return h.listScenario(ctx, name, "admin", "")
	case "user_search":
		return h.listScenario(ctx, name, "user", "search="+url.QueryEscape(h.cfg.UserSearch))
	case "auth_lookup":
		return h.authScenario()
	}
	if b, ok := h.builders(name); ok {
		return b.fixed(ctx)
	}
	if family, ok := strings.CutSuffix(name, mixedSuffix); ok && slices.Contains(scenarioNames(), family) {
		return h.mixedScenario(ctx, family)
	}
	if family, ok := strings.CutSuffix(name, rlsSuffix); ok {
		return h.rlsScenario(ctx, family)
	}
	if family, ok := strings.CutSuffix(name, decisionSuffix); ok {
		return h.sidecarScenario(ctx, family, false)
	}
	if family, ok := strings.CutSuffix(name, sidecarSuffix); ok {
		return h.sidecarScenario(ctx, family, true)
	}
	return scenario{}, fmt.Errorf("unknown scenario %q (want some of %v, their %s variants, %v, %v, auth_lookup)",
		name, scenarioNames(), mixedSuffix, rlsNames(), sidecarNames())
}

// listRequestFrom builds the storage request that the API builds from a
// query string with the shared list parameters (no filters).
func listRequestFrom(query string) (storage.ListRequest, error) {
	req := storage.ListRequest{Page: 1, PerPage: 50, Sort: storage.Services.ID()}
	q, err := url.ParseQuery(query)
	if err != nil {
		return req, err
	}
	for k, vs := range q {
		v := vs[0]
		switch k {
		case "page":
			req.Page, err = strconv.Atoi(v)
		case "per_page":
			req.PerPage, err = strconv.Atoi(v)
		case "search":
			req.Search = v
		case "sort":
			f, ok := storage.Services.Field(v)
			if !ok {
				err = fmt.Errorf("no services field %q", v)
			}
			req.Sort = f
		case "order":
			req.Desc = v == "desc"
		default:
			err = fmt.Errorf("parameter %q is not supported by the harness", k)
		}
		if err != nil {
			return req, fmt.Errorf("query %q: %w", query, err)
		}
	}
	return req, nil
}

// listScenario is GET /services with query for role, against
// Store.ListServices; it compares meta.total.
func (h *harness) listScenario(ctx context.Context, name, role, query string) (scenario, error) {
	req, err := listRequestFrom(query)
	if err != nil {
		return scenario{}, err
	}
	scope, in, err := h.scopeOf(ctx, role, "GET", "/services", "services")
	if err != nil {
		return scenario{}, fmt.Errorf("%s: %w", name, err)
	}
	path := base + "/services"
	if query != "" {
		path += "?" + query
	}
	return scenario{
		name: name, role: role, request: "GET " + path, input: in, resource: "services",
		api: func(call) apiRequest { return apiRequest{method: "GET", path: path, status: 200} },
		floor: func(ctx context.Context, _ call) (int64, error) {
			page, err := storage.List(ctx, h.store, scope, storage.Services, req)
			return page.Total, err
		},
		answer: metaTotal,
	}, nil
}

// builders are the fixed and mixed variants of a scenario family that is
// not a list (false for a list family or an unknown name).
type builders struct {
	fixed, mixed func(context.Context) (scenario, error)
}

// builders returns the variants of the non-list family.
func (h *harness) builders(family string) (builders, bool) {
	switch family {
	case "event_by_id":
		return builders{h.eventScenario, h.eventMixed}, true
	case "due_services":
		return builders{h.dueScenario, h.dueMixed}, true
	case "passenger_create":
		return builders{h.passengerScenario, h.passengerMixed}, true
	}
	return builders{}, false
}

// eventScenario is GET /events/{id} over the user's event rules in turn,
// against Store.EventByID; it compares the id.
func (h *harness) eventScenario(ctx context.Context) (scenario, error) {
	if len(h.eventIDs) == 0 {
		return scenario{}, fmt.Errorf("event_by_id: the user has no event rules")
	}
	scope, in, err := h.scopeOf(ctx, "user", "GET", "/events/{id}", "events")
	if err != nil {
		return scenario{}, fmt.Errorf("event_by_id: %w", err)
	}
	id := func(n int64) int64 { return h.eventIDs[n%int64(len(h.eventIDs))] }
	return scenario{
		name: "event_by_id", role: "user", request: fmt.Sprintf("GET %s/events/{id} (%d ids in turn)", base, len(h.eventIDs)),
		input: in, resource: "events",
		api: func(c call) apiRequest {
			return apiRequest{method: "GET", path: fmt.Sprintf("%s/events/%d", base, id(c.n)), status: 200}
		},
		floor: func(ctx context.Context, c call) (int64, error) {
			ev, err := h.store.EventByID(ctx, scope, id(c.n))
			return ev.EventID, err
		},
		answer: eventID,
	}, nil
}

// maxDue is the API's limit on GET /services/due.
const maxDue = 500

// dueScenario is GET /services/due for --due-role, against
// Store.DueServices; it compares the number of rows.
func (h *harness) dueScenario(ctx context.Context) (scenario, error) {
	role := h.cfg.DueRole
	scope, in, err := h.scopeOf(ctx, role, "GET", "/services/due", "services")
	if err != nil {
		return scenario{}, fmt.Errorf("due_services: %w", err)
	}
	return scenario{
		name: "due_services", role: role, request: "GET " + base + "/services/due", input: in, resource: "services",
		api: func(call) apiRequest { return apiRequest{method: "GET", path: base + "/services/due", status: 200} },
		floor: func(ctx context.Context, _ call) (int64, error) {
			rows, err := h.store.DueServices(ctx, scope, h.today, maxDue)
			return int64(len(rows)), err
		},
		answer: dataCount,
	}, nil
}

// passengerScenario is POST /passengers by the user, against
// Store.CreatePassenger; it compares that a passenger was made.
func (h *harness) passengerScenario(ctx context.Context) (scenario, error) {
	scope, in, err := h.scopeOf(ctx, "user", "POST", "/passengers", "passengers")
	if err != nil {
		return scenario{}, fmt.Errorf("passenger_create: %w", err)
	}
	p := h.principals["user"]
	owner := p.Account.ID
	if p.Account.Type == tenancy.Subaccount {
		owner = p.Account.ManagerID
	}
	passenger := newPassenger
	return scenario{
		name: "passenger_create", role: "user", request: "POST " + base + "/passengers", input: in, resource: "passengers",
		api: func(c call) apiRequest {
			ps := passenger(c.n)
			body := fmt.Sprintf(`{"passenger_name":%q,"passenger_phone":%q,"passenger_email":%q}`,
				ps.PassengerName, ps.PassengerPhone, ps.PassengerEmail)
			return apiRequest{method: "POST", path: base + "/passengers", body: []byte(body), status: 201}
		},
		floor: func(ctx context.Context, c call) (int64, error) {
			created, _, err := h.store.CreatePassenger(ctx, scope, owner, passenger(c.n), nil)
			if err != nil {
				return 0, err
			}
			return boolCount(created.PassengerID > 0), nil
		},
		answer: createdPassenger,
	}, nil
}

// newPassenger is the n-th passenger a create scenario makes.
func newPassenger(n int64) storage.Passenger {
	return storage.Passenger{
		PassengerName:   fmt.Sprintf("Load test %d", n),
		PassengerPhone:  fmt.Sprintf("+44 7700 900%03d", n%1000),
		PassengerEmail:  fmt.Sprintf("load%d@example.com", n),
		PassengerActive: true,
	}
}

// createdPassenger is 1 when a response holds a created passenger.
func createdPassenger(body []byte) (int64, error) {
	id, err := dataInt(body, "passenger_id")
	return boolCount(id > 0), err
}

// boolCount is 1 for true, 0 for false.
func boolCount(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// metaTotal reads meta.total of a list response.
func metaTotal(body []byte) (int64, error) {
	var env struct {
		Success bool `json:"success"`
		Meta    struct {
			Total *int64 `json:"total"`
		} `json:"meta"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return 0, err
	}
	if !env.Success || env.Meta.Total == nil {
		return 0, fmt.Errorf("not a list response: %.200s", body)
	}
	return *env.Meta.Total, nil
}
