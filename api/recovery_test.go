package api

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

func TestRecoveryAnswersInternalError(t *testing.T) {
	var logs strings.Builder
	s, err := New(Config{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	h := withRequestID(s.withRecovery(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic("secret internal detail")
	})))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v2/me", nil))
	if rec.Code != http.StatusInternalServerError {
		t.Fatalf("status %d", rec.Code)
	}
	var body ErrorEnvelope
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	if body.Error.Code != CodeInternal || body.Meta.RequestID != rec.Header().Get("X-Request-Id") {
		t.Fatalf("body %s", rec.Body.String())
	}
	if strings.Contains(rec.Body.String(), "secret") || strings.Contains(rec.Body.String(), "goroutine") {
		t.Fatalf("internals leaked: %s", rec.Body.String())
	}
	if !strings.Contains(logs.String(), "secret internal detail") || !strings.Contains(logs.String(), "stack") {
		t.Fatalf("the panic was not logged: %s", logs.String())
	}
}

// TestPanicSpanAndLog: a panic in a handler is a 500 that the server span
// (status Error, error.type INTERNAL_ERROR, http.response.status_code 500)
// and the request log see, like any other answer.
func TestPanicSpanAndLog(t *testing.T) {
	var logs strings.Builder
	rec := tracetest.NewSpanRecorder()
	s, err := New(Config{
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)),
		Logger:         slog.New(slog.NewJSONHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	s.fuego.Mux.HandleFunc("GET /panic", func(http.ResponseWriter, *http.Request) { panic("boom") })
	res := httptest.NewRecorder()
	s.Handler().ServeHTTP(res, httptest.NewRequest("GET", "/panic", nil))
	if res.Code != http.StatusInternalServerError || !strings.Contains(res.Body.String(), CodeInternal) {
		t.Fatalf("status %d: %s", res.Code, res.Body.String())
	}
	spans := rec.Ended()
	if len(spans) != 1 || spans[0].Name() != "GET /panic" {
		t.Fatalf("spans %v", spans)
	}
	sp := spans[0]
	if sp.Status().Code != codes.Error {
		t.Errorf("server span status %+v", sp.Status())
	}
	want := map[string]attribute.Value{
		"error.type":                attribute.StringValue(CodeInternal),
		"fleet.error.code":          attribute.StringValue(CodeInternal),
		"http.response.status_code": attribute.IntValue(500),
	}
	for _, kv := range sp.Attributes() {
		if w, ok := want[string(kv.Key)]; ok {
			if kv.Value != w {
				t.Errorf("%s = %v, want %v", kv.Key, kv.Value.String(), w.String())
			}
			delete(want, string(kv.Key))
		}
	}
	if len(want) > 0 {
		t.Errorf("missing span attributes %v", want)
	}
	if !strings.Contains(logs.String(), `"msg":"request"`) || !strings.Contains(logs.String(), `"status":500`) {
		t.Errorf("no request log line with status 500:\n%s", logs.String())
	}
}
