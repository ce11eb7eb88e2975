package stats

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// clock is a manual clock for the recorder's seconds.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newTestRecorder() (*Recorder, *clock) {
	c := &clock{t: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	return newRecorderAt(c.now), c
}

// TestRecorderCounts covers every kind of outcome: expected and unexpected
// statuses, error codes, transport errors, and marks.
func TestRecorderCounts(t *testing.T) {
	r, _ := newTestRecorder()
	refused := &errno{syscall.ECONNREFUSED}
	r.Add("GET /me", Outcome{Status: 200, Latency: 3 * time.Millisecond}, true)
	r.Add("GET /me", Outcome{Status: 200, Latency: 1 * time.Millisecond}, true)
	r.Add("GET /me", Outcome{Status: 429, Code: "RATE_LIMITED", Latency: 2 * time.Millisecond}, false)
	r.Add("POST /x", Outcome{Status: 201, Latency: 9 * time.Millisecond}, true)
	r.Add("POST /x", Outcome{Status: 503, Code: "SERVICE_UNAVAILABLE", Latency: 5 * time.Millisecond}, true)
	r.Add("POST /x", Outcome{Err: refused, Latency: time.Second}, false)
	r.Add("POST /x", Outcome{Err: refused}, true) // a transport error is never "expected"
	r.Mark("failover")

	answered, statuses, errs := r.Totals()
	if answered != 5 || errs != 2 {
		t.Errorf("Totals: answered %d errors %d, want 5 and 2", answered, errs)
	}
	if want := map[int]int{200: 2, 429: 1, 201: 1, 503: 1}; !equalMaps(statuses, want) {
		t.Errorf("statuses %v, want %v", statuses, want)
	}
	for _, tc := range []struct {
		endpoint              string
		unexpected, transport int
	}{{"", 1, 2}, {"GET /me", 1, 0}, {"POST /x", 0, 2}, {"nothing", 0, 0}} {
		u, tr := r.Failures(tc.endpoint)
		if u != tc.unexpected || tr != tc.transport {
			t.Errorf("Failures(%q) = %d, %d; want %d, %d", tc.endpoint, u, tr, tc.unexpected, tc.transport)
		}
	}
	// Transport errors have no latency: only answers are timed.
	if got := r.Latencies("GET /me"); !equalSlices(got, durations(1e6, 2e6, 3e6)) {
		t.Errorf("Latencies(GET /me) = %v", got)
	}
	if got := r.Latencies(""); len(got) != 5 || got[4] != 9*time.Millisecond {
		t.Errorf("Latencies() = %v", got)
	}
	var b bytes.Buffer
	r.Timeline(&b, []string{"2xx", "429", "503", "5xx", "4xx", "error", "failover"}, 1, nil)
	if got := lastLine(b.String()); got != "0  3  1  1  0  0  2  1" {
		t.Errorf("timeline row %q\n%s", got, b.String())
	}
}

type errno struct{ e syscall.Errno }

func (e *errno) Error() string { return "dial tcp: " + e.e.Error() }
func (e *errno) Unwrap() error { return e.e }

// TestRecorderConcurrent adds from many goroutines at once (run with
// -race): no outcome may be lost.
func TestRecorderConcurrent(t *testing.T) {
	r := NewRecorder()
	const workers, each = 16, 500
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				switch i % 4 {
				case 0:
					r.Add("a", Outcome{Status: 200, Latency: time.Duration(i)}, true)
				case 1:
					r.Add("b", Outcome{Status: 404, Code: "NOT_FOUND"}, false)
				case 2:
					r.Add("b", Outcome{Err: errors.New("boom")}, false)
				default:
					r.Mark("tick")
					r.Declare("c", "a")
				}
				if i%100 == 0 { // readers at the same time as writers
					r.Totals()
					r.Latencies("a")
					r.Failures("")
					r.Table(&bytes.Buffer{}, time.Second)
					r.Timeline(&bytes.Buffer{}, []string{"2xx"}, 1, nil)
				}
			}
			_ = w
		})
	}
	wg.Wait()
	answered, statuses, errs := r.Totals()
	quarter := workers * each / 4
	if answered != 2*quarter || errs != quarter || statuses[200] != quarter || statuses[404] != quarter {
		t.Errorf("answered %d, errors %d, statuses %v; want %d, %d, 200 and 404 × %d", answered, errs, statuses, 2*quarter, quarter, quarter)
	}
	if u, tr := r.Failures(""); u != quarter || tr != quarter {
		t.Errorf("Failures = %d, %d; want %d each", u, tr, quarter)
	}
	if n := len(r.Latencies("a")); n != quarter {
		t.Errorf("%d latencies of a, want %d", n, quarter)
	}
}

