package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// recorder collects results by endpoint and by second of the run.
type recorder struct {
	mu     sync.Mutex
	start  time.Time
	eps    map[string]*endpointStats
	order  []string
	perSec map[int]map[string]int
}

// endpointStats are the figures of one endpoint (or request kind).
type endpointStats struct {
	lat        []time.Duration
	statuses   map[int]int
	codes      map[string]int
	errors     map[string]int
	unexpected int
}

func newRecorder() *recorder {
	return &recorder{start: time.Now(), eps: map[string]*endpointStats{}, perSec: map[int]map[string]int{}}
}

// class is the column of a result in the per-second timeline.
func class(res result) string {
	switch {
	case res.err != nil:
		return "error"
	case res.status >= 200 && res.status < 300:
		return "2xx"
	case res.status == 429 || res.status == 503:
		return strconv.Itoa(res.status)
	case res.status >= 500:
		return "5xx"
	}
	return "4xx"
}

// declare lists endpoints in the tables in this order, even before their
// first result.
func (r *recorder) declare(names ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, name := range names {
		if r.eps[name] == nil {
			r.eps[name] = newEndpointStats()
			r.order = append(r.order, name)
		}
	}
}

func newEndpointStats() *endpointStats {
	return &endpointStats{statuses: map[int]int{}, codes: map[string]int{}, errors: map[string]int{}}
}

// add records res under endpoint; expected tells whether its status is the
// one the run wanted (transport errors are never expected).
func (r *recorder) add(endpoint string, res result, expected bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.eps[endpoint]
	if s == nil {
		s = newEndpointStats()
		r.eps[endpoint] = s
		r.order = append(r.order, endpoint)
	}
	if res.err != nil {
		s.errors[errKind(res.err)]++
	} else {
		s.lat = append(s.lat, res.latency)
		s.statuses[res.status]++
		if res.code != "" {
			s.codes[res.code]++
		}
		if !expected {
			s.unexpected++
		}
	}
	sec := int(time.Since(r.start) / time.Second)
	if r.perSec[sec] == nil {
		r.perSec[sec] = map[string]int{}
	}
	r.perSec[sec][class(res)]++
}

// mark counts name in the current second's row of the timeline (for
// events such as a readiness probe's answer).
func (r *recorder) mark(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	sec := int(time.Since(r.start) / time.Second)
	if r.perSec[sec] == nil {
		r.perSec[sec] = map[string]int{}
	}
	r.perSec[sec][name]++
}

// totals sums every endpoint: answered requests, statuses and errors.
func (r *recorder) totals() (answered int, statuses map[int]int, errs int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	statuses = map[int]int{}
	for _, s := range r.eps {
		answered += len(s.lat)
		for st, n := range s.statuses {
			statuses[st] += n
		}
		for _, n := range s.errors {
			errs += n
		}
	}
	return answered, statuses, errs
}

// latencies returns the sorted latencies of endpoint (all endpoints when
// empty).
func (r *recorder) latencies(endpoint string) []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []time.Duration
	for name, s := range r.eps {
		if endpoint == "" || name == endpoint {
			out = append(out, s.lat...)
		}
	}
	slices.Sort(out)
	return out
}

func sortDurations(d []time.Duration) { slices.Sort(d) }

// pct is the p-th percentile (nearest rank) of sorted durations.
func pct(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p/100+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// secs formats d in seconds.
func secs(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 1, 64)
}

// ms formats d in milliseconds.
func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64)
}

func countsString[K comparable](m map[K]int, key func(K) string) string {
	keys := slices.Collect(maps.Keys(m))
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = key(k)
	}
	idx := make([]int, len(keys))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return strings.Compare(names[a], names[b]) })
	parts := make([]string, 0, len(keys))
	for _, i := range idx {
		parts = append(parts, fmt.Sprintf("%s×%d", names[i], m[keys[i]]))
	}
	return strings.Join(parts, " ")
}

// table prints one row per endpoint: requests, throughput over elapsed,
// latency percentiles, statuses with error codes, transport errors and
// unexpected statuses.
func (r *recorder) table(w io.Writer, elapsed time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "endpoint\trequests\treq/s\tp50 ms\tp90 ms\tp99 ms\tmax ms\terrors\tunexpected\t")
	var all []time.Duration
	total, errs, unexpected := 0, 0, 0
	rows := map[string][]string{}
	for _, name := range r.order {
		s := r.eps[name]
		lat := slices.Sorted(slices.Values(s.lat))
		all = append(all, lat...)
		n := len(lat)
		e := 0
		for _, k := range s.errors {
			e += k
		}
		total += n + e
		errs += e
		unexpected += s.unexpected
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%s\t%s\t%s\t%s\t%d\t%d\t\n", name, n+e, float64(n+e)/elapsed.Seconds(),
			ms(pct(lat, 50)), ms(pct(lat, 90)), ms(pct(lat, 99)), ms(pct(lat, 100)), e, s.unexpected)
		rows[name] = []string{
			countsString(s.statuses, strconv.Itoa),
			countsString(s.codes, func(s string) string { return s }),
			countsString(s.errors, func(s string) string { return s }),
		}
	}
	slices.Sort(all)
	fmt.Fprintf(tw, "all\t%d\t%.1f\t%s\t%s\t%s\t%s\t%d\t%d\t\n", total, float64(total)/elapsed.Seconds(),
		ms(pct(all, 50)), ms(pct(all, 90)), ms(pct(all, 99)), ms(pct(all, 100)), errs, unexpected)
	tw.Flush()
	fmt.Fprintln(w, "statuses (error codes; transport errors) by endpoint:")
	for _, name := range r.order {
		line := "  " + name + ": " + rows[name][0]
		if rows[name][1] != "" {
			line += " (" + rows[name][1] + ")"
		}
		if rows[name][2] != "" {
			line += "; " + rows[name][2]
		}
		fmt.Fprintln(w, line)
	}
}

// timeline prints the per-second counts of cols, grouping every seconds
// seconds into one row; note, when set, adds a remark to a row.
func (r *recorder) timeline(w io.Writer, cols []string, every int, note func(from, to int) string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	last := 0
	for sec := range r.perSec {
		last = max(last, sec)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "second\t")
	for _, c := range cols {
		fmt.Fprint(tw, c+"\t")
	}
	fmt.Fprintln(tw)
	for from := 0; from <= last; from += every {
		to := from + every - 1
		label := strconv.Itoa(from)
		if every > 1 {
			label = fmt.Sprintf("%d-%d", from, to)
		}
		fmt.Fprint(tw, label+"\t")
		for _, c := range cols {
			n := 0
			for s := from; s <= to; s++ {
				n += r.perSec[s][c]
			}
			fmt.Fprintf(tw, "%d\t", n)
		}
		remark := ""
		if note != nil {
			remark = note(from, to)
		}
		fmt.Fprintf(tw, " %s\n", remark)
	}
	tw.Flush()
}

// checks prints each verdict of a run and remembers the failures.
type checks struct {
	e      *env
	failed []string
}

// expect prints PASS or FAIL for the claim what.
func (c *checks) expect(ok bool, format string, args ...any) {
	what := fmt.Sprintf(format, args...)
	verdict := "PASS"
	if !ok {
		verdict = "FAIL"
		c.failed = append(c.failed, what)
	}
	c.e.printf("  %s  %s\n", verdict, what)
}

// err is nil when every check passed.
func (c *checks) err() error {
	if len(c.failed) == 0 {
		return nil
	}
	return fmt.Errorf("%d check(s) failed: %s", len(c.failed), strings.Join(c.failed, "; "))
}
