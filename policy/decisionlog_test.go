package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/tenancy"
	"github.com/open-policy-agent/opa/v1/plugins/logs"
	"github.com/open-policy-agent/opa/v1/version"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

func TestDecisionLog(t *testing.T) {
	var buf bytes.Buffer
	e := newEngine(t, Options{DecisionLog: &buf})
	traceID := trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36}
	ctx := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: traceID, SpanID: trace.SpanID{1}, TraceFlags: trace.FlagsSampled,
	}))
	in := principal("subaccount").at("GET", "/reports")
	in.Token.ID = 42
	for range 2 {
		if _, err := e.Decide(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.Decide(ctx, principal("user")); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines:\n%s", len(lines), buf.String())
	}
	var recs []map[string]any
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		recs = append(recs, m)
	}
	first := recs[0]
	want := map[string]any{
		"trace_id": traceID.String(), "span_id": trace.SpanID{1}.String(),
		"revision": e.Revision(), "path": "fleet/authz/decision",
	}
	for k, v := range want {
		if first[k] != v {
			t.Errorf("%s = %#v, want %#v", k, first[k], v)
		}
	}
	wantCustom := map[string]any{
		"route": "GET /reports", "token_id": float64(42), "account_id": float64(7),
		"account_type": "subaccount", "allow": false, "code": "PRIVILEGE_REQUIRED", "cached": false,
	}
	if custom, _ := first["custom"].(map[string]any); !maps.Equal(custom, wantCustom) {
		t.Errorf("custom %v, want %v", first["custom"], wantCustom)
	}
	keys := []string{"labels", "decision_id", "timestamp", "trace_id", "span_id", "path", "revision", "bundles", "input", "result", "metrics", "custom"}
	if got := slices.Sorted(maps.Keys(first)); !slices.Equal(got, slices.Sorted(slices.Values(keys))) {
		t.Errorf("fields %v, want exactly %v", got, keys)
	}
	// OPA's own decision-log event type reads every record.
	for i, l := range lines {
		var ev logs.EventV1
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("line %d is not an OPA decision-log event: %v", i, err)
		}
		if ev.DecisionID != recs[i]["decision_id"] || ev.Path != DecisionPath || ev.TraceID != traceID.String() ||
			ev.Bundles[BundleName].Revision != e.Revision() || ev.Timestamp.IsZero() || ev.Input == nil || ev.Result == nil {
			t.Errorf("line %d as EventV1: %+v", i, ev)
		}
		if ns, ok := ev.Metrics["timer_rego_query_eval_ns"].(float64); !ok || ns <= 0 {
			t.Errorf("line %d: metrics %v", i, ev.Metrics)
		}
	}
	var ev logs.EventV1
	_ = json.Unmarshal([]byte(lines[0]), &ev)
	res, _ := (*ev.Result).(map[string]any)
	if res["allow"] != false || res["code"] != "PRIVILEGE_REQUIRED" {
		t.Errorf("result %v", res)
	}
	input, _ := (*ev.Input).(map[string]any)
	if tok, _ := input["token"].(map[string]any); tok["id"] != float64(42) || input["request"] == nil || input["account"] == nil {
		t.Errorf("input %v", input)
	}
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(first["decision_id"].(string)) || first["decision_id"] == recs[1]["decision_id"] {
		t.Errorf("decision ids %v, %v", first["decision_id"], recs[1]["decision_id"])
	}
	if c := recs[1]["custom"].(map[string]any); c["cached"] != true {
		t.Errorf("second cached %v", c["cached"])
	}
	if c := recs[2]["custom"].(map[string]any); c["allow"] != true || c["code"] != "ALLOW" {
		t.Errorf("allow record: %v", recs[2])
	}
	if strings.Contains(buf.String(), "flt_") {
		t.Error("a token secret in the log")
	}
}

// recorder is a TracerProvider that keeps span names and attributes.
type recorder struct {
	noop.TracerProvider
	spans *[]*recordedSpan
}

type recordedSpan struct {
	noop.Span
	name  string
	attrs map[attribute.Key]attribute.Value
}

func (s *recordedSpan) SetAttributes(kv ...attribute.KeyValue) {
	for _, a := range kv {
		s.attrs[a.Key] = a.Value
	}
}

type recordingTracer struct {
	noop.Tracer
	spans *[]*recordedSpan
}

func (r recorder) Tracer(string, ...trace.TracerOption) trace.Tracer {
	return recordingTracer{spans: r.spans}
}

func (t recordingTracer) Start(ctx context.Context, name string, _ ...trace.SpanStartOption) (context.Context, trace.Span) {
	s := &recordedSpan{name: name, attrs: map[attribute.Key]attribute.Value{}}
	*t.spans = append(*t.spans, s)
	return trace.ContextWithSpan(ctx, s), s
}

