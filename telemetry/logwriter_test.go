package telemetry

import (
	"bytes"
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
