package api_test

import (
	"net/http"
	"net/url"
	"testing"
)

// TestDataExceptionIsInvalidParameter sends list filters whose values
// PostgreSQL refuses with a data exception (SQLSTATE class 22): a year 0
// date or timestamp, a JSON number beyond numeric, a JSON \u0000 escape.
// Whether the api's parsing or the database refuses them, the answer is
// 400 INVALID_PARAMETER with a reason, never 500.
func TestDataExceptionIsInvalidParameter(t *testing.T) {
	a := newTestAPI(t)
	tok := demoToken(t, "acme-all")
	for _, path := range []string{
		"/api/v2/services?days_last=0000-01-01",
		"/api/v2/reports?dt_schedule_d=0000-01-01T00:00:00Z",
		"/api/v2/events?day_time=" + url.QueryEscape(`{"mon":1e999999}`),
		"/api/v2/events?day_time=" + url.QueryEscape(`{"mon":"a\u0000b"}`),
	} {
		res := a.get(path, tok)
		if res.status != http.StatusBadRequest || res.errorCode(t) != "INVALID_PARAMETER" {
			t.Errorf("%s: %d %s", path, res.status, res.raw)
			continue
		}
		details, _ := res.body["error"].(map[string]any)["details"].(map[string]any)
		if reason, _ := details["reason"].(string); reason == "" {
			t.Errorf("%s: no details.reason: %s", path, res.raw)
		}
	}
}
