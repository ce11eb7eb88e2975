package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/tenancy"
)

// The mixed workload: every request draws its principal, search term and
// page from (seed, scenario, draw), so that no cache on the way (the
// token's principal, the scope, PostgreSQL's buffers of one account) sees
// the same request twice in a row, and the API and the floor draw the same
// sequence.

// mixedSuffix names the mixed variant of a fixed scenario.
const mixedSuffix = "_mixed"

// Pages and checks of the mixed workload.
const (
	mixedPages  = 20
	mixedChecks = 10
	// maxNameTerms and imeiTerms are how many search terms are taken from
	// the words of the service names (broad to selective, evenly by
	// frequency rank) and from device IMEIs (a handful of matches each).
	maxNameTerms = 24
	imeiTerms    = 4
)

// member is one principal of the mixed workload and its token secret.
type member struct {
	token     string
	principal tenancy.Principal
}

// mixedNames are the mixed variants of the fixed scenarios, in order.
func mixedNames() []string {
	var out []string
	for _, n := range scenarioNames() {
		out = append(out, n+mixedSuffix)
	}
	return out
}

// rng is the random source of draw k of the scenario family name (a
// variant draws as its mixed scenario does).
func (h *harness) rng(name string, k int64) *rand.Rand {
	f := fnv.New64a()
	f.Write([]byte(name))
	return rand.New(rand.NewPCG(h.cfg.Seed^f.Sum64(), uint64(k)))
}

