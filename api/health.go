package api

import (
	"context"
	"net/http"
	"time"
)

// Pinger reports whether a dependency answers (storage.Store.Ping).
type Pinger interface {
	Ping(ctx context.Context) error
}

// healthz answers GET /healthz: the process is alive.
func healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok"})
}

// policyFreshness is implemented by a policy whose source can go stale
// (policy.Engine: a bundle URL that has not confirmed the set in force).
type policyFreshness interface {
	Freshness() (refreshed time.Time, stale bool)
}

// readyz answers GET /readyz: 200 when the database answers within a second
// and the policy is loaded, 503 otherwise. The body carries the policy
// revision in force (policy_revision) and, for a bundle URL, when the URL
// last confirmed it (policy_refreshed_at); checks.policy is "stale" when
// that is longer ago than the engine allows. A stale policy does not turn
// the answer to 503: every replica polls the same URL, so an outage of the
// bundle server would take every replica out of the load balancer at
// once, while the set in force still answers correctly.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	checks := map[string]string{"policy": "ok", "database": "ok", "server": "ok"}
	status := http.StatusOK
	if s.draining.Load() {
		checks["server"] = "shutting down"
		status = http.StatusServiceUnavailable
	}
	if s.cfg.Policy == nil {
		checks["policy"] = "not loaded"
		status = http.StatusServiceUnavailable
	}
	if s.cfg.Ready == nil {
		checks["database"] = "not configured"
		status = http.StatusServiceUnavailable
	} else {
		ctx, cancel := context.WithTimeout(r.Context(), time.Second)
		defer cancel()
		if err := s.cfg.Ready.Ping(ctx); err != nil {
			checks["database"] = "unavailable"
			status = http.StatusServiceUnavailable
		}
	}
	if status != http.StatusOK {
		w.Header().Set("Retry-After", "5")
	}
	body := map[string]any{"status": map[bool]string{true: "ok", false: "unavailable"}[status == http.StatusOK], "checks": checks}
	if s.cfg.Policy != nil {
		body["policy_revision"] = s.cfg.Policy.Revision()
		if f, ok := s.cfg.Policy.(policyFreshness); ok {
			if at, stale := f.Freshness(); !at.IsZero() {
				body["policy_refreshed_at"] = at.UTC().Format(time.RFC3339)
				if stale {
					checks["policy"] = "stale"
				}
			}
		}
	}
	writeJSON(w, status, body)
}

// OpsHandler serves the operational endpoints outside /api/v2: /healthz,
// /readyz and, when a metrics handler is configured, /metrics. The API
// handler serves them too, unless Config.SeparateOps is set. Its answers
// carry the same nosniff and no-store headers as the API's.
func (s *Server) OpsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
	if s.cfg.MetricsHandler != nil {
		mux.Handle("GET /metrics", s.cfg.MetricsHandler)
	}
	return withResponseHeaders(mux)
}
