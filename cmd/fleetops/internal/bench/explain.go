package bench

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/storage"
)

// explained is one scenario's SQL with its EXPLAIN (ANALYZE, BUFFERS) plans.
type explained struct {
	name, request string
	statements    []explainedStatement
}

// explainedStatement is one SQL statement and its plan.
type explainedStatement struct {
	sql, plan string
}

// queryRecorder is a bun query hook that keeps the SQL of every query.
type queryRecorder struct {
	mu      sync.Mutex
	queries []string
}

// BeforeQuery does nothing.
func (r *queryRecorder) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	return ctx
}

// AfterQuery keeps the query's SQL.
func (r *queryRecorder) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queries = append(r.queries, e.Query)
}

// explain runs the scenario's floor once through a recording store, so
// that it captures the exact SQL storage sends, then explains every
// statement with EXPLAIN (ANALYZE, BUFFERS) inside a transaction that is
// rolled back (a create writes nothing).
func (h *harness) explain(ctx context.Context, sc scenario) (explained, error) {
	rec := &queryRecorder{}
	saved := h.store
	h.store = storage.NewStore(h.db.WithQueryHook(rec))
	_, err := sc.floor(ctx, call{k: 0, n: 1 << 40})
	h.store = saved
	if err != nil {
		return explained{}, fmt.Errorf("%s: explain: %w", sc.name, err)
	}
	out := explained{name: sc.name, request: sc.request + " (" + sc.role + ")"}
	tx, err := h.db.BeginTx(ctx, nil)
	if err != nil {
		return out, err
	}
	defer tx.Rollback() //nolint:errcheck // always rolled back
	for _, q := range rec.queries {
		if !explainable(q) {
			continue
		}
		var lines []string
		if err := tx.NewRaw("EXPLAIN (ANALYZE, BUFFERS) "+q).Scan(ctx, &lines); err != nil {
			return out, fmt.Errorf("%s: explain %q: %w", sc.name, q, err)
		}
		out.statements = append(out.statements, explainedStatement{sql: q, plan: strings.Join(lines, "\n")})
	}
	return out, nil
}

// explainMarkdown renders the plans of every scenario.
func explainMarkdown(all []explained) string {
	var b strings.Builder
	for _, e := range all {
		fmt.Fprintf(&b, "### %s\n\n`%s`\n\n", e.name, e.request)
		for i, st := range e.statements {
			fmt.Fprintf(&b, "Statement %d:\n\n```sql\n%s\n```\n\n```\n%s\n```\n\n", i+1, st.sql, st.plan)
		}
	}
	return b.String()
}

// explainable reports whether q is a statement EXPLAIN accepts (not a
// transaction command).
func explainable(q string) bool {
	word, _, _ := strings.Cut(strings.TrimSpace(q), " ")
	switch strings.ToUpper(word) {
	case "SELECT", "INSERT", "UPDATE", "DELETE", "WITH":
		return true
	}
	return false
}
