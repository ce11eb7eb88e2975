package telemetry

import (
	"bufio"
	"io"
	"sync"
	"time"
)

// DefaultLogFlushInterval is how long serve's log lines may wait in a
// LogWriter unless FLEET_LOG_FLUSH_INTERVAL says otherwise.
const DefaultLogFlushInterval = 100 * time.Millisecond

// logBufferSize is the size of a LogWriter's buffer: a write that would
// overflow it flushes it first, so a burst costs one write per 64 KiB.
const logBufferSize = 64 << 10

// LogWriter buffers the process's log lines and writes them to the
// underlying writer at most every interval, or sooner when the buffer
// fills: at thousands of requests a second a write per request log line is
// a system call per request (docs/performance.md, "The fixed cost of a
// request"). Each Write is kept whole and in order, so lines of different
// loggers sharing it (the request log, the decision log) never interleave.
// Close flushes and makes later writes go straight through. A crash loses
// at most interval of log lines; an orderly exit loses none.
type LogWriter struct {
	mu     sync.Mutex
	buf    *bufio.Writer
	out    io.Writer
	closed bool
	stop   chan struct{}
	done   chan struct{}
}

// NewLogWriter returns a LogWriter over out flushing every interval. An
// interval of zero or less buffers nothing: every Write goes straight to
// out, as without a LogWriter.
func NewLogWriter(out io.Writer, interval time.Duration) *LogWriter {
	w := &LogWriter{out: out, stop: make(chan struct{}), done: make(chan struct{})}
	if interval <= 0 {
		w.closed = true
		close(w.done)
		return w
	}
	w.buf = bufio.NewWriterSize(out, logBufferSize)
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
			_ = w.Flush()
		}
	}
}

// Write appends p to the buffer, or writes it through once the writer is
// closed or unbuffered.
func (w *LogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return w.out.Write(p)
	}
	return w.buf.Write(p)
}

// Flush writes what is buffered.
func (w *LogWriter) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	return w.buf.Flush()
}

// Close stops the periodic flush and writes what is buffered; later writes
// go straight through. It may be called more than once.
func (w *LogWriter) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		<-w.done
		return nil
	}
	err := w.buf.Flush()
	w.closed = true
	w.mu.Unlock()
	close(w.stop)
	<-w.done
	return err
}