func TestTable(t *testing.T) {
	r, _ := newTestRecorder()
	r.Declare("GET /never", "GET /me")
	for i := 1; i <= 10; i++ {
		r.Add("GET /me", Outcome{Status: 200, Latency: time.Duration(i) * time.Millisecond}, true)
	}
	r.Add("POST /p", Outcome{Status: 400, Code: "VALIDATION_FAILED", Latency: 20 * time.Millisecond}, false)
	r.Add("POST /p", Outcome{Err: &errno{syscall.ECONNRESET}}, false)
	var b bytes.Buffer
	r.Table(&b, 2*time.Second)
	got := b.String()
	want := `    endpoint  requests  req/s  p50 ms  p90 ms  p99 ms  max ms  errors  unexpected
  GET /never         0    0.0     0.0     0.0     0.0     0.0       0           0
     GET /me        10    5.0     5.0     9.0    10.0    10.0       0           0
     POST /p         2    1.0    20.0    20.0    20.0    20.0       1           1
         all        12    6.0     6.0    10.0    20.0    20.0       1           1
statuses (error codes; transport errors) by endpoint:
  GET /never: 
  GET /me: 200×10
  POST /p: 400×1 (VALIDATION_FAILED×1); connection reset×1
`
	if got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
	// No elapsed time: no division by zero in req/s.
	b.Reset()
	r.Table(&b, 0)
	if strings.Contains(b.String(), "Inf") || strings.Contains(b.String(), "NaN") {
		t.Errorf("table with no elapsed time:\n%s", b.String())
	}
}

func TestTimeline(t *testing.T) {
	r, c := newTestRecorder()
	ok := Outcome{Status: 200}
	r.Add("x", ok, true) // second 0
	c.advance(1500 * time.Millisecond)
	r.Add("x", ok, true) // second 1
	r.Add("x", Outcome{Status: 503}, true)
	c.advance(3 * time.Second)
	r.Mark("probe") // second 4
	if got := r.Elapsed(); got != 4500*time.Millisecond {
		t.Errorf("Elapsed = %s", got)
	}
	var b bytes.Buffer
	r.Timeline(&b, []string{"2xx", "503", "probe"}, 1, func(from, to int) string {
		if from <= 1 && 1 <= to {
			return "← here"
		}
		return ""
	})
	want := "  second  2xx  503  probe\n" +
		"       0    1    0      0 \n" +
		"       1    1    1      0 ← here\n" +
		"       2    0    0      0 \n" +
		"       3    0    0      0 \n" +
		"       4    0    0      1 \n"
	if b.String() != want {
		t.Errorf("every second:\n%q\nwant:\n%q", b.String(), want)
	}
	b.Reset()
	r.Timeline(&b, []string{"2xx", "503", "probe"}, 2, nil)
	want = "  second  2xx  503  probe\n" +
		"     0-1    2    1      0 \n" +
		"     2-3    0    0      0 \n" +
		"     4-5    0    0      1 \n"
	if b.String() != want {
		t.Errorf("every 2 seconds:\n%q\nwant:\n%q", b.String(), want)
	}
}

func equalMaps(a, b map[int]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func equalSlices(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(strings.Fields(lines[len(lines)-1]), "  ")
}