func TestSpans(t *testing.T) {
	var spans []*recordedSpan
	e := newEngine(t, Options{TracerProvider: recorder{spans: &spans}})
	ctx := context.Background()
	_, _ = e.Decide(ctx, principal("subaccount").at("GET", "/reports"))
	_, _ = e.Decide(ctx, principal("user"))
	_, _ = e.Decide(ctx, principal("user"))
	_, _ = e.Scope(ctx, principal("user"), "events")
	if len(spans) != 4 {
		t.Fatalf("%d spans", len(spans))
	}
	check := func(s *recordedSpan, name string, want map[attribute.Key]any) {
		t.Helper()
		if s.name != name {
			t.Errorf("span %q, want %q", s.name, name)
		}
		for k, v := range want {
			if got := s.attrs[k].AsInterface(); got != v {
				t.Errorf("%s %s = %v, want %v", name, k, got, v)
			}
		}
	}
	check(spans[0], "policy.decide", map[attribute.Key]any{"fleet.decision.code": "PRIVILEGE_REQUIRED", "fleet.policy.cached": false, "fleet.policy.revision": e.Revision()})
	check(spans[1], "policy.decide", map[attribute.Key]any{"fleet.decision.code": "ALLOW", "fleet.policy.cached": false})
	check(spans[2], "policy.decide", map[attribute.Key]any{"fleet.policy.cached": true})
	check(spans[3], "policy.scope", map[attribute.Key]any{"fleet.scope.resource": "events", "fleet.policy.cached": false, "fleet.policy.revision": e.Revision()})
}

// TestDecisionLogShape (issue 19 item 20): every record, of a route or a
// management decision, has the shape of an OPA decision-log event: only
// keys of OPA's EventV1 at the top level (fleetapi's own fields under
// custom, as OPA puts fields a deployment adds), labels with the id of the
// instance (a UUID, the same on every record of one engine, another for
// another engine) and the OPA version, plus the configured labels.
func TestDecisionLogShape(t *testing.T) {
	eventKeys := map[string]bool{}
	ty := reflect.TypeFor[logs.EventV1]()
	for i := range ty.NumField() {
		if name, _, _ := strings.Cut(ty.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			eventKeys[name] = true
		}
	}
	var buf bytes.Buffer
	e := newEngine(t, Options{DecisionLog: &buf, DecisionLogLabels: map[string]string{"service": "fleetapi"}})
	ctx := context.Background()
	if _, err := e.Decide(ctx, principal("user")); err != nil {
		t.Fatal(err)
	}
	in := NewManagementInput(tenancy.Principal{
		Token:   tenancy.Token{ID: 42, Permissions: []string{"*"}},
		Account: tenancy.Account{ID: 3, Type: tenancy.User, ManagerID: 2, Active: true},
	}, time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC), 1200)
	in.Action = ActionAccountUpdate
	in.Change = map[string]any{"email": "someone@example.test"}
	if _, err := e.DecideManagement(ctx, in); err != nil {
		t.Fatal(err)
	}
	var other bytes.Buffer
	if _, err := newEngine(t, Options{DecisionLog: &other}).Decide(ctx, principal("user")); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d records:\n%s", len(lines), buf.String())
	}
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	var ids []string
	for i, l := range append(lines, strings.TrimSpace(other.String())) {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		for k := range m {
			if !eventKeys[k] {
				t.Errorf("record %d: top-level key %q is not a field of OPA's EventV1 (fleetapi's own fields go under custom)", i, k)
			}
		}
		var ev logs.EventV1
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("record %d is not an OPA decision-log event: %v", i, err)
		}
		if !uuid.MatchString(ev.Labels["id"]) || ev.Labels["version"] != version.Version {
			t.Errorf("record %d: labels %v, want a UUID id and version %s", i, ev.Labels, version.Version)
		}
		if i < 2 && ev.Labels["service"] != "fleetapi" {
			t.Errorf("record %d: labels %v lack the configured service", i, ev.Labels)
		}
		if ev.Custom["account_id"] == nil || ev.Custom["code"] == nil {
			t.Errorf("record %d: custom %v", i, ev.Custom)
		}
		ids = append(ids, ev.Labels["id"])
	}
	if ids[0] != ids[1] || ids[1] == ids[2] {
		t.Errorf("instance ids %v: want one per engine", ids)
	}
	var mgmt logs.EventV1
	_ = json.Unmarshal([]byte(lines[1]), &mgmt)
	if mgmt.Path != ManagementDecisionPath || mgmt.Custom["action"] != ActionAccountUpdate || mgmt.Custom["route"] != "" ||
		!slices.Equal(mgmt.Erased, []string{"/input/change/email"}) {
		t.Errorf("management record: path %s, custom %v, erased %v", mgmt.Path, mgmt.Custom, mgmt.Erased)
	}
	for _, reserved := range []string{"id", "version"} {
		if _, err := New(ctx, Options{Schema: ResourceList(testResources), DecisionLogLabels: map[string]string{reserved: "x"}}); err == nil {
			t.Errorf("label %q accepted", reserved)
		}
	}
}
