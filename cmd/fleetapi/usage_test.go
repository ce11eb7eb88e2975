package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/demodata"
	"github.com/fleetapi/fleetapi/storage/storagetest"
)

// usageKey is one row of the usage: an account and a route.
type usageKey struct{ username, route string }

// usageWant is what a test sent (and saw answered) per usageKey.
type usageWant struct{ Requests, RowsReturned, Writes, Errors4xx, Errors5xx, BytesOut int64 }

// usageServer is one running `fleetapi serve`.
type usageServer struct {
	addr   string
	logs   *syncBuffer
	cancel context.CancelFunc
	done   chan error
}

func startUsageServer(t *testing.T, env map[string]string) *usageServer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &usageServer{logs: &syncBuffer{}, cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- run(ctx, []string{"serve", "--allow-demo-tokens"}, envOf(env), s.logs) }()
	s.addr = waitForAddr(t, s.logs, s.done)
	t.Cleanup(s.stop)
	return s
}

// stop shuts the server down gracefully (SIGTERM's path: drain, shutdown,
// the last usage flush) and waits for it.
func (s *usageServer) stop() {
	if s.cancel == nil {
		return
	}
	s.cancel()
	<-s.done
	s.cancel = nil
}

// usageClient sends requests and counts, per account and route, what the
// server answered as the metering must count it.
type usageClient struct {
	t     *testing.T
	want  map[usageKey]*usageWant
	token map[string]string // token secret → username
}

func (c *usageClient) send(s *usageServer, method, path, token, body string) int {
	c.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, "http://"+s.addr+"/api/v2"+path, rd)
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	user, ok := c.token[token]
	if !ok || resp.StatusCode == http.StatusUnauthorized {
		return resp.StatusCode // attributed to nobody
	}
	route, _, _ := strings.Cut(path, "?")
	if strings.HasPrefix(route, "/events/") {
		route = "/events/{id}"
	}
	k := usageKey{user, method + " " + route}
	w := c.want[k]
	if w == nil {
		w = &usageWant{}
		c.want[k] = w
	}
	w.Requests++
	w.BytesOut += int64(len(raw))
	switch {
	case resp.StatusCode >= 500:
		w.Errors5xx++
	case resp.StatusCode >= 400:
		w.Errors4xx++
	case method != http.MethodGet:
		w.Writes++
	}
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &env) == nil && json.Unmarshal(env.Data, &list) == nil && resp.StatusCode == http.StatusOK {
		w.RowsReturned += int64(len(list))
	}
	return resp.StatusCode
}

// mix sends one round of requests of every kind the metering counts.
func (c *usageClient) mix(s *usageServer, round int) {
	c.t.Helper()
	acme, narrow, globex := demoSecret(c.t, "acme-all"), demoSecret(c.t, "acme-services-only"), demoSecret(c.t, "globex-read")
	for _, r := range []struct {
		method, path, token, body string
		status                    int
	}{
		{"GET", "/me", acme, "", 200},
		{"GET", "/services?per_page=2", acme, "", 200},
		{"GET", "/services", globex, "", 200},
		{"GET", "/events/999999999", acme, "", 404},
		{"GET", "/services?bogus=1", acme, "", 400},
		{"POST", "/passengers", acme, fmt.Sprintf(`{"passenger_name":"usage %d"}`, round), 201},
		{"GET", "/reports", narrow, "", 403},
		{"GET", "/me", "flt_notATokenAtAll00000000000000000", "", 401},
		{"GET", "/me", demoSecret(c.t, "acme-expired"), "", 401},
	} {
		if got := c.send(s, r.method, r.path, r.token, r.body); got != r.status {
			c.t.Fatalf("%s %s: %d, want %d", r.method, r.path, got, r.status)
		}
	}
}

