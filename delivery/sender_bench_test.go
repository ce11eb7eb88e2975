package delivery_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/delivery"
	"github.com/fleetapi/fleetapi/storage"
)

// BenchmarkSenderDrain is the sender's cost per delivery: 10 endpoints
// of acme on one local receiver, 100 notifications queued (1,000
// deliveries), then a sender of 16 workers, 2 per endpoint, drains the
// queue. Run with a CPU profile to see where the sender's time goes:
// go test ./delivery -run '^$' -bench BenchmarkSenderDrain -benchtime 3x -cpuprofile /tmp/cpu.out
func BenchmarkSenderDrain(b *testing.B) {
	w := newWorld(b)
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	b.Cleanup(rc.Close)
	for i := range 10 {
		w.addWebhook("acme", rc.URL+"/"+string(rune('a'+i)))
	}
	// the sender's own pool, as serve opens it (workers + 1)
	opened := time.Now()
	senderDB := storage.Open(w.db.URL, storage.Options{MaxOpenConns: delivery.DefaultWorkers + 1})
	b.Cleanup(func() { _ = senderDB.Close() })
	senderStore := storage.NewStore(senderDB)
	const notifications = 100
	var total time.Duration
	delivered := int64(0)
	pgTicks := int64(0)
	for range b.N {
		b.StopTimer()
		w.exec(`DELETE FROM webhook_deliveries`)
		for range notifications {
			w.notify(acmeVan)
		}
		want := w.scalar(`SELECT count(*) FROM webhook_deliveries WHERE state = 'pending'`)
		before := w.backendTicks(opened)
		b.StartTimer()
		start := time.Now()
		s, err := delivery.New(delivery.Options{Store: senderStore, Policy: w.policy, Keys: w.keys, Client: client(5 * time.Second), Poll: 50 * time.Millisecond})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); s.Run(ctx) }()
		for w.scalar(`SELECT count(*) FROM webhook_deliveries WHERE state = 'pending'`) > 0 {
			time.Sleep(10 * time.Millisecond)
		}
		pgTicks += w.backendTicks(opened) - before
		cancel()
		<-done
		total += time.Since(start)
		delivered += want
	}
	b.ReportMetric(float64(delivered)/total.Seconds(), "deliveries/s")
	b.ReportMetric(float64(total.Microseconds())/float64(delivered), "µs/delivery")
	if pgTicks > 0 {
		// clock ticks of 10 ms (CLK_TCK 100)
		b.ReportMetric(float64(pgTicks)*10000/float64(delivered), "pg-cpu-µs/delivery")
	}
}

// backendTicks is the CPU (user and system clock ticks) of the
// PostgreSQL backends connected to the world's database since since (the
// sender's pool), when the server runs on this machine (0 otherwise). The
// pool stays connected through a run, so the difference over a run is the
// CPU the server spent on the sender's statements.
func (w *world) backendTicks(since time.Time) int64 {
	var pids []int64
	if err := w.db.NewRaw(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND backend_start >= ?`, since).Scan(context.Background(), &pids); err != nil {
		w.t.Fatal(err)
	}
	total := int64(0)
	for _, pid := range pids {
		b, err := os.ReadFile("/proc/" + strconv.FormatInt(pid, 10) + "/stat")
		if err != nil {
			continue
		}
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) > 12 {
			u, _ := strconv.ParseInt(f[11], 10, 64)
			s, _ := strconv.ParseInt(f[12], 10, 64)
			total += u + s
		}
	}
	return total
}
