package policy

import (
	"context"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// collect reads the sums of the counter name from reader, by the
// attribute set's encoding.
func collect(t *testing.T, reader *sdkmetric.ManualReader, name string) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			sum, ok := m.Data.(metricdata.Sum[int64])
			if !ok || !sum.IsMonotonic || sum.Temporality != metricdata.CumulativeTemporality {
				t.Fatalf("%s is %T, want a cumulative monotonic int64 sum", name, m.Data)
			}
			for _, dp := range sum.DataPoints {
				got[dp.Attributes.Encoded(attribute.DefaultEncoder())] = dp.Value
			}
		}
	}
	return got
}

// TestCountsExportEverySeries: counts added from many goroutines, on
// kept series and on series found per call, are exported exactly, each
// under its attribute set, and the series created at start are exported at
// zero.
func TestCountsExportEverySeries(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	c, err := newCounts(mp.Meter("test"), "fleet.test.counts", "test")
	if err != nil {
		t.Fatal(err)
	}
	lookups := newLookupSeries(c)
	const goroutines, each = 8, 1000
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range each {
				lookups["decide"][1].n.Add(1)
				c.add(attribute.String("code", "DENIED"), attribute.String("action", "route"))
			}
		})
	}
	wg.Wait()
	enc := func(kvs ...attribute.KeyValue) string {
		s := attribute.NewSet(kvs...)
		return s.Encoded(attribute.DefaultEncoder())
	}
	want := map[string]int64{
		enc(lookupAttrs("decide", true)...):                                          goroutines * each,
		enc(lookupAttrs("decide", false)...):                                         0,
		enc(lookupAttrs("scope", true)...):                                           0,
		enc(lookupAttrs("scope", false)...):                                          0,
		enc(lookupAttrs("permissions", true)...):                                     0,
		enc(lookupAttrs("permissions", false)...):                                    0,
		enc(attribute.String("code", "DENIED"), attribute.String("action", "route")): goroutines * each,
	}
	got := collect(t, reader, "fleet.test.counts")
	if len(got) != len(want) {
		t.Fatalf("%d series, want %d: %v", len(got), len(want), got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %d, want %d", k, got[k], v)
		}
	}
	// A second collection reports the same cumulative values.
	c.add(attribute.String("code", "DENIED"), attribute.String("action", "route"))
	if got := collect(t, reader, "fleet.test.counts")[enc(attribute.String("code", "DENIED"), attribute.String("action", "route"))]; got != goroutines*each+1 {
		t.Fatalf("after one more: %d", got)
	}
}