// TestUsageTwoServersAndRestart is issue 21's "usage totals equal the
// requests actually sent in a test with two replicas and a restart": two
// `fleetapi serve` on one database, each counting in memory with a flush
// interval longer than the test (so only the flush at shutdown writes),
// requests to both, one restarted in the middle; the stored usage (read
// back with `fleetapi usage export`) equals, per account and route, the
// requests sent and what they were answered: requests, rows of the lists,
// writes, 4xx, and the bytes of the bodies. 401s are attributed to
// nobody. It fails on a main without metering (no usage_daily table, no
// usage command).
func TestUsageTwoServersAndRestart(t *testing.T) {
	db := storagetest.New(t)
	env := map[string]string{"FLEET_DATABASE_URL": db.URL, "FLEET_ADDR": "127.0.0.1:0", "FLEET_USAGE_FLUSH_INTERVAL": "1h"}
	runOK(t, env, "import", writeDemoFile(t))
	c := &usageClient{t: t, want: map[usageKey]*usageWant{}, token: map[string]string{}}
	for _, d := range demodata.Tokens() {
		if d.Name != "acme-expired" {
			c.token[d.Secret] = d.Username
		}
	}
	day := time.Now().UTC()
	a, b := startUsageServer(t, env), startUsageServer(t, env)
	for i := range 5 {
		c.mix(a, i)
		c.mix(b, 100+i)
	}
	a.stop() // the restart: its last flush
	if !strings.Contains(a.logs.String(), `"msg":"usage flushed"`) {
		t.Fatalf("no flush at shutdown in the log:\n%s", a.logs.String())
	}
	a = startUsageServer(t, env)
	for i := range 3 {
		c.mix(a, 200+i)
		c.mix(b, 300+i)
	}
	a.stop()
	b.stop()

	from, to := day.AddDate(0, 0, -1).Format(storage.DateLayout), time.Now().UTC().AddDate(0, 0, 1).Format(storage.DateLayout)
	out := runOK(t, env, "usage", "export", "--format", "jsonl", "--from", from, "--to", to)
	got := map[usageKey]*usageWant{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r storage.UsageRow
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("export line %q: %v", line, err)
		}
		k := usageKey{r.Username, r.Route}
		g := got[k]
		if g == nil {
			g = &usageWant{}
			got[k] = g
		}
		g.Requests += r.Requests
		g.RowsReturned += r.RowsReturned
		g.Writes += r.Writes
		g.Errors4xx += r.Errors4xx
		g.Errors5xx += r.Errors5xx
		g.BytesOut += r.BytesOut
	}
	for _, k := range slices.SortedFunc(maps.Keys(c.want), func(x, y usageKey) int { return strings.Compare(x.username+x.route, y.username+y.route) }) {
		if got[k] == nil || *got[k] != *c.want[k] {
			t.Errorf("%s %s: stored %+v, sent %+v", k.username, k.route, got[k], *c.want[k])
		}
	}
	for k := range got {
		if c.want[k] == nil {
			t.Errorf("%s %s: stored %+v, nothing sent", k.username, k.route, *got[k])
		}
	}
	// 16 rounds: a page of 2 services and a 400 each.
	if w := c.want[usageKey{"acme", "GET /services"}]; w == nil || w.Requests != 32 || w.Errors4xx != 16 || w.RowsReturned != 32 {
		t.Errorf("acme GET /services: %+v, want 32 requests, 16 4xx, 32 rows", w)
	}
}

