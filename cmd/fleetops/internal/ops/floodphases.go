package ops

import (
	"context"
	"time"

	"github.com/fleetapi/fleetapi/cmd/fleetops/internal/stats"
)

// phaseAlone (phase 1) runs the good client alone, for the baseline of
// latency and database work. It returns the good client's recorder and
// the database work after the phase.
func (f *flood) phaseAlone(ctx context.Context, w0 work) (*stats.Recorder, work) {
	e := f.e
	e.logf("phase 1: good token from %s, %d clients, %s", goodSource, f.goodConc, f.phase)
	base := stats.NewRecorder()
	f.goodClient(ctx, goodSource, f.phase, base)
	w1 := f.measure(ctx)
	baseN, _, _ := base.Totals()
	e.printf("\nphase 1, good client alone:\n")
	base.Table(e.out, base.Elapsed())
	e.printf("  SQL statements: %.0f (%.2f per request); PostgreSQL transactions: %.0f\n", w1.queries-w0.queries,
		(w1.queries-w0.queries)/float64(max(1, baseN)), w1.xacts-w0.xacts)
	return base, w1
}

// phaseBadTokens (phase 2) floods bad tokens from 127.0.0.2 alone: the
// address's failed-authentication budget must stop them, with no SQL
// beyond one token lookup per 401.
func (f *flood) phaseBadTokens(ctx context.Context, w1 work) work {
	e, c := f.e, f.c
	e.logf("phase 2: bad tokens and malformed requests from %s, %d clients, %s", badTokenSource, f.bad, f.phase)
	rec := stats.NewRecorder()
	f.storm(ctx, badTokenSource, f.bad, f.phase, badTokenKinds(), rec)
	w2 := f.measure(ctx)
	n, st, errs := rec.Totals()
	e.printf("\nphase 2, flood of bad tokens from %s (failed-authentication budget: 60 per minute per address):\n", badTokenSource)
	rec.Table(e.out, rec.Elapsed())
	lookups := st[401]
	e.printf("  answered %d (%d transport errors): 401×%d (authentication ran), 429×%d (refused before any lookup), 431×%d, 404×%d\n",
		n, errs, st[401], st[429], st[431], st[404])
	e.printf("  SQL statements: %.0f for %d requests (%.4f per request); PostgreSQL transactions: %.0f\n",
		w2.queries-w1.queries, n, (w2.queries-w1.queries)/float64(max(1, n)), w2.xacts-w1.xacts)
	budget, worst := authFailBudget(f.phase, f.bad)
	e.printf("  budget %d (60 + 1/s × %.0f s); 401s beyond it: %d (requests past the budget check when it ran out or refilled; at most %d)\n",
		budget, f.phase.Seconds(), max(0, st[401]-budget), worst-budget)
	c.expect(st[429] > 0 && st[401] <= worst,
		"failed authentications stop near the address budget: %d 401s (budget %d, at most %d with %d concurrent clients)", st[401], budget, worst, f.bad)
	c.expect(w2.queries-w1.queries <= float64(lookups)+2, "no SQL beyond one token lookup per 401 (%.0f statements, %d 401s)", w2.queries-w1.queries, lookups)
	bad := failed(rec)
	c.expect(bad == 0, "every bad request got 401, 429, 431 or 404 (%d did not)", bad)
	return w2
}

// phaseMalformed (phase 3) sends malformed requests with a valid token
// from 127.0.0.3: validation or the token's limit refuse each, never 5xx.
func (f *flood) phaseMalformed(ctx context.Context, w2 work) work {
	e, c := f.e, f.c
	conc := max(1, f.bad/2)
	e.logf("phase 3: malformed requests with a valid token (default limit) from %s, %d clients, %s", malformedSource, conc, f.phase)
	rec := stats.NewRecorder()
	f.storm(ctx, malformedSource, conc, f.phase, malformedKinds(f.valid.Secret), rec)
	w3 := f.measure(ctx)
	n, st, errs := rec.Totals()
	e.printf("\nphase 3, malformed requests with a valid token (limit 1200/min) from %s:\n", malformedSource)
	rec.Table(e.out, rec.Elapsed())
	e.printf("  answered %d (%d transport errors): 400×%d 404×%d 413×%d 415×%d 429×%d\n", n, errs, st[400], st[404], st[413], st[415], st[429])
	e.printf("  SQL statements: %.0f for %d requests (%.2f per request: the token lookup runs before the token's limit); PostgreSQL transactions: %.0f\n",
		w3.queries-w2.queries, n, (w3.queries-w2.queries)/float64(max(1, n)), w3.xacts-w2.xacts)
	bad := failed(rec)
	c.expect(bad == 0, "every malformed request got 400, 404, 413, 415 or 429 (%d did not)", bad)
	c.expect(st[500] == 0 && st[503] == 0, "no 5xx from malformed requests")
	return w3
}

