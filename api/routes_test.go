package api_test

import (
	"net/http"
	"testing"
)

func TestUnknownRouteAndMethod(t *testing.T) {
	a := newTestAPI(t)
	tests := []struct {
		name, method, path string
		status             int
		code, allow        string
	}{
		{"unknown route", http.MethodGet, "/api/v2/nope", 404, "NOT_FOUND", ""},
		{"outside the api", http.MethodGet, "/", 404, "NOT_FOUND", ""},
		{"trailing slash", http.MethodGet, "/api/v2/me/", 404, "NOT_FOUND", ""},
		{"wrong method", http.MethodDelete, "/api/v2/me", 405, "METHOD_NOT_ALLOWED", "GET, HEAD"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := a.do(tt.method, tt.path, nil)
			if res.status != tt.status {
				t.Fatalf("status %d, want %d: %s", res.status, tt.status, res.raw)
			}
			if got := res.errorCode(t); got != tt.code {
				t.Fatalf("code %s, want %s", got, tt.code)
			}
			if got := res.header.Get("Allow"); got != tt.allow {
				t.Fatalf("Allow %q, want %q", got, tt.allow)
			}
		})
	}
}

func TestReadyzDraining(t *testing.T) {
	a := newTestAPI(t)
	if st := a.serve(httptestRequest("GET", "/readyz", "", "192.0.2.1:1")); st != 200 {
		t.Fatalf("/readyz: %d", st)
	}
	a.srv.Drain()
	if st := a.serve(httptestRequest("GET", "/readyz", "", "192.0.2.1:1")); st != 503 {
		t.Fatalf("/readyz while draining: %d", st)
	}
	if st := a.serve(httptestRequest("GET", "/api/v2/me", "Bearer "+demoToken(t, "acme-all"), "192.0.2.1:1")); st != 200 {
		t.Fatalf("requests are still served while draining: %d", st)
	}
}
