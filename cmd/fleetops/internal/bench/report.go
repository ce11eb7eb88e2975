package bench

import (
	"fmt"
	"strings"
	"time"

	"github.com/fleetapi/fleetapi/cmd/fleetops/internal/stats"
)

// ms formats a duration in milliseconds with two decimals, as every bench
// table does (the floor's latencies are often below a millisecond).
func ms(d time.Duration) string { return stats.Millis(d, 2) }

// ratio is the API p50 over the floor p50; "-" when one side is missing.
func (r scenarioResult) ratio() string {
	if !r.measuredAPI || !r.measuredFloor || r.floor.P50 == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", float64(r.api.P50)/float64(r.floor.P50))
}

// policyShare is the policy step's share of the API p50.
func (r scenarioResult) policyShare() string {
	s := fmt.Sprintf("%.1f µs", float64(r.policy)/float64(time.Microsecond))
	if r.measuredAPI && r.api.P50 > 0 {
		s += fmt.Sprintf(" (%.1f%%)", 100*float64(r.policy)/float64(r.api.P50))
	}
	return s
}

// rssText is the server's peak resident memory, "-" when not sampled.
func (r scenarioResult) rssText() string {
	if r.rss == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f MB", float64(r.rss)/(1<<20))
}

// side is one side's (API or floor) figures on the text report.
func side(s stats.Summary, measured bool) string {
	if !measured {
		return "-"
	}
	out := fmt.Sprintf("p50 %s p90 %s p99 %s ms, %.0f req/s, %d req, %d errors",
		ms(s.P50), ms(s.P90), ms(s.P99), s.Throughput(), s.Requests, s.Errors)
	if s.FirstError != "" {
		out += " (first: " + s.FirstError + ")"
	}
	return out
}

// line is the one-line text report of a scenario.
func (r scenarioResult) line() string {
	return fmt.Sprintf("%-16s %-10s API   %s\n%-27s floor %s\n%-27s ratio %s, policy %s, CPU per request: server %s, harness HTTP client %s, floor Go %s µs\n%-27s server RSS peak %s, load average %s, check: %s",
		r.name, r.role, side(r.api, r.measuredAPI), "", side(r.floor, r.measuredFloor), "",
		r.ratio(), r.policyShare(), stats.Micros(r.serverCPU), stats.Micros(r.clientCPU), stats.Micros(r.floorCPU), "", r.rssText(), r.load, r.check)
}

// markdownTable renders the results as the table of docs/performance.md.
func markdownTable(results []scenarioResult) string {
	var b strings.Builder
	b.WriteString("| scenario | request (role) | API p50 ms | API p90 ms | API p99 ms | API req/s | floor p50 ms | floor p99 ms | floor req/s | API/floor p50 | policy p50 (share of API p50) | errors API/floor | server RSS peak | server CPU µs/req | floor Go CPU µs/req | load avg |\n")
	b.WriteString("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, r := range results {
		api := func(f func(stats.Summary) string) string {
			if !r.measuredAPI {
				return "-"
			}
			return f(r.api)
		}
		floor := func(f func(stats.Summary) string) string {
			if !r.measuredFloor {
				return "-"
			}
			return f(r.floor)
		}
		fmt.Fprintf(&b, "| %s | `%s` (%s) | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s/%s | %s | %s | %s | %s |\n",
			r.name, r.request, r.role,
			api(func(s stats.Summary) string { return ms(s.P50) }), api(func(s stats.Summary) string { return ms(s.P90) }),
			api(func(s stats.Summary) string { return ms(s.P99) }), api(func(s stats.Summary) string { return fmt.Sprintf("%.0f", s.Throughput()) }),
			floor(func(s stats.Summary) string { return ms(s.P50) }), floor(func(s stats.Summary) string { return ms(s.P99) }),
			floor(func(s stats.Summary) string { return fmt.Sprintf("%.0f", s.Throughput()) }),
			r.ratio(), r.policyShare(),
			api(func(s stats.Summary) string { return fmt.Sprint(s.Errors) }), floor(func(s stats.Summary) string { return fmt.Sprint(s.Errors) }),
			r.rssText(), stats.Micros(r.serverCPU), stats.Micros(r.floorCPU), r.load)
	}
	return b.String()
}
