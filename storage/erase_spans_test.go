package storage_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/demodata"
)

// TestEraseSpanNames: every SQL span of an erase is named by its
// statement's verb and says it in db.operation (bun called each raw DELETE
// of the erase a SELECT): one DELETE span per table of
// storage.EraseTables, UPDATE spans for
// the rows scrubbed (the audit trail's after JIT is turned off for the
// transaction), no statement whose verb and span name differ.
func TestEraseSpanNames(t *testing.T) {
	t.Parallel()
	_, db := newStore(t)
	importJSON(t, db, demodata.File())
	rec := tracetest.NewSpanRecorder()
	traced := storage.Open(db.URL, storage.Options{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)), MaxOpenConns: 2})
	t.Cleanup(func() { traced.Close() })
	if _, err := storage.NewStore(traced).EraseAccount(context.Background(), "acme", false); err != nil {
		t.Fatal(err)
	}
	var deleted []string
	updates, jitOff := 0, false
	for _, s := range rec.Ended() {
		attrs := map[string]string{}
		for _, kv := range s.Attributes() {
			attrs[string(kv.Key)] = kv.Value.AsString()
		}
		stmt, ok := attrs["db.statement"]
		if !ok {
			continue
		}
		verb := storage.StatementOperation(stmt)
		if s.Name() != verb || attrs["db.operation"] != verb {
			t.Errorf("span %q (db.operation %q) for a %s statement: %.120s", s.Name(), attrs["db.operation"], verb, stmt)
		}
		if strings.HasPrefix(stmt, "SET LOCAL jit = off") {
			jitOff = true
		}
		if strings.Contains(stmt, "UPDATE audit_events") && !jitOff {
			t.Errorf("the audit trail's scrub runs with JIT (its estimate compiles it: half a second for an indexed read)")
		}
		switch s.Name() {
		case "DELETE":
			if _, rest, ok := strings.Cut(stmt, "DELETE FROM "); ok {
				table, _, _ := strings.Cut(rest, " ")
				deleted = append(deleted, strings.Trim(table, `"`))
			}
		case "UPDATE":
			updates++
		}
	}
	for _, table := range storage.EraseTables() {
		if !slices.Contains(deleted, table) {
			t.Errorf("no DELETE span names %s: %v", table, deleted)
		}
	}
	if updates < 3 {
		t.Errorf("%d UPDATE spans, want the audit trail's, the reports' and the event rules' scrubs", updates)
	}
}

// TestStatementOperation: the verb of a statement, whatever precedes it
// (blanks, comments, common table expressions with their own SELECTs,
// quoted text holding keywords).
func TestStatementOperation(t *testing.T) {
	t.Parallel()
	for query, want := range map[string]string{
		"DELETE FROM tokens WHERE id = ANY(?0)":                                                                     "DELETE",
		"  \n\tupdate audit_events SET changes = '{}'":                                                              "UPDATE",
		"-- a comment\nINSERT INTO usage_daily VALUES (1)":                                                          "INSERT",
		"/* SELECT */ DELETE FROM x":                                                                                "DELETE",
		"WITH s AS (SELECT 1 AS id) UPDATE audit_events SET x = 1 FROM s":                                           "UPDATE",
		"WITH RECURSIVE h AS (SELECT id FROM t UNION SELECT 2) SELECT id FROM h":                                    "SELECT",
		`WITH "update" AS (SELECT 'DELETE' AS v), d AS (DELETE FROM t RETURNING id) INSERT INTO u SELECT id FROM d`: "INSERT",
		"SELECT count(*) FROM accounts":                                                                             "SELECT",
		"":                                                                                                          "SQL",
	} {
		if got := storage.StatementOperation(query); got != want {
			t.Errorf("%q: %q, want %q", query, got, want)
		}
	}
}

// TestRawStatementSpans: a statement written raw (db.NewRaw, ExecContext)
// is a span named by its verb, with that db.operation, and keeps its
// db.statement: bun alone calls every raw statement a SELECT, and one sent
// without a builder by its first word (WITH).
func TestRawStatementSpans(t *testing.T) {
	t.Parallel()
	_, db := newStore(t)
	rec := tracetest.NewSpanRecorder()
	traced := storage.Open(db.URL, storage.Options{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)), MaxOpenConns: 1})
	t.Cleanup(func() { traced.Close() })
	ctx := context.Background()
	want := []string{"DELETE", "UPDATE", "SELECT", "DELETE", "INSERT"}
	if _, err := traced.NewRaw("DELETE FROM idempotency_keys WHERE account_id = ?", 0).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := traced.NewRaw("UPDATE fleet_auth_replicas SET acked_seq = 0 WHERE id = ?", "none").Exec(ctx); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := traced.NewRaw("WITH x AS (SELECT 1 AS v) SELECT v FROM x").Scan(ctx, &n); err != nil {
		t.Fatal(err)
	}
	if _, err := traced.ExecContext(ctx, "WITH x AS (SELECT 0 AS id) DELETE FROM tokens WHERE id IN (SELECT id FROM x)"); err != nil {
		t.Fatal(err)
	}
	if _, err := traced.ExecContext(ctx, "INSERT INTO count_generation SELECT true, 0 WHERE false"); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range rec.Ended() {
		for _, kv := range s.Attributes() {
			if kv.Key == "db.operation" && kv.Value.AsString() != s.Name() {
				t.Errorf("span %q with db.operation %q", s.Name(), kv.Value.AsString())
			}
			if kv.Key == "db.statement" && kv.Value.AsString() == "" {
				t.Errorf("span %q without its statement", s.Name())
			}
		}
		got = append(got, s.Name())
	}
	if !slices.Equal(got, want) {
		t.Errorf("spans %v, want %v", got, want)
	}
}
