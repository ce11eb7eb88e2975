package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/fleetapi/fleetapi/policy"
)

// The OPA-sidecar variant: the policy decision and the row scope asked of
// an OPA server over HTTP per request, as a service that deploys OPA as
// its sidecar does, instead of fleetapi's embedded prepared queries and
// their cache; then the same storage call.

// sidecarSuffix names the OPA-sidecar variant of a mixed family.
const sidecarSuffix = "_opa"

// decisionSuffix names the variant that asks the sidecar for the decision
// only (the scope from the embedded engine): it separates the cost of the
// two questions.
const decisionSuffix = "_opa_decision"

// sidecarFamilies are the families with an OPA-sidecar variant, and
// decisionFamilies those with a decision-only one.
var (
	sidecarFamilies  = []string{"user_list", "subaccount_list", "manager_list", "event_by_id"}
	decisionFamilies = []string{"user_list", "event_by_id"}
)

// sidecarNames are the OPA-sidecar variants, in order.
func sidecarNames() []string {
	var out []string
	for _, f := range sidecarFamilies {
		out = append(out, f+sidecarSuffix)
	}
	for _, f := range decisionFamilies {
		out = append(out, f+decisionSuffix)
	}
	return out
}

// ucastMediaType asks OPA's compile API for the UCAST target with every
// operator: what the embedded engine compiles (policy.Engine.Scope).
const ucastMediaType = "application/vnd.opa.ucast.all+json"

// sidecarAsk is one round of the sidecar's questions for input in: the
// decision (POST /v1/data/fleet/authz/decision), then, when allowed, the
// scope of resource (POST /v1/compile/fleet/scope/<resource>, the
// compile API's UCAST target). It fails when the
// decision is not an allow or the compile API returns no query.
func (h *harness) sidecarAsk(ctx context.Context, in policy.Input, resource policy.Resource, compile bool) error {
	var dec struct {
		Result *policy.Decision `json:"result"`
	}
	if err := h.sidecarPost(ctx, "/v1/data/fleet/authz/decision", "application/json", map[string]any{"input": in}, &dec); err != nil {
		return err
	}
	if dec.Result == nil || !dec.Result.Allow {
		return fmt.Errorf("sidecar decision: not allowed: %+v", dec.Result)
	}
	if !compile {
		return nil
	}
	var comp struct {
		Result *struct {
			Query json.RawMessage `json:"query"`
		} `json:"result"`
	}
	body := map[string]any{
		"input":    map[string]any{"account": in.Account},
		"unknowns": []string{"input." + string(resource)},
	}
	if err := h.sidecarPost(ctx, "/v1/compile/fleet/scope/"+string(resource), ucastMediaType, body, &comp); err != nil {
		return err
	}
	if comp.Result == nil || len(comp.Result.Query) == 0 {
		return fmt.Errorf("sidecar compile: no query in the result")
	}
	return nil
}

// sidecarPost posts body as JSON to the OPA server and decodes the answer
// into out.
func (h *harness) sidecarPost(ctx context.Context, path, accept string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, "POST", h.cfg.OPAURL+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	resp, err := h.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("sidecar %s: status %d: %.300s", path, resp.StatusCode, data)
	}
	return json.Unmarshal(data, out)
}

// sidecarScenario is the OPA-sidecar variant of a mixed family: the same
// draws; per call the sidecar's decision and scope for the drawn
// principal, then fleetapi's storage call with the scope the embedded
// engine compiled for it (the same rules, so the same UCAST: the harness
// does not translate the sidecar's answer again). The check compares its
// answers with fleetapi's floor.
func (h *harness) sidecarScenario(ctx context.Context, family string, compile bool) (scenario, error) {
	name := family + sidecarSuffix
	if !compile {
		name = family + decisionSuffix
	}
	if h.cfg.OPAURL == "" {
		return scenario{}, fmt.Errorf("%s: give --opa-url (an `opa run --server` with the set of --write-opa-policy)", name)
	}
	if family == "event_by_id" {
		sc, err := h.eventMixed(ctx)
		if err != nil {
			return scenario{}, err
		}
		ms, _ := h.members(name, "user")
		inner := sc.floor
		sc.floor = func(ctx context.Context, c call) (int64, error) {
			i := h.rng("event_by_id", c.k).IntN(len(ms)) // the member of eventMixed's draw
			if err := h.sidecarAsk(ctx, policy.NewInput(ms[i].principal, "GET", "/events/{id}", h.today), "events", compile); err != nil {
				return 0, err
			}
			return inner(ctx, c)
		}
		return h.asVariant(sc, name, inner, compile), nil
	}
	if _, ok := mixedListSpecs[family]; !ok {
		return scenario{}, fmt.Errorf("%s: no such OPA-sidecar scenario (want some of %v)", name, sidecarNames())
	}
	l, err := h.newMixedList(ctx, family)
	if err != nil {
		return scenario{}, err
	}
	sc := l.scenario()
	sc.floor = func(ctx context.Context, c call) (int64, error) {
		d := l.draw(c.k)
		if err := h.sidecarAsk(ctx, policy.NewInput(d.m.principal, "GET", "/services", h.today), "services", compile); err != nil {
			return 0, err
		}
		return l.floor(ctx, c)
	}
	return h.asVariant(sc, name, l.floor, compile), nil
}

// asVariant turns a mixed scenario into a variant measured in the floor's
// place: no API side, reference for the check, the sidecar's CPU.
func (h *harness) asVariant(sc scenario, name string, reference func(context.Context, call) (int64, error), compile bool) scenario {
	sc.name = name
	if compile {
		sc.request = "OPA sidecar: POST /v1/data/fleet/authz/decision + POST /v1/compile/fleet/scope/… (UCAST), then the storage call — " + sc.request
	} else {
		sc.request = "OPA sidecar, decision only: POST /v1/data/fleet/authz/decision, then the storage call (embedded scope) — " + sc.request
	}
	sc.api, sc.answer = nil, nil
	sc.reference = reference
	sc.sidecarPID = h.cfg.OPAPID
	return sc
}
