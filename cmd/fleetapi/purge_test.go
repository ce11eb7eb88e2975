package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/storage/storagetest"
)

// TestServePurges: `fleetapi serve` runs the purge every
// FLEET_PURGE_INTERVAL: an idempotency key older than a day and a token
// revoked longer than FLEET_TOKEN_RETENTION ago go, a token revoked
// within it stays, and the server logs what it purged.
func TestServePurges(t *testing.T) {
	db := storagetest.New(t)
	env := map[string]string{"FLEET_DATABASE_URL": db.URL, "FLEET_ADDR": "127.0.0.1:0",
		"FLEET_PURGE_INTERVAL": "50ms", "FLEET_TOKEN_RETENTION": "2h"}
	runOK(t, env, "import", writeDemoFile(t))
	ctx := context.Background()
	for _, q := range []string{
		`INSERT INTO idempotency_keys (account_id, key, request_hash, status, response, created_at)
			SELECT id, 'old', '\x00', 201, '{}', now() - interval '25 hours' FROM accounts WHERE username = 'acme'`,
		`INSERT INTO tokens (account_id, name, hash, permissions, revoked_at)
			SELECT id, 'purge-old', sha256('old'::bytea), '{}', now() - interval '3 hours' FROM accounts WHERE username = 'acme'`,
		`INSERT INTO tokens (account_id, name, hash, permissions, revoked_at)
			SELECT id, 'purge-new', sha256('new'::bytea), '{}', now() - interval '1 hour' FROM accounts WHERE username = 'acme'`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	s := startUsageServer(t, env)
	left := func() (keys, tokens int) {
		t.Helper()
		if err := db.NewRaw(`SELECT (SELECT count(*) FROM idempotency_keys), (SELECT count(*) FROM tokens WHERE name LIKE 'purge-%')`).
			Scan(ctx, &keys, &tokens); err != nil {
			t.Fatal(err)
		}
		return keys, tokens
	}
	// A safety net, not a measure: the purge runs every 50 ms.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if keys, tokens := left(); keys == 0 && tokens == 1 {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("after 30 s: %d keys and %d tokens left, want 0 and 1; log:\n%s", keys, tokens, s.logs.String())
		}
	}
	s.stop()
	if !strings.Contains(s.logs.String(), `"msg":"purged"`) {
		t.Errorf("no purge in the log:\n%s", s.logs.String())
	}
}