// phaseTogether (phase 4) runs both floods and the good client together
// and compares the good client's latency with alone's.
func (f *flood) phaseTogether(ctx context.Context, alone *stats.Recorder) {
	e, c := f.e, f.c
	e.logf("phase 4: both floods and the good client together, %s", f.phase)
	good, bad, mal := stats.NewRecorder(), stats.NewRecorder(), stats.NewRecorder()
	done := make(chan struct{}, 2)
	go func() { f.storm(ctx, badTokenSource, f.bad, f.phase, badTokenKinds(), bad); done <- struct{}{} }()
	go func() {
		f.storm(ctx, malformedSource, max(1, f.bad/2), f.phase, malformedKinds(f.valid.Secret), mal)
		done <- struct{}{}
	}()
	f.goodClient(ctx, goodSource, f.phase, good)
	<-done
	<-done
	nb, _, _ := bad.Totals()
	nm, _, _ := mal.Totals()
	e.printf("\nphase 4, good client during both floods (%d bad-token and %d malformed requests in %s):\n", nb, nm, f.phase)
	good.Table(e.out, good.Elapsed())
	bl, gl := stats.PercentilesOf(alone.Latencies("")), stats.PercentilesOf(good.Latencies(""))
	e.printf("  good client p50/p99/max: alone %s/%s/%s ms; during the flood %s/%s/%s ms\n",
		ms(bl.P50), ms(bl.P99), ms(bl.Max), ms(gl.P50), ms(gl.P99), ms(gl.Max))
	_, gst, gerr := good.Totals()
	c.expect(failed(good) == 0, "the good client got only 200s during the flood (%v, %d errors)", gst, gerr)
	c.expect(gl.P99 < time.Second, "the good client's p99 stayed under 1 s during the flood (%s ms)", ms(gl.P99))
}

// phaseSameAddress (phase 5) floods bad tokens from the good client's own
// address: the budget belongs to the address, so the good client is
// refused too (the documented trade-off).
func (f *flood) phaseSameAddress(ctx context.Context) {
	e, c := f.e, f.c
	short := min(f.phase, 8*time.Second)
	e.logf("phase 5: bad tokens from %s next to the good client, %s", goodSource, short)
	good, bad := stats.NewRecorder(), stats.NewRecorder()
	done := make(chan struct{})
	go func() {
		f.storm(ctx, goodSource, max(1, f.bad/4), short, badTokenKinds()[:1], bad)
		close(done)
	}()
	f.goodClient(ctx, goodSource, short, good)
	<-done
	_, st, _ := good.Totals()
	e.printf("\nphase 5, bad tokens from the good client's own address %s:\n", goodSource)
	good.Table(e.out, good.Elapsed())
	e.printf("  the good token got 200×%d and 429×%d: the failed-authentication budget belongs to the address, so a\n"+
		"  client sharing an address with an attacker (NAT, or every client behind a proxy, since forwarded\n"+
		"  headers are not trusted) is refused too until the budget refills (1 per second).\n", st[200], st[429])
	c.expect(st[429] > 0, "the shared address was limited for everyone on it (the documented trade-off)")
}

// phaseSlow (phase 6) holds slow-header and slow-body connections from
// 127.0.0.4 while the good client reads from 127.0.0.5 (127.0.0.1's
// failed-authentication budget is still spent from phase 5): the server's
// timeouts must cut the slow ones and the good client be served.
func (f *flood) phaseSlow(ctx context.Context) {
	e, c := f.e, f.c
	e.logf("phase 6: %d slow-header and %d slow-body connections from %s next to the good client", f.slow, f.slow, slowSource)
	good := stats.NewRecorder()
	var held slowResult
	done := make(chan struct{})
	go func() {
		held = slowPhase(ctx, slowSource, f.r.addr, f.good.Secret, f.slow, 40*time.Second)
		close(done)
	}()
	f.goodClient(ctx, slowGoodSource, 20*time.Second, good)
	<-done
	gl := good.Latencies("")
	_, st, errs := good.Totals()
	hdr, body := held.headersHeld(), held.bodiesHeld()
	e.printf("\nphase 6, slow clients (one header line or one body byte per second) from %s:\n", slowSource)
	e.printf("  slow headers held %s–%s s; slow bodies held %s–%s s; endings %v\n",
		stats.Seconds(hdr.min), stats.Seconds(hdr.max), stats.Seconds(body.min), stats.Seconds(body.max), held.endings)
	e.printf("  good client meanwhile (%s): %d requests, p50 %s ms, p99 %s ms, statuses %v, %d errors\n",
		slowGoodSource, len(gl), ms(stats.Percentile(gl, 50)), ms(stats.Percentile(gl, 99)), st, errs)
	c.expect(hdr.n > 0 && hdr.max < 7*time.Second, "slow headers are cut by ReadHeaderTimeout (5 s): longest %s s", stats.Seconds(hdr.max))
	c.expect(body.n > 0 && body.max < 17*time.Second, "slow bodies are cut by ReadTimeout (15 s) or earlier: longest %s s", stats.Seconds(body.max))
	c.expect(errs == 0 && st[200] == len(gl), "the good client was served throughout (%v, %d errors)", st, errs)
}

// failed is how many requests of rec ended in a transport error or an
// unexpected status.
func failed(rec *stats.Recorder) int {
	unexpected, transport := rec.Failures("")
	return unexpected + transport
}

// ms formats d in milliseconds with one decimal, as every ops table does.
func ms(d time.Duration) string { return stats.Millis(d, 1) }
