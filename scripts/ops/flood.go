package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// floodRun: one replica; a good client from 127.0.0.1; a flood of bad
// tokens and malformed requests from 127.0.0.2; malformed requests with a
// valid token from 127.0.0.3. It counts the SQL statements the replica ran
// in each phase and compares the good client's latency with and without
// the flood; a last phase floods from the good client's own address.
func floodRun(fs *flag.FlagSet) func(context.Context, *env) error {
	bad := fs.Int("concurrency", 16, "concurrent clients of the flood")
	goodConc := fs.Int("good", 4, "concurrent clients of the good token")
	phase := fs.Duration("phase", 15*time.Second, "length of each flood phase")
	maxRequests := fs.Int64("max-requests", 1_000_000, "upper bound on the requests of each phase")
	slow := fs.Int("slow", 32, "slow-header and as many slow-body connections of the slow-client phase")
	return func(ctx context.Context, e *env) error {
		for _, ip := range []string{"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"} {
			if err := checkSource(ip); err != nil {
				return err
			}
		}
		const dbName = "fleetapi_ops_flood"
		dbURL, err := e.freshDatabase(ctx, dbName)
		if err != nil {
			return err
		}
		good, err := e.createToken(ctx, dbURL, "acme", "ops-flood-good", 100_000_000)
		if err != nil {
			return err
		}
		valid, err := e.createToken(ctx, dbURL, "globex", "ops-flood-malformed", 0) // the server's default limit
		if err != nil {
			return err
		}
		// The in-process limiter: with FLEET_REDIS_URL the guard works the
		// same, shared by every replica, but its per-address keys
		// ("authfail:127.0.0.1") would be shared with any other fleetapi on
		// this machine that uses the same Redis database.
		r, err := e.startReplica(ctx, "replica", map[string]string{"FLEET_DATABASE_URL": dbURL})
		if err != nil {
			return err
		}
		f := &flood{e: e, r: r, c: &checks{e: e}, adminURL: e.common.adminURL, db: dbName, good: good, valid: valid,
			bad: *bad, goodConc: *goodConc, phase: *phase, max: *maxRequests, slow: *slow,
			ops: newClient(2, "")}
		return f.run(ctx)
	}
}

// checkSource makes sure connections can leave from the loopback address ip.
func checkSource(ip string) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer l.Close()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: time.Second}
	c, err := d.Dial("tcp", l.Addr().String())
	if err != nil {
		return fmt.Errorf("cannot send from %s (needs the whole 127.0.0.0/8 on lo, as Linux has): %w", ip, err)
	}
	c.Close()
	return nil
}

type flood struct {
	e            *env
	r            *replica
	c            *checks
	adminURL, db string
	good, valid  token
	bad          int
	goodConc     int
	phase        time.Duration
	max          int64
	slow         int
	ops          *http.Client
}

// kind is one sort of bad request, with the statuses it may get.
type kind struct {
	name  string
	build func() call
	want  []int
}

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

func randomToken() string {
	b := make([]byte, 32)
	for i := range b {
		b[i] = base62[rand.IntN(len(base62))]
	}
	return "flt_" + string(b)
}

// badTokenKinds never carry a valid token: each is a failed authentication
// (401) until the address's budget is spent (429), except the requests
// net/http or the router refuse before authentication.
func badTokenKinds() []kind {
	authFail := []int{401, 429}
	huge := bytes.Repeat([]byte("A"), 1<<20)
	malformed := []string{"Basic dXNlcjpwYXNzd29yZA==", "Bearer", "Bearer ", "Bearer flt_short", "flt_" + strings.Repeat("!", 32),
		"Bearer " + strings.Repeat("x", 64), "Token abc", "Bearer flt_" + strings.Repeat("A", 31) + "é"}
	var m atomic.Int64
	return []kind{
		{"unknown token", func() call { return call{method: "GET", path: "/api/v2/services", token: randomToken()} }, authFail},
		{"malformed Authorization", func() call {
			v := malformed[m.Add(1)%int64(len(malformed))]
			return call{method: "GET", path: "/api/v2/me", header: http.Header{"Authorization": {v}}}
		}, authFail},
		{"no Authorization", func() call { return call{method: "GET", path: "/api/v2/reports"} }, authFail},
		{"two Authorization headers", func() call {
			return call{method: "GET", path: "/api/v2/me", header: http.Header{"Authorization": {"Bearer " + randomToken(), "Bearer " + randomToken()}}}
		}, authFail},
		{"40 KiB Authorization header", func() call {
			return call{method: "GET", path: "/api/v2/me", header: http.Header{"Authorization": {"Bearer " + strings.Repeat("x", 40<<10)}}}
		}, []int{431}},
		{"bad JSON, unknown token", func() call {
			return call{method: "POST", path: "/api/v2/passengers", token: randomToken(), body: []byte(`{"passenger_name": `)}
		}, authFail},
		{"1 MiB body, unknown token", func() call {
			return call{method: "POST", path: "/api/v2/passengers", token: randomToken(), body: huge}
		}, authFail},
		{"unknown parameter, unknown token", func() call {
			return call{method: "GET", path: "/api/v2/services?bogus=1&per_page=9999", token: randomToken()}
		}, authFail},
		{"unknown route", func() call { return call{method: "GET", path: "/api/v2/nothing-here", token: randomToken()} }, []int{404}},
	}
}

