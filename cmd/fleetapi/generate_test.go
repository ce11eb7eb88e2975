package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetapi/fleetapi/storage/storagetest"
	"github.com/fleetapi/fleetapi/storage/synth"
)

// TestGenerateCommand loads the small preset with a smaller service count,
// writes the token file, and refuses a second load without --force.
func TestGenerateCommand(t *testing.T) {
	db := storagetest.New(t)
	env := map[string]string{"FLEET_DATABASE_URL": db.URL}
	tokens := filepath.Join(t.TempDir(), "tokens.jsonl")
	out := runOK(t, env, "generate", "--preset", "small", "--services", "4000", "--seed", "7", "--today", "2026-11-01", "--tokens", tokens)
	for _, want := range []string{"services", "4000 rows", "reference day 2026-11-01", "tokens (admin, manager, user, subaccount, and the mixed workload's pool)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	b, err := os.ReadFile(tokens)
	if err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Stat(tokens); info.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v", info.Mode().Perm())
	}
	roles := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var tok synth.Token
		if err := json.Unmarshal([]byte(line), &tok); err != nil || !strings.HasPrefix(tok.Token, "flt_") {
			t.Fatalf("token line %q: %v", line, err)
		}
		if !tok.Pool {
			roles[tok.Role] = true
		}
	}
	if len(roles) != 4 {
		t.Fatalf("roles %v", roles)
	}
	err = run(context.Background(), []string{"generate", "--preset", "small"}, envOf(env), &syncBuffer{})
	if err == nil || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("second generate: %v", err)
	}
	if err := run(context.Background(), []string{"generate", "--preset", "huge"}, envOf(env), &syncBuffer{}); err == nil {
		t.Fatal("unknown preset accepted")
	}
}
