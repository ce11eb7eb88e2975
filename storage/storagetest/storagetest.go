// Package storagetest gives tests a real, migrated PostgreSQL database of
// their own. It finds a server as docs/design.md §7 says, migrates a template
// database once per migrations hash, and creates each test's database from
// that template. With CI=true a missing server fails the test instead of
// skipping it.
package storagetest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	neturl "net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/migrations"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/pgserver"
)

// DB is a fresh database for one test.
type DB struct {
	*bun.DB
	// URL connects to this database: through the test process's
	// PgBouncer in PgBouncer mode (PgBouncerEnv), else directly.
	URL string
	// DirectURL connects to this database directly on PostgreSQL, for
	// what a transaction pooler does not carry (LISTEN, session locks).
	DirectURL string
}

var (
	serverOnce sync.Once
	serverURL  string
	serverErr  error

	bouncerOnce sync.Once
	bouncer     *PgBouncer
	bouncerErr  error
)

// New returns a new migrated database that is dropped when the test ends.
func New(t testing.TB) *DB {
	t.Helper()
	return newDatabase(t, server(t))
}

// newDatabase creates a migrated database on the server at base, from
// the server's template, dropped when the test ends.
func newDatabase(t testing.TB, base string) *DB {
	t.Helper()
	ctx := context.Background()
	tmpl, err := template(t, ctx, base)
	if err != nil {
		t.Fatalf("storagetest: template database: %v", err)
	}
	name := "fleetapi_test_" + randomSuffix()
	admin := storage.Open(mustWithDatabase(t, base, "postgres"), storage.Options{MaxOpenConns: 1})
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s", name, tmpl)); err != nil {
		t.Fatalf("storagetest: create database: %v", err)
	}
	dropAtEnd(t, base, name) // after db.Close: cleanups run last first
	direct := mustWithDatabase(t, base, name)
	url := direct
	if b := pooler(t, base); b != nil {
		url = b.URL(name)
	}
	db := storage.Open(url, storage.Options{MaxOpenConns: 8})
	t.Cleanup(func() { db.Close() })
	return &DB{DB: db, URL: url, DirectURL: direct}
}

// UnusedDatabase returns the name of a database that does not exist yet
// on the test server, prefix followed by a random suffix, and its URL, for
// tests of creating and migrating one; it is dropped, if it was created,
// when the test ends.
func UnusedDatabase(t testing.TB, prefix string) (name, url string) {
	t.Helper()
	name = prefix + randomSuffix()
	dropAtEnd(t, server(t), name)
	return name, mustWithDatabase(t, server(t), name)
}

// dropAtEnd drops the database name of the server at base when the test
// ends (after the cleanups registered later, which close its
// connections).
func dropAtEnd(t testing.TB, base, name string) {
	t.Helper()
	admin := mustWithDatabase(t, base, "postgres")
	t.Cleanup(func() {
		a := storage.Open(admin, storage.Options{MaxOpenConns: 1})
		defer a.Close()
		_, _ = a.ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
}

// PgBouncerOf returns the PgBouncer of the test process in PgBouncer mode
// (PgBouncerEnv), nil otherwise.
func PgBouncerOf(t testing.TB) *PgBouncer {
	t.Helper()
	return pooler(t, server(t))
}

// pooler starts, once per test process, the PgBouncer of PgBouncer mode,
// in front of the test server; for databases on another server (base is
// not the test server: a private primary of a replication test) it
// returns nil and those are reached directly. In that mode a PgBouncer
// that does not start fails the test: the suite never falls back to
// direct connections unseen.
func pooler(t testing.TB, base string) *PgBouncer {
	t.Helper()
	if !PgBouncerMode() || base != server(t) {
		return nil
	}
	bouncerOnce.Do(func() {
		bouncer, bouncerErr = StartPgBouncer(base, PgBouncerOptions{})
	})
	if bouncerErr != nil {
		t.Fatalf("storagetest: %s=1 but PgBouncer did not start: %v", PgBouncerEnv, bouncerErr)
	}
	return bouncer
}

// ServerURL returns the URL of the test server's "postgres" database, for
// tests that manage databases themselves.
func ServerURL(t testing.TB) string {
	t.Helper()
	return mustWithDatabase(t, server(t), "postgres")
}

func server(t testing.TB) string {
	t.Helper()
	serverOnce.Do(func() {
		var s *pgserver.Server
		s, serverErr = pgserver.Find(context.Background(), os.Getenv("FLEET_DATABASE_URL"), privateDir(), os.Stderr)
		if serverErr == nil {
			serverURL = s.URL
			// A private cluster started for tests keeps running for the next
			// package; it listens only on its own unix socket.
		}
	})
	if serverErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("storagetest: no PostgreSQL (CI=true, so this fails instead of skipping): %v", serverErr)
		}
		t.Skipf("storagetest: no PostgreSQL: %v", serverErr)
	}
	return serverURL
}

