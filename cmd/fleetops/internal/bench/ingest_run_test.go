package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/fleetapi/fleetapi/api"
	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/storagetest"
	"github.com/fleetapi/fleetapi/storage/synth"
	"github.com/fleetapi/fleetapi/tenancy"
)

// TestIngestRunSmall runs the ingest workload, briefly, against the real
// API (POST /readings, the notification stream) and the floor over the
// small generated data set: the devices are primed, every batch is
// answered without an error, a rejection or a duplicate, both sides
// accept readings, the read scenario runs idle and beside ingestion, the
// notification stream is read at both rates (where the server has it), and
// every reading the report counts as accepted is a position row.
func TestIngestRunSmall(t *testing.T) {
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

	table := filepath.Join(dir, "ingest.md")
	var out bytes.Buffer
	args := []string{"--workload", "ingest", "--url", ts.URL, "--database-url", db.URL, "--tokens", tokens,
		"--ingest-duration", "400ms", "--warmup", "0s", "--concurrency", "2", "--pool", "4", "--batch", "40",
		"--ingest-devices", "300", "--ingest-reads", "user_list_mixed", "--duration", "150ms", "--markdown", table}
	if err := Run(ctx, args, func(string) string { return "" }, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	text := out.String()
	m := regexp.MustCompile(`primed (\d+) devices`).FindStringSubmatch(text)
	if m == nil || m[1] != "300" {
		t.Fatalf("the 300 devices were not primed:\n%s", text)
	}
	accepted, _ := strconv.ParseInt(m[1], 10, 64)
	md, err := os.ReadFile(table)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{}
	for _, l := range strings.Split(string(md), "\n") {
		cells := strings.Split(l, " | ")
		if len(cells) == 17 && strings.HasPrefix(l, "| ") && !strings.HasPrefix(l, "| run ") {
			name := strings.TrimPrefix(cells[0], "| ")
			rows[name] = cells
			if strings.HasPrefix(name, "API at ") {
				rows["beside"] = cells
			}
		}
	}
	for _, name := range []string{"API", "floor", "beside"} {
		r := rows[name]
		if r == nil {
			t.Fatalf("no %s row:\n%s\n%s", name, md, text)
		}
		// errors, rejected, duplicates
		if r[7] != "0" || r[8] != "0" || r[9] != "0" {
			t.Errorf("%s: errors %s, rejected %s, duplicates %s, want none:\n%s", name, r[7], r[8], r[9], text)
		}
		n, err := strconv.ParseInt(r[3], 10, 64)
		if err != nil || (name != "beside" && n == 0) {
			t.Errorf("%s: %q readings accepted:\n%s", name, r[3], text)
		}
		accepted += n
	}
	// The stream, where the server has it: open at both rates, never ended
	// by the server.
	if slices.ContainsFunc(tenancy.Routes(), func(r tenancy.Route) bool { return r.String() == "GET /notifications/stream" }) {
		for _, name := range []string{"API", "beside"} {
			if s := rows[name][11]; !regexp.MustCompile(`^([0-9]+) / ([0-9]+)$`).MatchString(s) || strings.Contains(text, "stream ended") {
				t.Errorf("%s: stream %q:\n%s", name, s, text)
			}
		}
	} else if !strings.Contains(text, "reading → notification: not measured") {
		t.Errorf("no stream in this build, and the report does not say so:\n%s", text)
	}
	if !regexp.MustCompile(`(?m)^\| user_list_mixed \| [1-9]`).Match(md) {
		t.Errorf("no read scenario row:\n%s", md)
	}
	var positions int64
	if err := db.NewRaw("SELECT count(*) FROM positions").Scan(ctx, &positions); err != nil || positions != accepted {
		t.Errorf("%d position rows (%v), the report accepted %d readings:\n%s", positions, err, accepted, text)
	}
}
