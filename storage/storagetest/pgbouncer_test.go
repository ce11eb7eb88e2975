package storagetest_test

import (
	"context"
	"database/sql"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/storagetest"
)

// startPgBouncer starts a PgBouncer of the test's own in front of the test
// server; without the binary the test fails under CI=true and is skipped
// elsewhere.
func startPgBouncer(t *testing.T, opts storagetest.PgBouncerOptions) *storagetest.PgBouncer {
	t.Helper()
	b, err := storagetest.StartPgBouncer(storagetest.ServerURL(t), opts)
	if err != nil {
		if strings.Contains(err.Error(), "not installed") && os.Getenv("CI") != "true" {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	t.Cleanup(b.Stop)
	return b
}

// adminShow runs a SHOW command on PgBouncer's admin console and returns
// its rows as column → value maps.
func adminShow(t *testing.T, b *storagetest.PgBouncer, what string) []map[string]string {
	t.Helper()
	db := storage.Open(b.AdminURL(), storage.Options{MaxOpenConns: 1})
	defer db.Close()
	rows, err := db.QueryContext(context.Background(), "SHOW "+what)
	if err != nil {
		t.Fatalf("SHOW %s: %v\n%s", what, err, b.Log())
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		row := map[string]string{}
		for i, c := range cols {
			row[c] = vals[i].String
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func databaseName(t *testing.T, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(u.Path, "/")
}

// TestTransactionPooledTellsPoolingApart: the probe that guards the
// PgBouncer mode answers true only behind transaction pooling — not on a
// direct connection, not behind PgBouncer in session mode — so a suite
// that bypassed the pooler could not pass it.
func TestTransactionPooledTellsPoolingApart(t *testing.T) {
	ctx := context.Background()
	db := storagetest.New(t)
	name := databaseName(t, db.DirectURL)
	cases := []struct {
		name string
		url  string
		want bool
	}{
		{"direct", db.DirectURL, false},
		{"pgbouncer_session", startPgBouncer(t, storagetest.PgBouncerOptions{PoolMode: "session"}).URL(name), false},
		{"pgbouncer_transaction", startPgBouncer(t, storagetest.PgBouncerOptions{}).URL(name), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := storage.Open(c.url, storage.Options{MaxOpenConns: 4})
			defer h.Close()
			got, err := storagetest.TransactionPooled(ctx, h)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Fatalf("TransactionPooled = %v, want %v", got, c.want)
			}
		})
	}
}

// TestPgBouncerConfig: the PgBouncer the tests start runs the settings
// docs/operations.md recommends, as its admin console reports them.
func TestPgBouncerConfig(t *testing.T) {
	b := startPgBouncer(t, storagetest.PgBouncerOptions{})
	want := map[string]string{
		"pool_mode":                 "transaction",
		"default_pool_size":         "4",
		"max_user_connections":      "24",
		"server_reset_query_always": "0",
		"ignore_startup_parameters": "extra_float_digits",
		"auth_type":                 "trust",
	}
	for _, row := range adminShow(t, b, "CONFIG") {
		if w, ok := want[row["key"]]; ok {
			if row["value"] != w {
				t.Errorf("%s = %q, want %q", row["key"], row["value"], w)
			}
			delete(want, row["key"])
		}
	}
	for k := range want {
		t.Errorf("SHOW CONFIG has no %s", k)
	}
}

// TestModeHandsOutPooledDatabases: in PgBouncer mode every database New
// hands out is reached through the test process's PgBouncer in
// transaction pooling (its admin console lists the database's pool in
// transaction mode, and the probe sees transactions move between
// backends); outside it, directly. The suite cannot bypass the pooler
// without failing here.
func TestModeHandsOutPooledDatabases(t *testing.T) {
	ctx := context.Background()
	db := storagetest.New(t)
	pooled, err := storagetest.TransactionPooled(ctx, db.DB)
	if err != nil {
		t.Fatal(err)
	}
	if pooled != storagetest.PgBouncerMode() {
		t.Fatalf("TransactionPooled = %v, but %s=%q", pooled, storagetest.PgBouncerEnv, os.Getenv(storagetest.PgBouncerEnv))
	}
	b := storagetest.PgBouncerOf(t)
	if !storagetest.PgBouncerMode() {
		if b != nil || db.URL != db.DirectURL {
			t.Fatalf("outside PgBouncer mode: PgBouncer %v, URL %s, direct %s", b, db.URL, db.DirectURL)
		}
		return
	}
	name := databaseName(t, db.URL)
	for _, row := range adminShow(t, b, "POOLS") {
		if row["database"] == name {
			if row["pool_mode"] != "transaction" {
				t.Fatalf("database %s: pool_mode %q", name, row["pool_mode"])
			}
			return
		}
	}
	t.Fatalf("PgBouncer's admin console does not list %s", name)
}