// malformedKinds carry a valid token (with the server's default limit):
// each is refused by validation (400, 413, 415) or by the token's limit
// (429) after authentication.
func malformedKinds(secret string) []kind {
	huge := []byte(`{"passenger_name": "` + strings.Repeat("A", 1<<20) + `"}`)
	post := func(body []byte, ct string) func() call {
		return func() call {
			return call{method: "POST", path: "/api/v2/passengers", token: secret, body: body, contentType: ct}
		}
	}
	get := func(path string) func() call {
		return func() call { return call{method: "GET", path: path, token: secret} }
	}
	or429 := func(s ...int) []int { return append(s, 429) }
	return []kind{
		{"bad JSON", post([]byte(`{"passenger_name": `), ""), or429(400)},
		{"unknown field", post([]byte(`{"passenger_name": "A", "is_admin": true}`), ""), or429(400)},
		{"wrong type", post([]byte(`{"passenger_name": 42}`), ""), or429(400)},
		{"fails validation", post([]byte(`{"passenger_name": "  ", "passenger_email": "nope"}`), ""), or429(400)},
		{"1 MiB body", post(huge, ""), or429(413)},
		{"text/plain body", post([]byte(`{"passenger_name": "A"}`), "text/plain"), or429(415)},
		{"unknown parameter", get("/api/v2/services?bogus=1"), or429(400)},
		{"per_page out of bounds", get("/api/v2/services?per_page=100000"), or429(400)},
		{"repeated parameter", get("/api/v2/services?page=1&page=2"), or429(400)},
		{"id not a number", get("/api/v2/events/abc"), or429(400, 404)},
	}
}

// storm sends kinds round-robin from source with conc clients for d.
func (f *flood) storm(ctx context.Context, source string, conc int, d time.Duration, kinds []kind, rec *recorder) {
	client := newClient(conc, source)
	var seq atomic.Int64
	drive(ctx, conc, d, f.max, func(ctx context.Context, _ int) {
		k := kinds[seq.Add(1)%int64(len(kinds))]
		res := send(ctx, client, f.r.base(), k.build())
		rec.add(k.name, res, res.err == nil && slices.Contains(k.want, res.status))
	})
}

// goodClient reads with the good token from source.
func (f *flood) goodClient(ctx context.Context, source string, d time.Duration, rec *recorder) {
	client := newClient(f.goodConc, source)
	var seq atomic.Int64
	paths := []string{"/api/v2/services?per_page=20", "/api/v2/me", "/api/v2/services/due"}
	drive(ctx, f.goodConc, d, f.max, func(ctx context.Context, _ int) {
		res := send(ctx, client, f.r.base(), call{method: "GET", path: paths[seq.Add(1)%int64(len(paths))], token: f.good.Secret})
		rec.add("good token ("+source+")", res, res.err == nil && res.status == http.StatusOK)
	})
}

// work is the database work of a phase: SQL statements counted by the
// replica and transactions counted by PostgreSQL.
type work struct{ queries, xacts float64 }

func (f *flood) measure(ctx context.Context) work {
	q, err := queryCount(ctx, f.ops, f.r.base())
	if err != nil {
		f.e.logf("scrape /metrics: %v", err)
	}
	x, err := dbTransactions(ctx, f.adminURL, f.db)
	if err != nil {
		f.e.logf("pg_stat_database: %v", err)
	}
	return work{q, float64(x)}
}