// TestUsageExportFormats: `fleetapi usage export` writes the same rows as
// CSV (with a header) and as JSON lines and takes its flags in any order
// (its mistakes, exit 2, are in TestUsageErrorsExit2).
func TestUsageExportFormats(t *testing.T) {
	db := storagetest.New(t)
	env := map[string]string{"FLEET_DATABASE_URL": db.URL}
	runOK(t, env, "import", writeDemoFile(t))
	ctx := context.Background()
	store := storage.NewStore(db.DB)
	acme, err := store.AccountByUsername(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	globex, err := store.AccountByUsername(ctx, "globex")
	if err != nil {
		t.Fatal(err)
	}
	fleetco, err := store.AccountByUsername(ctx, "fleetco")
	if err != nil {
		t.Fatal(err)
	}
	d1 := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	d2 := d1.AddDate(0, 0, 1)
	above := []int64{fleetco.ID, fleetco.ManagerID}
	rows := []storage.UsageCount{
		{AccountID: acme.ID, Ancestors: above, BilledAccountID: fleetco.ID, Day: d1, Route: "GET /services", Requests: 10, RowsReturned: 200, Errors4xx: 1, BytesOut: 5000},
		{AccountID: acme.ID, Ancestors: above, BilledAccountID: fleetco.ID, Day: d2, Route: "POST /passengers", Requests: 3, Writes: 2, Errors4xx: 1, BytesOut: 900},
		{AccountID: globex.ID, Ancestors: above, BilledAccountID: fleetco.ID, Day: d2, Route: "GET /me", Requests: 1, BytesOut: 300},
		{AccountID: globex.ID, Ancestors: above, BilledAccountID: fleetco.ID, Day: d2.AddDate(0, 0, 1), Route: "GET /me", Requests: 7, BytesOut: 2100},
	}
	if err := store.AddUsage(ctx, rows); err != nil {
		t.Fatal(err)
	}

	csvOut := runOK(t, env, "usage", "export", "--from", "2026-11-24", "--to", "2026-11-25")
	recs, err := csv.NewReader(strings.NewReader(csvOut)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"day", "account_id", "username", "route", "requests", "rows_returned", "writes", "errors_4xx", "errors_5xx", "bytes_out", "billed_account_id", "billed_username"},
		{"2026-11-24", fmt.Sprint(acme.ID), "acme", "GET /services", "10", "200", "0", "1", "0", "5000", fmt.Sprint(fleetco.ID), "fleetco"},
		{"2026-11-25", fmt.Sprint(acme.ID), "acme", "POST /passengers", "3", "0", "2", "1", "0", "900", fmt.Sprint(fleetco.ID), "fleetco"},
		{"2026-11-25", fmt.Sprint(globex.ID), "globex", "GET /me", "1", "0", "0", "0", "0", "300", fmt.Sprint(fleetco.ID), "fleetco"},
	}
	if fmt.Sprint(recs) != fmt.Sprint(want) {
		t.Errorf("csv:\n%v\nwant\n%v", recs, want)
	}

	// Flags after the subcommand in another order, jsonl: the same rows.
	jsonOut := runOK(t, env, "usage", "export", "--to", "2026-11-25", "--format", "jsonl", "--from=2026-11-24")
	var lines [][]string
	for _, line := range strings.Split(strings.TrimSpace(jsonOut), "\n") {
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		var r storage.UsageRow
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("jsonl line %q: %v", line, err)
		}
		var keys map[string]any
		_ = json.Unmarshal([]byte(line), &keys)
		if len(keys) != len(want[0]) {
			t.Errorf("jsonl line %q: %d keys, want %v", line, len(keys), want[0])
		}
		lines = append(lines, []string{r.Day, fmt.Sprint(r.AccountID), r.Username, r.Route, fmt.Sprint(r.Requests), fmt.Sprint(r.RowsReturned),
			fmt.Sprint(r.Writes), fmt.Sprint(r.Errors4xx), fmt.Sprint(r.Errors5xx), fmt.Sprint(r.BytesOut), fmt.Sprint(r.BilledAccountID), r.BilledUsername})
	}
	if fmt.Sprint(lines) != fmt.Sprint(want[1:]) {
		t.Errorf("jsonl:\n%v\nwant\n%v", lines, want[1:])
	}

	// Erased, globex keeps its usage: its id, no username, the account
	// billed for it.
	runOK(t, env, "tenant", "erase", "globex", "--confirm")
	after, err := csv.NewReader(strings.NewReader(runOK(t, env, "usage", "export", "--from", "2026-11-24", "--to", "2026-11-25"))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want[3][2] = storage.ErasedMark
	if fmt.Sprint(after) != fmt.Sprint(want) {
		t.Errorf("csv after erasing globex:\n%v\nwant\n%v", after, want)
	}

	// An empty range: the header only, exit 0.
	if out := runOK(t, env, "usage", "export", "--from", "2020-01-01", "--to", "2020-01-31"); strings.TrimSpace(out) != strings.Join(want[0], ",") {
		t.Errorf("empty range: %q", out)
	}
}
