package telemetry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is the stdout of the tests: it counts the writes that
// reach it.
type lockedBuffer struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes int
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.writes++
	return b.buf.Write(p)
}

func (b *lockedBuffer) state() (string, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String(), b.writes
}

func TestLogWriterBuffersUntilTheInterval(t *testing.T) {
	out := &lockedBuffer{}
	w := NewLogWriter(out, time.Hour)
	for i := range 100 {
		fmt.Fprintf(w, "line %d\n", i)
	}
	if got, n := out.state(); got != "" || n != 0 {
		t.Fatalf("written before a flush: %d writes, %q", n, got)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	got, n := out.state()
	if n != 1 || !strings.HasPrefix(got, "line 0\n") || !strings.HasSuffix(got, "line 99\n") || strings.Count(got, "\n") != 100 {
		t.Fatalf("after Flush: %d writes, %d lines", n, strings.Count(got, "\n"))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestLogWriterFlushesEveryInterval(t *testing.T) {
	out := &lockedBuffer{}
	w := NewLogWriter(out, 10*time.Millisecond)
	defer w.Close() //nolint:errcheck // test
	fmt.Fprintln(w, "first")
	deadline := time.Now().Add(10 * time.Second)
	for {
		if got, _ := out.state(); got == "first\n" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the line was never flushed")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestLogWriterCloseFlushesThenWritesThrough(t *testing.T) {
	out := &lockedBuffer{}
	w := NewLogWriter(out, time.Hour)
	fmt.Fprintln(w, "before")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _ := out.state(); got != "before\n" {
		t.Fatalf("after Close: %q", got)
	}
	fmt.Fprintln(w, "after")
	if got, _ := out.state(); got != "before\nafter\n" {
		t.Fatalf("a write after Close: %q", got)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestLogWriterZeroIntervalWritesEachLine(t *testing.T) {
	out := &lockedBuffer{}
	w := NewLogWriter(out, 0)
	fmt.Fprintln(w, "a")
	fmt.Fprintln(w, "b")
	if got, n := out.state(); got != "a\nb\n" || n != 2 {
		t.Fatalf("%d writes, %q", n, got)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// Lines written at once by many goroutines, more than the buffer holds,
// arrive whole: none is split or interleaved with another.
func TestLogWriterKeepsConcurrentLinesWhole(t *testing.T) {
	out := &lockedBuffer{}
	w := NewLogWriter(out, time.Millisecond)
	const writers, lines = 8, 2000
	line := func(g, i int) string { return fmt.Sprintf("writer %d line %d %s\n", g, i, strings.Repeat("x", 40)) }
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range lines {
				if _, err := w.Write([]byte(line(g, i))); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, _ := out.state()
	seen := map[string]bool{}
	for _, l := range strings.SplitAfter(got, "\n") {
		if l == "" {
			continue
		}
		if seen[l] {
			t.Fatalf("line twice: %q", l)
		}
		seen[l] = true
	}
	for g := range writers {
		for i := range lines {
			if !seen[line(g, i)] {
				t.Fatalf("line missing or split: %q", line(g, i))
			}
		}
	}
}

// failingOnce fails its first write, then writes.
type failingOnce struct {
	lockedBuffer
	failed bool
}

func (f *failingOnce) Write(p []byte) (int, error) {
	f.mu.Lock()
	if !f.failed {
		f.failed = true
		f.mu.Unlock()
		return 0, errors.New("disk full")
	}
	f.mu.Unlock()
	return f.lockedBuffer.Write(p)
}

// A failed write of the underlying writer loses what was buffered, not
// the log: the lines after it are written (a bufio.Writer alone would
// refuse every later write).
func TestLogWriterGoesOnAfterAFailedWrite(t *testing.T) {
	out := &failingOnce{}
	w := NewLogWriter(out, time.Hour)
	fmt.Fprintln(w, "lost")
	if err := w.Flush(); err == nil {
		t.Fatal("the failed write was not reported")
	}
	fmt.Fprintln(w, "kept")
	if err := w.Flush(); err != nil {
		t.Fatalf("after a failed write: %v", err)
	}
	fmt.Fprintln(w, "at close")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _ := out.state(); got != "kept\nat close\n" {
		t.Fatalf("written: %q", got)
	}
}

// frozen blocks every write until it is thawed, like a pipe whose reader
// stopped reading.
type frozen struct {
	lockedBuffer
	thaw chan struct{}
}

func (f *frozen) Write(p []byte) (int, error) {
	<-f.thaw
	return f.lockedBuffer.Write(p)
}

// A frozen stdout holds the flush, not the writers: lines written while
// it is frozen return at once, up to 4 MiB wait and the rest are dropped
// and counted in a line of their own once the writer thaws; the kept
// lines arrive whole and in order.
func TestLogWriterNeverWaitsForAFrozenWriter(t *testing.T) {
	out := &frozen{thaw: make(chan struct{})}
	w := NewLogWriter(out, time.Millisecond)
	line := func(i int) string { return fmt.Sprintf("line %07d %s\n", i, strings.Repeat("x", 1000)) }
	const lines = 6000 // ~6 MiB: more than a LogWriter holds
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range lines {
			if _, err := w.Write([]byte(line(i))); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("writes waited for the frozen writer")
	}
	close(out.thaw)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, _ := out.state()
	var kept []string
	dropped := 0
	for _, l := range strings.SplitAfter(got, "\n") {
		switch {
		case l == "":
		case strings.Contains(l, `"msg":"log lines dropped"`):
			var rec struct{ Count int }
			if err := json.Unmarshal([]byte(l), &rec); err != nil {
				t.Fatalf("drop record %q: %v", l, err)
			}
			dropped += rec.Count
		default:
			kept = append(kept, l)
		}
	}
	if dropped == 0 || len(kept)+dropped != lines {
		t.Fatalf("%d lines kept and %d dropped of %d", len(kept), dropped, lines)
	}
	for i, l := range kept {
		if l != line(i) {
			t.Fatalf("kept line %d is %.20q", i, l)
		}
	}
}
