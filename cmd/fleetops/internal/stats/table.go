package stats

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"
)

// Table prints one row per endpoint, in the order they were declared or
// first seen, and a row "all": requests (answered and failed), throughput
// over elapsed, latency percentiles in milliseconds, transport errors and
// unexpected statuses. Then one line per endpoint with its statuses, error
// codes and transport errors.
func (r *Recorder) Table(w io.Writer, elapsed time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "endpoint\trequests\treq/s\tp50 ms\tp90 ms\tp99 ms\tmax ms\terrors\tunexpected\t")
	row := func(name string, lat []time.Duration, errs, unexpected int) {
		p := PercentilesOf(lat)
		n := len(lat) + errs
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%s\t%s\t%s\t%s\t%d\t%d\t\n", name, n, Rate(int64(n), elapsed),
			Millis(p.P50, 1), Millis(p.P90, 1), Millis(p.P99, 1), Millis(p.Max, 1), errs, unexpected)
	}
	var all []time.Duration
	allErrs, allUnexpected := 0, 0
	for _, name := range r.order {
		s := r.eps[name]
		errs := sum(s.errors)
		row(name, s.lat, errs, s.unexpected)
		all = append(all, s.lat...)
		allErrs += errs
		allUnexpected += s.unexpected
	}
	row("all", all, allErrs, allUnexpected)
	tw.Flush()
	fmt.Fprintln(w, "statuses (error codes; transport errors) by endpoint:")
	for _, name := range r.order {
		s := r.eps[name]
		line := "  " + name + ": " + Counts(s.statuses, strconv.Itoa)
		if codes := Counts(s.codes, identity); codes != "" {
			line += " (" + codes + ")"
		}
		if errs := Counts(s.errors, identity); errs != "" {
			line += "; " + errs
		}
		fmt.Fprintln(w, line)
	}
}

// Timeline prints the per-second counts of cols (classes of Add, or names
// of Mark), every seconds to a row; note, when set, adds a remark to the
// row of seconds from to to.
func (r *Recorder) Timeline(w io.Writer, cols []string, every int, note func(from, to int) string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	every = max(every, 1)
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

// sum adds the counts of m.
func sum[K comparable](m map[K]int) int {
	n := 0
	for _, k := range m {
		n += k
	}
	return n
}

// identity names a string key by itself.
func identity(s string) string { return s }
