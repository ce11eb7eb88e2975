package bench

import (
	"fmt"
	"os"
	"strings"

	"github.com/fleetapi/fleetapi/cmd/fleetops/internal/stats"
)

// line is the text report of one ingest run.
func (r ingestResult) line() string {
	out := fmt.Sprintf("%-8s %.0f readings/s accepted (%d in %s s, %d batches of %d from %d clients), batch p50 %s p99 %s ms, %d errors, %d rejected, %d duplicates, %d notifications created",
		r.name, r.throughput(), r.accepted, stats.Seconds(r.elapsed), r.batches, r.batch, r.clients,
		ms(r.latency.P50), ms(r.latency.P99), r.errors, r.rejected, r.duplicates, r.notifications)
	if r.rate > 0 {
		out += fmt.Sprintf(", target %.0f/s", r.rate)
	}
	if r.firstError != "" {
		out += " (first error: " + r.firstError + ")"
	}
	if r.rss > 0 {
		out += fmt.Sprintf("; server RSS peak %.0f MB, CPU %s µs per reading", float64(r.rss)/(1<<20), stats.Micros(r.serverCPU))
	}
	out += ", load average " + r.load
	if s := r.stream; s != nil {
		out += fmt.Sprintf("\n%-8s stream: %d notifications read, %d matched to their batch, reading → notification p50 %s p99 %s max %s ms",
			"", s.events, s.matched, ms(s.latency.P50), ms(s.latency.P99), ms(s.latency.Max))
		if s.reconnects > 0 {
			out += fmt.Sprintf(", reopened %d times", s.reconnects)
		}
		if s.err != nil {
			out += " (" + s.err.Error() + ")"
		}
	}
	return out
}

// ingestMarkdown renders the ingest runs, the API/floor ratio and the read
// scenarios idle and while ingesting as the tables of docs/performance.md.
func ingestMarkdown(runs []ingestResult, loaded *ingestResult, reads []readsPair) string {
	var b strings.Builder
	b.WriteString("| run | clients × batch | readings/s accepted | readings accepted | batches | batch p50 ms | batch p99 ms | errors | rejected | duplicates | notifications created | stream: read / matched | reading → notification p50 ms | p99 ms | server RSS peak | server CPU µs/reading | load avg |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	all := runs
	if loaded != nil {
		all = append(all[:len(all):len(all)], *loaded)
	}
	for _, r := range all {
		stream, p50, p99 := "-", "-", "-"
		if s := r.stream; s != nil {
			stream, p50, p99 = fmt.Sprintf("%d / %d", s.events, s.matched), ms(s.latency.P50), ms(s.latency.P99)
		}
		rss, cpu := "-", stats.Micros(r.serverCPU)
		if r.rss > 0 {
			rss = fmt.Sprintf("%.0f MB", float64(r.rss)/(1<<20))
		}
		fmt.Fprintf(&b, "| %s | %d × %d | %.0f | %d | %d | %s | %s | %d | %d | %d | %d | %s | %s | %s | %s | %s | %s |\n",
			r.name, r.clients, r.batch, r.throughput(), r.accepted, r.batches, ms(r.latency.P50), ms(r.latency.P99), r.errors, r.rejected,
			r.duplicates, r.notifications, stream, p50, p99, rss, cpu, r.load)
	}
	if len(runs) >= 2 && runs[1].throughput() > 0 {
		fmt.Fprintf(&b, "\nAPI/floor throughput: %.2f\n", runs[0].throughput()/runs[1].throughput())
	}
	if len(reads) > 0 {
		b.WriteString("\n| read scenario | idle req/s | idle p50 ms | idle p99 ms | while ingesting req/s | p50 ms | p99 ms | ingesting/idle req/s | errors idle/ingesting |\n")
		b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|\n")
		for _, p := range reads {
			ratio := "-"
			if p.idle.api.Throughput() > 0 {
				ratio = fmt.Sprintf("%.2f", p.loaded.api.Throughput()/p.idle.api.Throughput())
			}
			fmt.Fprintf(&b, "| %s | %.0f | %s | %s | %.0f | %s | %s | %s | %d/%d |\n", p.idle.name,
				p.idle.api.Throughput(), ms(p.idle.api.P50), ms(p.idle.api.P99),
				p.loaded.api.Throughput(), ms(p.loaded.api.P50), ms(p.loaded.api.P99), ratio, p.idle.api.Errors, p.loaded.api.Errors)
		}
	}
	return b.String()
}

// writeFile writes s to path.
func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o644) }
