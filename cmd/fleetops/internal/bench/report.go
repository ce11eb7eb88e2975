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
		r.ratio(), r.policyShare(), stats.Micros(r.serverCPU), stats.Micros(r.clientCPU), stats.Micros(r.floorCPU), "", r.rssText(), r.load, r.check) +
		r.sidecarText()
}

// sidecarText is the sidecar's CPU per call on the text report.
func (r scenarioResult) sidecarText() string {
	if r.sidecarCPU == 0 {
		return ""
	}
	return fmt.Sprintf(", sidecar CPU %s µs per call", stats.Micros(r.sidecarCPU))
}

// markdownTable renders the results as the tables of docs/performance.md:
// the scenarios (API and floor), then the variants (RLS, OPA sidecar)
// beside fleetapi's figures for the same draws.
func markdownTable(results []scenarioResult) string {
	var main, variants []scenarioResult
	for _, r := range results {
		if r.variant {
			variants = append(variants, r)
		} else {
			main = append(main, r)
		}
	}
	out := scenarioTable(main)
	if len(variants) > 0 {
		out += "\n" + variantTable(variants, main)
	}
	return out
}

// family is the mixed scenario a variant draws as.
func family(variant string) string {
	for _, suffix := range []string{rlsSuffix, decisionSuffix, sidecarSuffix} {
		if f, ok := strings.CutSuffix(variant, suffix); ok {
			return f + mixedSuffix
		}
	}
	return variant
}

// variantTable renders the variants beside the API and floor of their
// mixed scenario, when it ran.
func variantTable(variants, main []scenarioResult) string {
	var b strings.Builder
	b.WriteString("| variant | path | p50 ms | p99 ms | req/s | harness Go CPU µs/req | sidecar CPU µs/req | fleetapi API p50 ms (same draws) | fleetapi floor p50 ms | variant/floor p50 | variant/API p50 | fleetapi server CPU µs/req | errors | check | load avg |\n")
	b.WriteString("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|--:|\n")
	for _, v := range variants {
		var ref *scenarioResult
		for i := range main {
			if main[i].name == family(v.name) {
				ref = &main[i]
			}
		}
		apiP50, floorP50, vf, va, server := "-", "-", "-", "-", "-"
		if ref != nil && ref.measuredAPI && ref.api.P50 > 0 {
			apiP50, va, server = ms(ref.api.P50), fmt.Sprintf("%.2f", float64(v.floor.P50)/float64(ref.api.P50)), stats.Micros(ref.serverCPU)
		}
		if ref != nil && ref.measuredFloor && ref.floor.P50 > 0 {
			floorP50, vf = ms(ref.floor.P50), fmt.Sprintf("%.2f", float64(v.floor.P50)/float64(ref.floor.P50))
		}
		sidecar := "-"
		if v.sidecarCPU > 0 {
			sidecar = stats.Micros(v.sidecarCPU)
		}
		fmt.Fprintf(&b, "| %s | %s (%s) | %s | %s | %.0f | %s | %s | %s | %s | %s | %s | %s | %d | %s | %s |\n",
			v.name, v.request, v.role, ms(v.floor.P50), ms(v.floor.P99), v.floor.Throughput(), stats.Micros(v.floorCPU), sidecar,
			apiP50, floorP50, vf, va, server, v.floor.Errors, v.check, v.load)
	}
	return b.String()
}

// scenarioTable renders the API scenarios.
func scenarioTable(results []scenarioResult) string {
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
