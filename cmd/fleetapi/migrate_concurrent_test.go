package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"sync"
	"testing"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/storagetest"
)

// TestConcurrentMigrateCommands runs `fleetapi migrate up` and `migrate
// status` several times at once against a database that does not exist
// yet, as a deployment's migrate job and replicas starting together do:
// every run succeeds (issue 19 item 11; on 3a7d212 the losers failed on
// CREATE DATABASE, on bun's lock row or on creating bun's tables).
func TestConcurrentMigrateCommands(t *testing.T) {
	server := storagetest.ServerURL(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "fleetapi_test_migrate_" + hex.EncodeToString(b[:])
	dsn, err := storage.WithDatabase(server, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		a := storage.Open(server, storage.Options{MaxOpenConns: 1})
		defer a.Close()
		_, _ = a.ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	actions := []string{"up", "up", "up", "status", "up", "status"}
	outs := make([]syncBuffer, len(actions))
	errs := make([]error, len(actions))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, action := range actions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = run(context.Background(), []string{"migrate", action, "--database-url", dsn}, envOf(nil), &outs[i])
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("migrate %s (run %d of %d at once): %v\n%s", actions[i], i, len(actions), err, outs[i].String())
		}
	}
	if out := runOK(t, nil, "migrate", "status", "--database-url", dsn); strings.Contains(out, "pending") {
		t.Fatalf("after the concurrent runs, migrations are pending:\n%s", out)
	}
}
