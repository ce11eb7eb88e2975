package telemetry

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// DefaultLogFlushInterval is how long serve's log lines may wait in a
// LogWriter unless FLEET_LOG_FLUSH_INTERVAL says otherwise.
const DefaultLogFlushInterval = 100 * time.Millisecond

const (
	// logFlushSize is how much a LogWriter holds before it asks for a
	// flush without waiting for the interval.
	logFlushSize = 64 << 10
	// logMaxPending bounds what a LogWriter holds while the underlying
	// writer does not take it (a frozen pipe, a stuck log shipper): lines
	// beyond it are dropped and counted, never waited for.
	logMaxPending = 4 << 20
)

// LogWriter buffers the process's log lines and writes them to the
// underlying writer at most every interval, or sooner when 64 KiB wait:
// at thousands of requests a second a write per request log line is a
// system call per request (docs/performance.md, "The fixed cost of a
// request"). Each Write is kept whole and in order, so lines of different
// loggers sharing it (the request log, the decision log) never interleave.
//
// A Write never waits for the underlying writer: the flush swaps the
// buffer out and writes it outside the lock, so a frozen stdout holds the
// flush goroutine, not the requests that log. While a flush is stuck,
// lines gather up to 4 MiB; later ones are dropped, and the next line
// that gets out says how many. Close flushes and makes later writes go
// straight through. A crash loses at most interval of log lines; an
// orderly exit loses none.
type LogWriter struct {
	out io.Writer

	mu      sync.Mutex
	pending []byte
	dropped int
	closed  bool

	// flushMu orders the writes to out: one flush at a time, and no write
	// through after Close before the last flush.
	flushMu sync.Mutex
	spare   []byte

	kick     chan struct{}
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
}

// NewLogWriter returns a LogWriter over out flushing every interval. An
// interval of zero or less buffers nothing: every Write goes straight to
// out, as without a LogWriter.
func NewLogWriter(out io.Writer, interval time.Duration) *LogWriter {
	w := &LogWriter{out: out, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	if interval <= 0 {
		w.closed = true
		close(w.done)
		return w
	}
	go w.flushEvery(interval)
	return w
}

func (w *LogWriter) flushEvery(interval time.Duration) {
	defer close(w.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
		case <-w.kick:
		}
		_ = w.Flush()
	}
}

// Write adds p to what waits for the next flush (whole, after every
// earlier Write), or drops it when 4 MiB already wait; once the writer is
// closed or unbuffered it writes p through. It never reports an error of
// the underlying writer for a buffered line: a flush does.
func (w *LogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		w.flushMu.Lock()
		defer w.flushMu.Unlock()
		return w.out.Write(p)
	}
	defer w.mu.Unlock()
	if len(w.pending)+len(p) > logMaxPending {
		w.dropped++
		return len(p), nil
	}
	w.pending = append(w.pending, p...)
	if len(w.pending) >= logFlushSize {
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
	return len(p), nil
}

// Flush writes what waits, preceded by a line counting the lines dropped
// since the last flush, if any. A failed write loses what it held, and
// the error is returned; later lines are written again.
func (w *LogWriter) Flush() error {
	w.flushMu.Lock()
	defer w.flushMu.Unlock()
	return w.flushLocked(false)
}

// flushLocked takes what waits (and, with closing, closes the writer in
// the same step, so that no write goes through before it) and writes it.
// It is called with flushMu held.
func (w *LogWriter) flushLocked(closing bool) error {
	w.mu.Lock()
	b, dropped := w.pending, w.dropped
	w.pending, w.dropped = w.spare[:0], 0
	if closing {
		w.closed = true
	}
	w.mu.Unlock()
	if dropped > 0 {
		b = fmt.Appendf(b, `{"time":%q,"level":"WARN","msg":"log lines dropped","count":%d}`+"\n",
			time.Now().UTC().Format(time.RFC3339Nano), dropped)
	}
	var err error
	if len(b) > 0 {
		_, err = w.out.Write(b)
	}
	if cap(b) <= 2*logFlushSize {
		w.spare = b[:0] // kept for the next swap; a burst's larger buffer is let go
	} else {
		w.spare = nil
	}
	return err
}

// Close stops the periodic flush and writes what waits; later writes go
// straight through, after it. It may be called more than once.
func (w *LogWriter) Close() error {
	w.mu.Lock()
	closed := w.closed
	w.mu.Unlock()
	if closed {
		return nil
	}
	w.stopOnce.Do(func() { close(w.stop) })
	<-w.done
	w.flushMu.Lock()
	defer w.flushMu.Unlock()
	return w.flushLocked(true)
}
