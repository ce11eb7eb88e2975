package api

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestRecoveryAnswersInternalError(t *testing.T) {
	var logs strings.Builder
	s := &Server{log: slog.New(slog.NewJSONHandler(&logs, nil))}
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
