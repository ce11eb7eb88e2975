package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/plugins/logs"
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
		"trace_id": traceID.String(), "span_id": trace.SpanID{1}.String(), "route": "GET /reports", "token_id": float64(42), "account_id": float64(7),
		"account_type": "subaccount", "allow": false, "code": "PRIVILEGE_REQUIRED",
		"revision": e.Revision(), "cached": false, "path": "fleet/authz/decision",
	}
	for k, v := range want {
		if first[k] != v {
			t.Errorf("%s = %#v, want %#v", k, first[k], v)
		}
	}
	keys := []string{"decision_id", "timestamp", "trace_id", "span_id", "path", "revision", "bundles", "input", "result", "metrics",
		"route", "token_id", "account_id", "account_type", "allow", "code", "cached"}
	if len(first) != len(keys) {
		t.Errorf("fields %v, want exactly %v", first, keys)
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
	if recs[1]["cached"] != true {
		t.Errorf("second cached %v", recs[1]["cached"])
	}
	if recs[2]["allow"] != true || recs[2]["code"] != "ALLOW" {
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
