package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/api"
	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/storagetest"
	"github.com/fleetapi/fleetapi/tenancy"
)

func TestCheckLoopback(t *testing.T) {
	for _, ok := range []string{"http://127.0.0.1:8080", "http://localhost:1", "http://[::1]:80", "https://127.0.0.2"} {
		if err := checkLoopback(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"http://10.0.0.1:8080", "http://example.com", "ftp://127.0.0.1", "127.0.0.1:8080", "http://0.0.0.0:80"} {
		if err := checkLoopback(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestPercentile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i))
	}
	for p, want := range map[float64]time.Duration{50: 50, 90: 90, 99: 99, 100: 100, 0: 1} {
		if got := percentile(d, p); got != want {
			t.Errorf("p%.0f = %d, want %d", p, got, want)
		}
	}
	if percentile(nil, 50) != 0 {
		t.Error("empty percentile")
	}
}

func TestListRequestFrom(t *testing.T) {
	req, err := listRequestFrom("page=100&per_page=20&search=oil&order=desc")
	if err != nil || req.Page != 100 || req.PerPage != 20 || req.Search != "oil" || !req.Desc || req.Sort.Name != "service_id" {
		t.Fatalf("%+v, %v", req, err)
	}
	if _, err := listRequestFrom("odo=true"); err == nil {
		t.Fatal("a filter was accepted")
	}
}

func TestConfigBounds(t *testing.T) {
	env := func(string) string { return "" }
	for _, args := range [][]string{
		{},
		{"--tokens", "x", "--concurrency", "0"},
		{"--tokens", "x", "--concurrency", "1000"},
		{"--tokens", "x", "--duration", "0s"},
		{"--tokens", "x", "--duration", "1h"},
		{"--tokens", "x", "--url", "http://192.0.2.1:8080"},
		{"--tokens", "x", "--no-api", "--no-floor"},
	} {
		if _, err := parseConfig(args, env, &bytes.Buffer{}); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

// TestRunSmall runs the whole harness, briefly, against the real API over
// the small generated data set.
func TestRunSmall(t *testing.T) {
	ctx := context.Background()
	db := storagetest.New(t)
	cfg, err := storage.GeneratePreset("small")
	if err != nil {
		t.Fatal(err)
	}
	res, err := storage.Generate(ctx, db.DB, cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.jsonl")
	var lines bytes.Buffer
	for _, tok := range res.Tokens {
		b, _ := json.Marshal(tok)
		lines.Write(append(b, '\n'))
	}
	if err := os.WriteFile(tokens, lines.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	store := storage.NewStore(db.DB)
	engine, err := policy.New(ctx, policy.Options{Resources: storage.Resources(), CompileScope: storage.CompileScope})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := api.New(api.Config{Auth: &tenancy.Authenticator{Store: store}, Policy: engine, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()

	explain, table := filepath.Join(dir, "explain.md"), filepath.Join(dir, "table.md")
	var out bytes.Buffer
	args := []string{"--url", ts.URL, "--database-url", db.URL, "--tokens", tokens, "--duration", "150ms", "--warmup", "50ms",
		"--concurrency", "2", "--pool", "4", "--explain", explain, "--markdown", table, "--server-pid", "0"}
	if err := run(ctx, args, func(string) string { return "" }, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	text := out.String()
	if strings.Contains(text, "MISMATCH") {
		t.Errorf("API and floor disagree:\n%s", text)
	}
	md, _ := os.ReadFile(table)
	plans, _ := os.ReadFile(explain)
	for _, name := range scenarioNames() {
		row := ""
		for _, l := range strings.Split(string(md), "\n") {
			if strings.HasPrefix(l, "| "+name+" |") {
				row = l
			}
		}
		if row == "" || !strings.Contains(row, "| 0/0 |") {
			t.Errorf("%s: row %q (want zero errors)\n%s", name, row, text)
		}
		if !strings.Contains(string(plans), "### "+name) {
			t.Errorf("no plan for %s", name)
		}
	}
	if !strings.Contains(string(plans), "Execution Time") {
		t.Errorf("explain file holds no plans:\n%.500s", plans)
	}
}
