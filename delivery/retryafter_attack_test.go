package delivery_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestHostileRetryAfter: a 429 or 503 whose Retry-After is huge, negative,
// fractional, garbage, an HTTP date far ahead or in the past never puts the
// next attempt more than an hour away, nor before the schedule's step.
func TestHostileRetryAfter(t *testing.T) {
	t.Parallel()
	far := time.Now().Add(1000 * time.Hour).UTC().Format(http.TimeFormat)
	past := time.Now().Add(-1000 * time.Hour).UTC().Format(http.TimeFormat)
	cases := []struct {
		name, value string
		status      int
		minMS       int64 // the wait at least, in ms
		maxMS       int64 // and at most
	}{
		{"huge seconds", "99999999999999999999999", 429, 3_599_000, 3_600_500},
		{"max int64", strconv.FormatInt(1<<63-1, 10), 503, 3_599_000, 3_600_500},
		{"negative", "-5", 429, 90, 1500},
		{"fraction", "1.5", 429, 90, 1500},
		{"garbage", "soon, please", 503, 90, 1500},
		{"far date", far, 429, 3_599_000, 3_600_500},
		{"past date", past, 503, 90, 1500},
		{"plus sign", "+7200", 429, 90, 1500},
		{"spaces", " 7200 ", 429, 3_599_000, 3_600_500},
		{"huge value", "1" + strings.Repeat("0", 4000), 429, 3_599_000, 3_600_500},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			rc := newReceiver(t, func(rw http.ResponseWriter, _ *http.Request, _ int) {
				rw.Header().Set("Retry-After", tc.value)
				rw.WriteHeader(tc.status)
			})
			w.addWebhook("acme", rc.URL)
			w.notify(acmeVan)
			w.start(nil)
			eventually(t, "the first attempt", func() bool { return w.scalar(`SELECT count(*) FROM webhook_attempts`) >= 1 })
			wait := w.scalar(`SELECT (extract(epoch FROM next_at - updated_at) * 1000)::bigint FROM webhook_deliveries WHERE attempts = 1`)
			if wait < tc.minMS || wait > tc.maxMS {
				t.Fatalf("Retry-After %.40q: next attempt %d ms later, want %d..%d", tc.value, wait, tc.minMS, tc.maxMS)
			}
		})
	}
}
