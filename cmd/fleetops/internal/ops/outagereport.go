package ops

import (
	"context"
	"net/http"
	"time"

	"github.com/fleetapi/fleetapi/cmd/fleetops/internal/stats"
)

// report prints the figures, retries abandoned creates and checks the
// database.
func (o *outage) report(ctx context.Context, pg *cluster) error {
	e, c := o.e, &checks{e: o.e}
	elapsed := o.since()
	if o.freeze {
		e.printf("\noutage: database frozen at %.1f s, thawed at %.1f s (%.1f s)\n", o.stoppedAt.Seconds(), o.startedAt.Seconds(), o.downFor.Seconds())
	} else {
		e.printf("\noutage: database stop begun at %.1f s (pg_ctl stop took %s ms), accepting connections again at %.1f s (down %.1f s)\n",
			o.stoppedAt.Seconds(), ms(o.stopTook), o.startedAt.Seconds(), o.downFor.Seconds())
	}
	o.rec.Table(e.out, elapsed)
	e.printf("per second (answers; /readyz and /healthz probed once a second):\n")
	stopSec, startSec := int(o.stoppedAt/time.Second), int(o.startedAt/time.Second)
	o.rec.Timeline(e.out, []string{"2xx", "503", "4xx", "5xx", "error", "/readyz 200", "/readyz 503", "/healthz 200"}, 1, func(from, to int) string {
		switch {
		case from <= stopSec && stopSec <= to && o.freeze:
			return "← database frozen"
		case from <= startSec && startSec <= to && o.freeze:
			return "← database thawed"
		case from <= stopSec && stopSec <= to:
			return "← database stopped"
		case from <= startSec && startSec <= to:
			return "← database started"
		}
		return ""
	})
	lat503 := stats.PercentilesOf(o.lat503)
	e.printf("  503 latency: p50 %s ms, p99 %s ms, max %s ms over %d answers; Retry-After values %v\n",
		ms(lat503.P50), ms(lat503.P99), ms(lat503.Max), len(o.lat503), o.retryAfter)
	e.printf("  first 503 %.2f s after the stop began; last 503 at %.1f s; first 2xx %.2f s after the database was back\n",
		(o.first503 - o.stoppedAt).Seconds(), o.last503.Seconds(), (o.firstOKAfterRestart - o.startedAt).Seconds())
	_, statuses, errs := o.rec.Totals()
	other := 0
	for st, n := range statuses {
		if st != http.StatusOK && st != http.StatusCreated && st != http.StatusServiceUnavailable {
			other += n
		}
	}
	c.expect(o.stopErr == nil && o.restartError == nil, "the private cluster stopped and started (%v, %v)", o.stopErr, o.restartError)
	c.expect(statuses[http.StatusServiceUnavailable] > 0 && o.noRetryAfter == 0, "the outage answered 503 SERVICE_UNAVAILABLE, every one with Retry-After (%d without)", o.noRetryAfter)
	c.expect(lat503.Max < 11*time.Second, "every 503 came within the request timeout (max %s ms)", ms(lat503.Max))
	c.expect(other == 0 && errs == 0, "no status other than 200/201/503 and no transport error (%d other, %d errors)", other, errs)
	c.expect(o.firstOKAfterRestart > 0 && o.firstOKAfterRestart-o.startedAt < 10*time.Second, "the API recovered by itself within 10 s of the database's return")
	c.expect(o.last503 < o.startedAt+10*time.Second, "no 503 later than 10 s after the database's return")
	for _, l := range o.r.logLines("request failed") {
		if l["code"] != "SERVICE_UNAVAILABLE" {
			c.expect(false, "a request failed with %v: %v", l["code"], l["error"])
		}
	}
	return o.checkData(ctx, c, pg)
}