// members returns the mixed workload's principals of roles, in order.
func (h *harness) members(name string, roles ...string) ([]member, error) {
	var out []member
	for _, r := range roles {
		out = append(out, h.pool[r]...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no %s tokens in the pool of %s (write it with this version's `fleetapi generate --tokens`)",
			name, strings.Join(roles, " or "), h.cfg.TokensFile)
	}
	return out, nil
}

// scopedPool returns the pool of scenario name (the members of roles, as
// members does) and the scope each member has for one request, in the
// pool's order.
func (h *harness) scopedPool(ctx context.Context, name, method, route string, resource policy.Resource, roles ...string) ([]member, []policy.Scope, error) {
	ms, err := h.members(name, roles...)
	if err != nil {
		return nil, nil, err
	}
	scopes := make([]policy.Scope, len(ms))
	for i, m := range ms {
		if scopes[i], err = h.engine.Scope(ctx, policy.NewInput(m.principal, method, route, h.today), resource); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	return ms, scopes, nil
}

// poolText describes a pool for the request column: "60 users".
func poolText(ms []member) string {
	counts := map[string]int{}
	var order []string
	for _, m := range ms {
		t := string(m.principal.Account.Type)
		if counts[t] == 0 {
			order = append(order, t)
		}
		counts[t]++
	}
	parts := make([]string, len(order))
	for i, t := range order {
		parts[i] = fmt.Sprintf("%d %s", counts[t], t)
		if counts[t] > 1 {
			parts[i] += "s"
		}
	}
	return strings.Join(parts, " + ")
}

// listSpec is a mixed list scenario: whose lists, how long a page, and
// whether each request searches for a drawn term.
type listSpec struct {
	roles   []string
	perPage int
	search  bool
}

// mixedListSpecs are the mixed lists by family (the fixed scenario's
// name). A user's 100 services make 20 pages of 5.
var mixedListSpecs = map[string]listSpec{
	"user_list":       {[]string{"user"}, 5, false},
	"subaccount_list": {[]string{"subaccount"}, 5, false},
	"manager_list":    {[]string{"manager"}, 50, false},
	"admin_search":    {[]string{"admin"}, 50, true},
	"user_search":     {[]string{"user", "subaccount"}, 5, true},
}

// mixedList is a mixed list scenario's draws: the members with their
// scopes, and the terms.
type mixedList struct {
	h      *harness
	family string
	spec   listSpec
	ms     []member
	scopes []policy.Scope
	terms  []string
}

// listDraw is one drawn list request.
type listDraw struct {
	m     *member
	scope policy.Scope
	req   storage.ListRequest
	query string
}

// newMixedList prepares the draws of the mixed list family.
func (h *harness) newMixedList(ctx context.Context, family string) (*mixedList, error) {
	spec, ok := mixedListSpecs[family]
	if !ok {
		return nil, fmt.Errorf("%s is not a list scenario", family)
	}
	ms, err := h.members(family+mixedSuffix, spec.roles...)
	if err != nil {
		return nil, err
	}
	l := &mixedList{h: h, family: family, spec: spec, ms: ms}
	for _, m := range ms {
		s, err := h.engine.Scope(ctx, policy.NewInput(m.principal, "GET", "/services", h.today), "services")
		if err != nil {
			return nil, fmt.Errorf("%s: scope of %s: %w", family, m.principal.Account.Username, err)
		}
		l.scopes = append(l.scopes, s)
	}
	if spec.search {
		if l.terms, err = h.searchTerms(ctx); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// draw is the list request of draw k.
func (l *mixedList) draw(k int64) listDraw {
	r := l.h.rng(l.family, k)
	i := r.IntN(len(l.ms))
	d := listDraw{m: &l.ms[i], scope: l.scopes[i]}
	d.req = storage.ListRequest{Page: 1 + r.IntN(mixedPages), PerPage: l.spec.perPage, Sort: storage.Services.ID()}
	d.query = fmt.Sprintf("per_page=%d&page=%d", d.req.PerPage, d.req.Page)
	if len(l.terms) > 0 {
		d.req.Search = l.terms[r.IntN(len(l.terms))]
		d.query += "&search=" + url.QueryEscape(d.req.Search)
	}
	return d
}

// request describes the draws for the table.
func (l *mixedList) request() string {
	q := fmt.Sprintf("per_page=%d&page=1..%d", l.spec.perPage, mixedPages)
	if l.spec.search {
		q += fmt.Sprintf("&search=(%d terms)", len(l.terms))
	}
	return fmt.Sprintf("GET %s/services?%s, %s", base, q, poolText(l.ms))
}

// floor is fleetapi's storage call of draw k: its total.
func (l *mixedList) floor(ctx context.Context, c call) (int64, error) {
	d := l.draw(c.k)
	page, err := storage.List(ctx, l.h.store, d.scope, storage.Services, d.req)
	return page.Total, err
}

// scenario is the mixed list scenario through the API.
func (l *mixedList) scenario() scenario {
	first := l.ms[0].principal
	return scenario{
		name: l.family + mixedSuffix, role: strings.Join(l.spec.roles, "+"), request: l.request(),
		input: policy.NewInput(first, "GET", "/services", l.h.today), resource: "services",
		api: func(c call) apiRequest {
			d := l.draw(c.k)
			return apiRequest{method: "GET", path: base + "/services?" + d.query, status: 200, token: d.m.token}
		},
		floor:  l.floor,
		answer: metaTotal,
		checks: mixedChecks,
	}
}

// searchTerms derives the mixed workload's search terms from the data,
// once: words of the service names from the most frequent to the rarest,
// evenly by rank, then fragments of device IMEIs.
func (h *harness) searchTerms(ctx context.Context) ([]string, error) {
	if h.terms != nil {
		return h.terms, nil
	}
	var words []struct {
		W string `bun:"w"`
		N int64  `bun:"n"`
	}
	if err := h.db.NewRaw(`SELECT w, count(*) AS n FROM services, regexp_split_to_table(lower(name), '[^a-z]+') AS w
		WHERE length(w) >= 4 GROUP BY w ORDER BY n DESC, w`).Scan(ctx, &words); err != nil {
		return nil, fmt.Errorf("search terms: %w", err)
	}
	var terms []string
	for i := range min(len(words), maxNameTerms) {
		terms = append(terms, words[i*len(words)/min(len(words), maxNameTerms)].W)
	}
	var imeis []string
	// The last seven digits of devices spread over the table: the leading
	// digits of generated IMEIs are shared by thousands of devices.
	if err := h.db.NewRaw(`SELECT right(imei, 7) FROM (
		SELECT imei, row_number() OVER (ORDER BY id) AS r, count(*) OVER () AS n FROM objects) t
		WHERE (r - 1) % greatest(n / ?, 1) = 0 ORDER BY r LIMIT ?`, imeiTerms, imeiTerms).Scan(ctx, &imeis); err != nil {
		return nil, fmt.Errorf("search terms: %w", err)
	}
	terms = append(terms, imeis...)
	slices.Sort(terms)
	terms = slices.Compact(terms)
	if len(terms) == 0 {
		return nil, fmt.Errorf("search terms: the services hold no words")
	}
	h.terms = terms
	return terms, nil
}

// mixedScenario builds the mixed variant of the fixed scenario family.
func (h *harness) mixedScenario(ctx context.Context, family string) (scenario, error) {
	if b, ok := h.builders(family); ok {
		return b.mixed(ctx)
	}
	l, err := h.newMixedList(ctx, family)
	if err != nil {
		return scenario{}, err
	}
	return l.scenario(), nil
}

// eventMixed is GET /events/{id}: a drawn user, one of its event rules.
func (h *harness) eventMixed(ctx context.Context) (scenario, error) {
	const name = "event_by_id_mixed"
	ms, err := h.members(name, "user")
	if err != nil {
		return scenario{}, err
	}
	ids := make([][]int64, len(ms))
	scopes := make([]policy.Scope, len(ms))
	for i, m := range ms {
		if err := h.db.NewRaw("SELECT event_id FROM events WHERE account_id = ? ORDER BY event_id", m.principal.Account.ID).
			Scan(ctx, &ids[i]); err != nil {
			return scenario{}, fmt.Errorf("%s: event ids: %w", name, err)
		}
		if len(ids[i]) == 0 {
			return scenario{}, fmt.Errorf("%s: %s has no event rules", name, m.principal.Account.Username)
		}
		if scopes[i], err = h.engine.Scope(ctx, policy.NewInput(m.principal, "GET", "/events/{id}", h.today), "events"); err != nil {
			return scenario{}, fmt.Errorf("%s: %w", name, err)
		}
	}
	draw := func(k int64) (int, int64) {
		r := h.rng("event_by_id", k)
		i := r.IntN(len(ms))
		return i, ids[i][r.IntN(len(ids[i]))]
	}
	return scenario{
		name: name, role: "user", request: fmt.Sprintf("GET %s/events/{id}, %s, one of their event rules", base, poolText(ms)),
		input: policy.NewInput(ms[0].principal, "GET", "/events/{id}", h.today), resource: "events",
		api: func(c call) apiRequest {
			i, id := draw(c.k)
			return apiRequest{method: "GET", path: fmt.Sprintf("%s/events/%d", base, id), status: 200, token: ms[i].token}
		},
		floor: func(ctx context.Context, c call) (int64, error) {
			i, id := draw(c.k)
			ev, err := h.store.EventByID(ctx, scopes[i], id)
			return ev.EventID, err
		},
		answer: eventID,
		checks: mixedChecks,
	}, nil
}

// eventID reads data.event_id of a response.
func eventID(body []byte) (int64, error) { return dataInt(body, "event_id") }

// dataInt reads the integer data.<field> of a response (0 when absent).
func dataInt(body []byte, field string) (int64, error) {
	var env struct {
		Data map[string]json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return 0, err
	}
	raw, ok := env.Data[field]
	if !ok {
		return 0, nil
	}
	var n int64
	err := json.Unmarshal(raw, &n)
	return n, err
}

// dueMixed is GET /services/due by a drawn principal of --due-role.
func (h *harness) dueMixed(ctx context.Context) (scenario, error) {
	const name = "due_services_mixed"
	ms, scopes, err := h.scopedPool(ctx, name, "GET", "/services/due", "services", h.cfg.DueRole)
	if err != nil {
		return scenario{}, err
	}
	draw := func(k int64) int { return h.rng("due_services", k).IntN(len(ms)) }
	return scenario{
		name: name, role: h.cfg.DueRole, request: fmt.Sprintf("GET %s/services/due, %s", base, poolText(ms)),
		input: policy.NewInput(ms[0].principal, "GET", "/services/due", h.today), resource: "services",
		api: func(c call) apiRequest {
			return apiRequest{method: "GET", path: base + "/services/due", status: 200, token: ms[draw(c.k)].token}
		},
		floor: func(ctx context.Context, c call) (int64, error) {
			rows, err := h.store.DueServices(ctx, scopes[draw(c.k)], h.today, maxDue)
			return int64(len(rows)), err
		},
		answer: dataCount,
		checks: mixedChecks,
	}, nil
}

// dataCount is the number of records in data of a response.
func dataCount(body []byte) (int64, error) {
	var env struct {
		Data []json.RawMessage `json:"data"`
	}
	err := json.Unmarshal(body, &env)
	return int64(len(env.Data)), err
}

// passengerMixed is POST /passengers by a drawn user.
func (h *harness) passengerMixed(ctx context.Context) (scenario, error) {
	const name = "passenger_create_mixed"
	ms, scopes, err := h.scopedPool(ctx, name, "POST", "/passengers", "passengers", "user")
	if err != nil {
		return scenario{}, err
	}
	draw := func(k int64) int { return h.rng("passenger_create", k).IntN(len(ms)) }
	return scenario{
		name: name, role: "user", request: fmt.Sprintf("POST %s/passengers, %s", base, poolText(ms)),
		input: policy.NewInput(ms[0].principal, "POST", "/passengers", h.today), resource: "passengers",
		api: func(c call) apiRequest {
			ps := newPassenger(c.n)
			body := fmt.Sprintf(`{"passenger_name":%q,"passenger_phone":%q,"passenger_email":%q}`,
				ps.PassengerName, ps.PassengerPhone, ps.PassengerEmail)
			return apiRequest{method: "POST", path: base + "/passengers", body: []byte(body), status: 201, token: ms[draw(c.k)].token}
		},
		floor: func(ctx context.Context, c call) (int64, error) {
			i := draw(c.k)
			created, _, err := h.store.CreatePassenger(ctx, scopes[i], ms[i].principal.Account.ID, newPassenger(c.n), nil)
			if err != nil {
				return 0, err
			}
			return boolCount(created.PassengerID > 0), nil
		},
		answer: createdPassenger,
		checks: mixedChecks,
	}, nil
}
