package main

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/fleetapi/fleetapi/storage/storagetest"
)

// TestConcurrentMigrateCommands runs `fleetapi migrate up` and `migrate
// status` several times at once against a database that does not exist
// yet, as a deployment's migrate job and replicas starting together do:
// every run succeeds (issue 19 item 11; on 3a7d212 the losers failed on
// CREATE DATABASE, on bun's lock row or on creating bun's tables).
func TestConcurrentMigrateCommands(t *testing.T) {
	_, dsn := storagetest.UnusedDatabase(t, "fleetapi_test_migrate_")
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