// privateDir is where a private cluster for tests lives: .pgtest at the
// module root.
func privateDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", ".pgtest")
}

// template creates (once per migrations hash, across packages and runs) a
// migrated template database and returns its name.
func template(t testing.TB, ctx context.Context, base string) (string, error) {
	h, err := migrationsHash()
	if err != nil {
		return "", err
	}
	name := "fleetapi_tmpl_" + h[:16]
	admin := storage.Open(mustWithDatabase(t, base, "postgres"), storage.Options{MaxOpenConns: 1})
	defer admin.Close()
	// Serialise template creation across test processes.
	conn, err := admin.Conn(ctx)
	if err != nil {
		return "", storage.Translate(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock(727274)"); err != nil {
		return "", err
	}
	defer conn.ExecContext(context.Background(), "SELECT pg_advisory_unlock(727274)") //nolint:errcheck
	var exists bool
	if err := conn.NewRaw("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = ?)", name).Scan(ctx, &exists); err != nil {
		return "", err
	}
	if exists {
		markUsed(ctx, conn, name)
		dropStale(ctx, conn, name)
		return name, nil
	}
	building := name + "_build"
	_, _ = conn.ExecContext(ctx, "DROP DATABASE IF EXISTS "+building+" WITH (FORCE)")
	if _, err := conn.ExecContext(ctx, "CREATE DATABASE "+building); err != nil {
		return "", err
	}
	db := storage.Open(mustWithDatabase(t, base, building), storage.Options{MaxOpenConns: 2})
	err = storage.Migrate(ctx, db)
	db.Close()
	if err != nil {
		return "", err
	}
	if _, err := conn.ExecContext(ctx, "ALTER DATABASE "+building+" RENAME TO "+name); err != nil {
		return "", err
	}
	markUsed(ctx, conn, name)
	dropStale(ctx, conn, name)
	return name, nil
}

// templateStampPrefix starts the comment that markUsed writes on a template.
const templateStampPrefix = "fleetapi template last used "

// markUsed stamps a template with the time it was last used, so that
// dropStale leaves alone the templates of other migration sets that are in
// use (another checkout or branch testing at the same time) and drops only
// those unused for a day.
func markUsed(ctx context.Context, conn bun.Conn, name string) {
	stamp := templateStampPrefix + strconv.FormatInt(time.Now().Unix(), 10)
	_, _ = conn.ExecContext(ctx, "COMMENT ON DATABASE "+name+" IS ?", stamp)
}

// dropStale removes templates of other migrations unused for a day (see
// markUsed) and test databases left behind by runs that were killed more
// than a day ago. Errors are ignored:
// a database still in use is left for a later run.
func dropStale(ctx context.Context, conn bun.Conn, current string) {
	var names []string
	cutoff := time.Now().Add(-24 * time.Hour).Unix()
	var comments []string
	err := conn.NewRaw(`SELECT datname, COALESCE(shobj_description(oid, 'pg_database'), '') FROM pg_database
		WHERE datname LIKE 'fleetapi\_tmpl\_%' OR datname LIKE 'fleetapi\_test\_%'`).Scan(ctx, &names, &comments)
	if err != nil {
		return
	}
	for i, n := range names {
		if n == current || strings.HasSuffix(n, "_build") {
			continue
		}
		if stamp, ok := strings.CutPrefix(comments[i], templateStampPrefix); ok {
			if sec, err := strconv.ParseInt(stamp, 10, 64); err == nil && sec > cutoff {
				continue // a template of other migrations, used within a day
			}
		}
		if rest, ok := strings.CutPrefix(n, "fleetapi_test_"); ok {
			stamp, _, _ := strings.Cut(rest, "_")
			if sec, err := strconv.ParseInt(stamp, 10, 64); err != nil || sec > cutoff {
				continue
			}
		}
		_, _ = conn.ExecContext(ctx, "DROP DATABASE IF EXISTS "+n)
	}
}

func migrationsHash() (string, error) {
	h := sha256.New()
	err := fs.WalkDir(migrations.Files(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(migrations.Files(), p)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", p, len(b))
		h.Write(b)
		return nil
	})
	return hex.EncodeToString(h.Sum(nil)), err
}

func randomSuffix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%d_%s", time.Now().Unix(), hex.EncodeToString(b))
}

// databaseName is the database of url.
func databaseName(t testing.TB, url string) string {
	t.Helper()
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(u.Path, "/")
}

func mustWithDatabase(t testing.TB, base, name string) string {
	t.Helper()
	u, err := storage.WithDatabase(base, name)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
