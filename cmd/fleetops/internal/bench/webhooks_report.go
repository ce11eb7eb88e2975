package bench

import (
	"fmt"
	"strings"

	"github.com/fleetapi/fleetapi/cmd/fleetops/internal/stats"
)

// line is the text report of one webhooks run.
func (r whResult) line() string {
	out := fmt.Sprintf("%-14s %d endpoints (%d dead), %.1f notifications/s driven (%d ticks, %d errors), %d notifications, %d of %d deliveries, %.0f deliveries/s, notification → delivery p50 %s p99 %s max %s ms, %d duplicates, %d bad signatures",
		r.name, r.endpoints, r.dead, r.rate, r.drive.ticks, r.drive.errors, r.notifications, r.delivered, r.expected,
		r.deliveriesPerSecond(), ms(r.latency.P50), ms(r.latency.P99), ms(r.latency.Max), r.duplicates, r.invalid)
	if r.backlog > 0 {
		out += fmt.Sprintf("; backlog %d drained in %s s (%.0f/s)", r.backlog, stats.Seconds(r.drain), r.drainRate())
		if !r.drained {
			out += fmt.Sprintf(" NOT DRAINED (%d left)", r.left)
		}
	}
	if r.serverCPU > 0 {
		out += fmt.Sprintf("; server CPU %s µs per delivery", stats.Micros(r.serverCPU))
	}
	if r.drive.firstError != "" {
		out += " (first error: " + r.drive.firstError + ")"
	}
	if r.note != "" {
		out += " (" + r.note + ")"
	}
	return out + ", load average " + r.load
}

// drainRate is the backlog's deliveries sent per second of the drain
// (those still pending at the end not counted).
func (r whResult) drainRate() float64 { return stats.Rate(r.backlog-r.left, r.drain) }

// webhooksMarkdown renders the webhooks runs as the table of
// docs/performance.md, with the healthy endpoints' p99 beside dead ones
// over the run without.
func webhooksMarkdown(runs []whResult) string {
	var b strings.Builder
	b.WriteString("| run | endpoints (dead) | notifications/s driven | notifications | deliveries expected | delivered | deliveries/s | notification → delivery p50 ms | p99 ms | max ms | duplicates | bad signatures | drive errors | backlog | drain s | drain deliveries/s | server CPU µs/delivery | load avg |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	var alive, dead *whResult
	for i, r := range runs {
		backlog, drain, rate, cpu := "-", "-", "-", "-"
		if r.backlog > 0 {
			backlog, drain, rate = fmt.Sprint(r.backlog), stats.Seconds(r.drain), fmt.Sprintf("%.0f", r.drainRate())
			if !r.drained {
				drain += fmt.Sprintf(" (not drained: %d left)", r.left)
			}
		}
		if r.serverCPU > 0 {
			cpu = stats.Micros(r.serverCPU)
		}
		fmt.Fprintf(&b, "| %s | %d (%d) | %.1f | %d | %d | %d | %.0f | %s | %s | %s | %d | %d | %d | %s | %s | %s | %s | %s |\n",
			r.name, r.endpoints, r.dead, r.rate, r.notifications, r.expected, r.delivered, r.deliveriesPerSecond(),
			ms(r.latency.P50), ms(r.latency.P99), ms(r.latency.Max), r.duplicates, r.invalid, r.drive.errors, backlog, drain, rate, cpu, r.load)
		if strings.HasPrefix(r.name, "dead ") {
			if r.dead == 0 {
				alive = &runs[i]
			} else {
				dead = &runs[i]
			}
		}
	}
	if alive != nil && dead != nil && alive.latency.P99 > 0 {
		fmt.Fprintf(&b, "\nHealthy endpoints' p99 with %d of %d dead over none dead: %.2f (%s ms / %s ms)\n",
			dead.dead, dead.endpoints, float64(dead.latency.P99)/float64(alive.latency.P99), ms(dead.latency.P99), ms(alive.latency.P99))
	}
	for _, r := range runs {
		if r.note != "" {
			fmt.Fprintf(&b, "\n%s: %s\n", r.name, r.note)
		}
	}
	return b.String()
}