func (f *flood) run(ctx context.Context) error {
	e, c := f.e, f.c
	// Phase 1: the good client alone.
	e.logf("phase 1: good token from 127.0.0.1, %d clients, %s", f.goodConc, f.phase)
	w0 := f.measure(ctx)
	base := newRecorder()
	f.goodClient(ctx, "127.0.0.1", f.phase, base)
	w1 := f.measure(ctx)
	baseN, _, _ := base.totals()
	e.printf("\nphase 1, good client alone:\n")
	base.table(e.out, time.Since(base.start))
	e.printf("  SQL statements: %.0f (%.2f per request); PostgreSQL transactions: %.0f\n", w1.queries-w0.queries,
		(w1.queries-w0.queries)/float64(max(1, baseN)), w1.xacts-w0.xacts)

	if ctx.Err() != nil {
		return ctx.Err()
	}
	// Phase 2: bad tokens from 127.0.0.2 alone.
	e.logf("phase 2: bad tokens and malformed requests from 127.0.0.2, %d clients, %s", f.bad, f.phase)
	badRec := newRecorder()
	f.storm(ctx, "127.0.0.2", f.bad, f.phase, badTokenKinds(), badRec)
	w2 := f.measure(ctx)
	n, st, errs := badRec.totals()
	e.printf("\nphase 2, flood of bad tokens from 127.0.0.2 (failed-authentication budget: 60 per minute per address):\n")
	badRec.table(e.out, time.Since(badRec.start))
	lookups := st[401]
	e.printf("  answered %d (%d transport errors): 401×%d (authentication ran), 429×%d (refused before any lookup), 431×%d, 404×%d\n",
		n, errs, st[401], st[429], st[431], st[404])
	e.printf("  SQL statements: %.0f for %d requests (%.4f per request); PostgreSQL transactions: %.0f\n",
		w2.queries-w1.queries, n, (w2.queries-w1.queries)/float64(max(1, n)), w2.xacts-w1.xacts)
	// The guard only looks at the budget before authenticating and takes
	// from it after a failure: whenever the budget has refilled by one,
	// every request already past the look (at most one per concurrent
	// client) may still fail authentication.
	budget := 60 + int(f.phase.Seconds()+0.5)
	worst := budget + f.bad*(1+int(f.phase.Seconds()+0.5))
	e.printf("  budget %d (60 + 1/s × %.0f s); 401s beyond it: %d (requests past the budget check when it ran out or refilled; at most %d)\n",
		budget, f.phase.Seconds(), max(0, st[401]-budget), worst-budget)
	c.expect(st[429] > 0 && st[401] <= worst,
		"failed authentications stop near the address budget: %d 401s (budget %d, at most %d with %d concurrent clients)", st[401], budget, worst, f.bad)
	c.expect(w2.queries-w1.queries <= float64(lookups)+2, "no SQL beyond one token lookup per 401 (%.0f statements, %d 401s)", w2.queries-w1.queries, lookups)
	c.expect(unexpectedOf(badRec) == 0, "every bad request got 401, 429, 431 or 404 (%d did not)", unexpectedOf(badRec))

	if ctx.Err() != nil {
		return ctx.Err()
	}
	// Phase 3: malformed requests with a valid token from 127.0.0.3.
	e.logf("phase 3: malformed requests with a valid token (default limit) from 127.0.0.3, %d clients, %s", f.bad/2, f.phase)
	malRec := newRecorder()
	f.storm(ctx, "127.0.0.3", max(1, f.bad/2), f.phase, malformedKinds(f.valid.Secret), malRec)
	w3 := f.measure(ctx)
	n3, st3, errs3 := malRec.totals()
	e.printf("\nphase 3, malformed requests with a valid token (limit 1200/min) from 127.0.0.3:\n")
	malRec.table(e.out, time.Since(malRec.start))
	e.printf("  answered %d (%d transport errors): 400×%d 404×%d 413×%d 415×%d 429×%d\n", n3, errs3, st3[400], st3[404], st3[413], st3[415], st3[429])
	e.printf("  SQL statements: %.0f for %d requests (%.2f per request: the token lookup runs before the token's limit); PostgreSQL transactions: %.0f\n",
		w3.queries-w2.queries, n3, (w3.queries-w2.queries)/float64(max(1, n3)), w3.xacts-w2.xacts)
	c.expect(unexpectedOf(malRec) == 0, "every malformed request got 400, 404, 413, 415 or 429 (%d did not)", unexpectedOf(malRec))
	c.expect(st3[500] == 0 && st3[503] == 0, "no 5xx from malformed requests")

	if ctx.Err() != nil {
		return ctx.Err()
	}
	// Phase 4: both floods and the good client together.
	e.logf("phase 4: both floods and the good client together, %s", f.phase)
	goodRec, badRec4, malRec4 := newRecorder(), newRecorder(), newRecorder()
	done := make(chan struct{}, 2)
	go func() { f.storm(ctx, "127.0.0.2", f.bad, f.phase, badTokenKinds(), badRec4); done <- struct{}{} }()
	go func() {
		f.storm(ctx, "127.0.0.3", max(1, f.bad/2), f.phase, malformedKinds(f.valid.Secret), malRec4)
		done <- struct{}{}
	}()
	f.goodClient(ctx, "127.0.0.1", f.phase, goodRec)
	<-done
	<-done
	nb, _, _ := badRec4.totals()
	nm, _, _ := malRec4.totals()
	e.printf("\nphase 4, good client during both floods (%d bad-token and %d malformed requests in %s):\n", nb, nm, f.phase)
	goodRec.table(e.out, time.Since(goodRec.start))
	bl, gl := base.latencies(""), goodRec.latencies("")
	e.printf("  good client p50/p99/max: alone %s/%s/%s ms; during the flood %s/%s/%s ms\n",
		ms(pct(bl, 50)), ms(pct(bl, 99)), ms(pct(bl, 100)), ms(pct(gl, 50)), ms(pct(gl, 99)), ms(pct(gl, 100)))
	_, gst, gerr := goodRec.totals()
	c.expect(gerr == 0 && unexpectedOf(goodRec) == 0, "the good client got only 200s during the flood (%v, %d errors)", gst, gerr)
	c.expect(pct(gl, 99) < time.Second, "the good client's p99 stayed under 1 s during the flood (%s ms)", ms(pct(gl, 99)))

	if ctx.Err() != nil {
		return ctx.Err()
	}
	// Phase 5: the flood from the good client's own address.
	short := min(f.phase, 8*time.Second)
	e.logf("phase 5: bad tokens from 127.0.0.1 next to the good client, %s", short)
	sameGood, sameBad := newRecorder(), newRecorder()
	go func() {
		f.storm(ctx, "127.0.0.1", max(1, f.bad/4), short, badTokenKinds()[:1], sameBad)
		done <- struct{}{}
	}()
	f.goodClient(ctx, "127.0.0.1", short, sameGood)
	<-done
	_, sst, _ := sameGood.totals()
	e.printf("\nphase 5, bad tokens from the good client's own address 127.0.0.1:\n")
	sameGood.table(e.out, time.Since(sameGood.start))
	e.printf("  the good token got 200×%d and 429×%d: the failed-authentication budget belongs to the address, so a\n"+
		"  client sharing an address with an attacker (NAT, or every client behind a proxy, since forwarded\n"+
		"  headers are not trusted) is refused too until the budget refills (1 per second).\n", sst[200], sst[429])
	c.expect(sst[429] > 0, "the shared address was limited for everyone on it (the documented trade-off)")

	if ctx.Err() != nil {
		return ctx.Err()
	}
	// Phase 6: slow clients from 127.0.0.4 next to the good client.
	e.logf("phase 6: %d slow-header and %d slow-body connections from 127.0.0.4 next to the good client", f.slow, f.slow)
	slowGood := newRecorder()
	var held struct {
		headers, bodies []time.Duration
		endings         map[string]int
	}
	go func() {
		held.headers, held.bodies, held.endings = slowPhase(ctx, "127.0.0.4", f.r.addr, f.good.Secret, f.slow, 40*time.Second)
		done <- struct{}{}
	}()
	// The good client comes from 127.0.0.5: 127.0.0.1's failed-authentication
	// budget is still spent from phase 5.
	f.goodClient(ctx, "127.0.0.5", 20*time.Second, slowGood)
	<-done
	sl := slowGood.latencies("")
	_, sgst, sgerr := slowGood.totals()
	e.printf("\nphase 6, slow clients (one header line or one body byte per second) from 127.0.0.4:\n")
	e.printf("  slow headers held %s–%s s; slow bodies held %s–%s s; endings %v\n",
		secs(pct(held.headers, 0)), secs(pct(held.headers, 100)), secs(pct(held.bodies, 0)), secs(pct(held.bodies, 100)), held.endings)
	e.printf("  good client meanwhile (127.0.0.5): %d requests, p50 %s ms, p99 %s ms, statuses %v, %d errors\n",
		len(sl), ms(pct(sl, 50)), ms(pct(sl, 99)), sgst, sgerr)
	c.expect(len(held.headers) > 0 && pct(held.headers, 100) < 7*time.Second, "slow headers are cut by ReadHeaderTimeout (5 s): longest %s s", secs(pct(held.headers, 100)))
	c.expect(len(held.bodies) > 0 && pct(held.bodies, 100) < 17*time.Second, "slow bodies are cut by ReadTimeout (15 s) or earlier: longest %s s", secs(pct(held.bodies, 100)))
	c.expect(sgerr == 0 && sgst[200] == len(sl), "the good client was served throughout (%v, %d errors)", sgst, sgerr)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return c.err()
}

func unexpectedOf(r *recorder) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, s := range r.eps {
		n += s.unexpected
		for _, k := range s.errors {
			n += k
		}
	}
	return n
}
