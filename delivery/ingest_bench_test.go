package delivery_test

import (
	"context"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/storage"
)

// BenchmarkIngestQueueing is the ingest's cost with and without webhooks
// to queue for (docs/webhooks.md, "Metrics and limits"): one batch of 100
// readings of one device that fires its overspeed rule 50 times, through
// the real ingest, with no webhook at all, and with 4 active webhooks in
// the device's tree (its account, its manager, the admin and one of a
// type that does not match) and 10 of other tenants. Run:
// go test ./delivery -run '^$' -bench BenchmarkIngestQueueing -benchtime 200x
func BenchmarkIngestQueueing(b *testing.B) {
	for _, withHooks := range []bool{false, true} {
		name := "no webhooks"
		if withHooks {
			name = "webhooks"
		}
		b.Run(name, func(b *testing.B) {
			w := newWorld(b)
			if withHooks {
				w.addWebhook("acme", "https://example.com/a")
				w.addWebhook("fleetco", "https://example.com/f")
				w.addWebhook("admin", "https://example.com/x")
				w.addWebhook("acme", "https://example.com/s", "sos")
				for range 10 {
					w.addWebhook("tailspin", "https://example.com/t")
				}
			}
			ctx := context.Background()
			stop, fast := 0.0, 100.0
			batch := make([]storage.Reading, 100)
			b.ResetTimer()
			for range b.N {
				for i := range batch {
					sp := &stop
					if i%2 == 1 {
						sp = &fast
					}
					batch[i] = storage.Reading{IMEI: acmeVan, Time: w.clock, Speed: sp}
					w.clock = w.clock.Add(time.Second)
				}
				if _, err := w.store.IngestReadings(ctx, w.ingest, batch, time.Now()); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if withHooks {
				b.ReportMetric(float64(w.scalar(`SELECT count(*) FROM webhook_deliveries`))/float64(b.N), "deliveries/op")
			}
		})
	}
}
