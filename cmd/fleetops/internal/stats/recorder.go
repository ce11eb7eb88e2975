package stats

import (
	"slices"
	"sync"
	"time"
)

// Recorder collects outcomes by endpoint (or request kind) and by second
// since it was made. It is safe for concurrent use.
type Recorder struct {
	mu     sync.Mutex
	start  time.Time
	now    func() time.Time
	eps    map[string]*endpoint
	order  []string
	perSec map[int]map[string]int
}

// endpoint holds the figures of one endpoint.
type endpoint struct {
	lat        []time.Duration
	statuses   map[int]int
	codes      map[string]int
	errors     map[string]int
	unexpected int
}

// NewRecorder returns an empty recorder whose first second starts now.
func NewRecorder() *Recorder {
	return newRecorderAt(time.Now)
}

// newRecorderAt is NewRecorder on the clock now (tests).
func newRecorderAt(now func() time.Time) *Recorder {
	return &Recorder{start: now(), now: now, eps: map[string]*endpoint{}, perSec: map[int]map[string]int{}}
}

// Start is when the recorder was made.
func (r *Recorder) Start() time.Time { return r.start }

// Elapsed is the time since the recorder was made.
func (r *Recorder) Elapsed() time.Duration { return r.now().Sub(r.start) }

// Declare lists endpoints in the tables in this order, even before their
// first outcome.
func (r *Recorder) Declare(names ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, name := range names {
		r.endpointLocked(name)
	}
}

// endpointLocked returns the figures of name, declaring it when new
// (r.mu held).
func (r *Recorder) endpointLocked(name string) *endpoint {
	s := r.eps[name]
	if s == nil {
		s = &endpoint{statuses: map[int]int{}, codes: map[string]int{}, errors: map[string]int{}}
		r.eps[name] = s
		r.order = append(r.order, name)
	}
	return s
}

// Add records o under endpoint; expected tells whether its status is the
// one the run wanted (a transport error is counted as an error, never as
// unexpected). It also counts o's Class in the current second.
func (r *Recorder) Add(endpoint string, o Outcome, expected bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.endpointLocked(endpoint)
	if o.Err != nil {
		s.errors[ErrKind(o.Err)]++
	} else {
		s.lat = append(s.lat, o.Latency)
		s.statuses[o.Status]++
		if o.Code != "" {
			s.codes[o.Code]++
		}
		if !expected {
			s.unexpected++
		}
	}
	r.markLocked(Class(o))
}

// Mark counts name in the current second's row of the timeline (events
// such as a readiness probe's answer or a failover).
func (r *Recorder) Mark(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.markLocked(name)
}

// markLocked counts name in the current second (r.mu held).
func (r *Recorder) markLocked(name string) {
	sec := int(r.now().Sub(r.start) / time.Second)
	if r.perSec[sec] == nil {
		r.perSec[sec] = map[string]int{}
	}
	r.perSec[sec][name]++
}

// Totals sums every endpoint: answered requests, their statuses, and
// transport errors.
func (r *Recorder) Totals() (answered int, statuses map[int]int, errs int) {
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

// Failures returns, for endpoint (every endpoint when ""), how many
// answers had an unexpected status and how many requests ended in a
// transport error.
func (r *Recorder) Failures(endpoint string) (unexpected, transport int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, s := range r.eps {
		if endpoint != "" && name != endpoint {
			continue
		}
		unexpected += s.unexpected
		for _, n := range s.errors {
			transport += n
		}
	}
	return unexpected, transport
}

// Latencies returns the sorted latencies of the answers of endpoint
// (every endpoint when "").
func (r *Recorder) Latencies(endpoint string) []time.Duration {
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
