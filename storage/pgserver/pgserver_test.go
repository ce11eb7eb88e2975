package pgserver

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/fleetapi/fleetapi/storage"
)

// TestPrivateCluster starts a private PostgreSQL cluster from the installed
// binaries, as `fleetapi dev` and the test helper do when nothing listens on
// 127.0.0.1:5432, migrates it and stops it.
func TestPrivateCluster(t *testing.T) {
	if _, err := pgBinDir(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and no PostgreSQL binaries: %v", err)
		}
		t.Skip(err)
	}
	dir, err := os.MkdirTemp("", "fleetapi-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ctx := context.Background()
	var log bytes.Buffer
	srv, err := StartPrivateCluster(ctx, dir, &log)
	if err != nil {
		t.Fatalf("start: %v\n%s", err, log.String())
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = srv.Stop()
		}
	})
	if !srv.Private {
		t.Fatal("server not marked private")
	}
	if err := storage.EnsureDatabase(ctx, srv.URL); err != nil {
		t.Fatal(err)
	}
	db := storage.Open(srv.URL, storage.Options{MaxOpenConns: 2})
	if err := storage.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.NewRaw("SELECT count(*) FROM accounts").Scan(ctx, &n); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	stopped = true
	// A second start reuses the initialised data folder.
	srv2, err := StartPrivateCluster(ctx, dir, &log)
	if err != nil {
		t.Fatalf("restart: %v\n%s", err, log.String())
	}
	if err := srv2.Stop(); err != nil {
		t.Fatal(err)
	}
}
