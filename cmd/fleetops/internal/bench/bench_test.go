package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/api"
	"github.com/fleetapi/fleetapi/cmd/fleetops/internal/cli"
	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/storagetest"
	"github.com/fleetapi/fleetapi/storage/synth"
	"github.com/fleetapi/fleetapi/tenancy"
)

// TestConfigLoopback: --url and --database-url must name this machine.
func TestConfigLoopback(t *testing.T) {
	env := func(string) string { return "" }
	for _, ok := range []string{"http://127.0.0.1:8080", "http://localhost:1", "http://[::1]:80", "https://127.0.0.2"} {
		if _, err := parseConfig([]string{"--tokens", "x", "--url", ok}, env, &bytes.Buffer{}); err != nil {
			t.Errorf("--url %s: %v", ok, err)
		}
	}
	for _, bad := range []string{"http://10.0.0.1:8080", "http://example.com", "ftp://127.0.0.1", "127.0.0.1:8080", "http://0.0.0.0:80"} {
		if _, err := parseConfig([]string{"--tokens", "x", "--url", bad}, env, &bytes.Buffer{}); !cli.IsUsage(err) {
			t.Errorf("--url %s: %v, want a usage error", bad, err)
		}
	}
	for _, bad := range []string{"postgres://postgres@10.0.0.1:5432/fleetapi", "postgres://u@db.example.com/x"} {
		if _, err := parseConfig([]string{"--tokens", "x", "--database-url", bad}, env, &bytes.Buffer{}); !cli.IsUsage(err) {
			t.Errorf("--database-url %s: %v, want a usage error", bad, err)
		}
		// FLEET_DATABASE_URL is checked as well: it is the default of the flag.
		if _, err := parseConfig([]string{"--tokens", "x"}, func(string) string { return bad }, &bytes.Buffer{}); !cli.IsUsage(err) {
			t.Errorf("FLEET_DATABASE_URL=%s: %v, want a usage error", bad, err)
		}
	}
}

// TestDraws: a draw depends on the seed, the scenario family and its
// number only, so the API and the floor (and a variant) do the same draws;
// another seed draws another sequence.
func TestDraws(t *testing.T) {
	seq := func(seed uint64, family string) []int {
		h := &harness{cfg: config{Seed: seed}}
		out := make([]int, 50)
		for k := range out {
			out[k] = h.rng(family, int64(k)).IntN(1000)
		}
		return out
	}
	a := seq(1, "user_list")
	if !slices.Equal(a, seq(1, "user_list")) {
		t.Error("the same seed drew two sequences")
	}
	if slices.Equal(a, seq(2, "user_list")) || slices.Equal(a, seq(1, "manager_list")) {
		t.Error("another seed or family drew the same sequence")
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
		{"--tokens", "x", "--duration", "0s", "--requests", "0"},
		{"--tokens", "x", "--requests", "-1"},
		{"--tokens", "x", "--requests", "10000001"},
		{"--tokens", "x", "--warmup", "-1s"},
		{"--tokens", "x", "--pool", "0"},
		{"--tokens", "x", "--pool", "257"},
		{"--tokens", "x", "--server-pid", "-1"},
		{"--tokens", "x", "--workload", "all"},
		{"--tokens", "x", "--opa-url", "http://192.0.2.1:8181"},
		{"--tokens", "x", "--opa-pid", "-1"},
		{"--tokens", "x", "--bogus"},
		{"--tokens", "x", "extra"},
	} {
		var out bytes.Buffer
		if _, err := parseConfig(args, env, &out); !cli.IsUsage(err) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
		if out.Len() != 0 {
			t.Errorf("%v printed %q on stdout", args, out.String())
		}
	}
	// Defaults, and FLEET_DATABASE_URL as the default database.
	c, err := parseConfig([]string{"--tokens", "t.jsonl"}, func(k string) string {
		if k == "FLEET_DATABASE_URL" {
			return "postgres://postgres@127.0.0.1:5432/other"
		}
		return ""
	}, &bytes.Buffer{})
	if err != nil || c.DatabaseURL != "postgres://postgres@127.0.0.1:5432/other" || c.Concurrency != 16 || c.Duration != 10*time.Second ||
		c.BaseURL != "http://127.0.0.1:8080" || c.Scenarios != strings.Join(append(scenarioNames(), mixedNames()...), ",") || c.Seed != 1 {
		t.Errorf("defaults: %+v, %v", c, err)
	}
	// --workload picks the default scenarios; --rls and --opa-url add their
	// variants.
	for args, want := range map[string][]string{
		"--workload fixed":                             scenarioNames(),
		"--workload mixed":                             mixedNames(),
		"--workload mixed --rls":                       append(mixedNames(), rlsNames()...),
		"--workload fixed --opa-url http://[::1]:8181": append(scenarioNames(), sidecarNames()...),
	} {
		c, err := parseConfig(append([]string{"--tokens", "t"}, strings.Fields(args)...), env, &bytes.Buffer{})
		if err != nil || c.Scenarios != strings.Join(want, ",") {
			t.Errorf("%s: %q, %v", args, c.Scenarios, err)
		}
	}
	// -h prints the usage and every flag on stdout.
	var out bytes.Buffer
	if _, err := parseConfig([]string{"-h"}, env, &out); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v", err)
	}
	for _, want := range []string{"usage: fleetops bench", "-tokens", "-server-pid", "-explain"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("-h lacks %q:\n%s", want, out.String())
		}
	}
}

// TestRunSmall runs the whole harness, briefly, against the real API over
// the small generated data set.
func TestRunSmall(t *testing.T) {
	ctx := context.Background()
	db := storagetest.New(t)
	cfg, err := synth.Preset("small")
	if err != nil {
		t.Fatal(err)
	}
	res, err := synth.Generate(ctx, db.DB, cfg)
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
	engine, err := policy.New(ctx, policy.Options{Schema: storage.Schema()})
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
		"--concurrency", "2", "--pool", "4", "--explain", explain, "--markdown", table, "--server-pid", "0", "--rls",
		"--scenarios", strings.Join(append(append(append(scenarioNames(), mixedNames()...), "admin_list"), rlsNames()...), ",")}
	if err := Run(ctx, args, func(string) string { return "" }, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	text := out.String()
	if strings.Contains(text, "MISMATCH") {
		t.Errorf("API and floor disagree:\n%s", text)
	}
	md, _ := os.ReadFile(table)
	plans, _ := os.ReadFile(explain)
	for _, name := range append(append(scenarioNames(), mixedNames()...), "admin_list") {
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
	// The RLS variants answered the same draws with the same totals.
	for _, name := range rlsNames() {
		row := ""
		for _, l := range strings.Split(string(md), "\n") {
			if strings.HasPrefix(l, "| "+name+" |") {
				row = l
			}
		}
		if row == "" || !strings.Contains(row, "draws compared") || strings.Contains(row, "MISMATCH") {
			t.Errorf("%s: row %q\n%s", name, row, text)
		}
	}
	if !strings.Contains(string(plans), "Execution Time") {
		t.Errorf("explain file holds no plans:\n%.500s", plans)
	}
}
