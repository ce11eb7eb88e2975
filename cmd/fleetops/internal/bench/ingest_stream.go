package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// The reading → notification latency: one Server-Sent Events stream (GET
// /notifications/stream) open during the run with the token of an account
// whose devices the workload drives. Each notification names its reading
// (imei, time); its latency is the time the harness read the event minus
// the time it sent the batch that carried the reading.

// sentLog remembers when each reading the stream can show left the
// harness: only the watched devices' (those of the stream's account),
// which bounds its size.
type sentLog struct {
	watched map[string]bool
	mu      sync.Mutex
	sent    map[readingKey]time.Time
}

// newSentLog logs the readings of the devices watched.
func newSentLog(watched map[string]bool) *sentLog {
	return &sentLog{watched: watched, sent: map[readingKey]time.Time{}}
}

// record notes that the readings of a batch were sent at t.
func (l *sentLog) record(rs []reading, t time.Time) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range rs {
		if l.watched[r.IMEI] {
			l.sent[readingKey{r.IMEI, r.Time.UnixMilli()}] = t
		}
	}
}

// sentAt is when the reading (imei, time) was sent (false: not by this run).
func (l *sentLog) sentAt(k readingKey) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t, ok := l.sent[k]
	return t, ok
}

// errNoStream is the answer of a server without the notification stream.
var errNoStream = errors.New("the server has no GET /notifications/stream")

// streamWatch is an open notification stream and what it has read.
type streamWatch struct {
	log    *sentLog
	cancel context.CancelFunc
	done   chan struct{}

	mu         sync.Mutex
	latencies  []time.Duration
	events     int64 // notification events read
	unmatched  int64 // events whose reading this run did not send
	reconnects int64 // times the server closed the stream and it was reopened
	err        error // why the stream ended early
}

// streamNotification is what the harness reads of a streamed notification.
type streamNotification struct {
	IMEI string    `json:"imei"`
	Time time.Time `json:"time"`
}

// openStream opens GET /notifications/stream with token and reads it in
// the background until stop, reconnecting with Last-Event-ID when the
// server closes it (a slow reader's hint); it returns once the server
// answered the first request 200.
func (h *harness) openStream(ctx context.Context, token string, log *sentLog) (*streamWatch, error) {
	ctx, cancel := context.WithCancel(ctx)
	w := &streamWatch{log: log, cancel: cancel, done: make(chan struct{})}
	body, err := h.streamRequest(ctx, token, "")
	if err != nil {
		cancel()
		return nil, err
	}
	go func() {
		defer close(w.done)
		lastID := ""
		for {
			readErr := readEvents(body, func(id, event, data string) {
				if id != "" {
					lastID = id
				}
				if event == "notification" {
					w.note(data, time.Now())
				}
			})
			body.Close()
			if ctx.Err() != nil {
				return
			}
			w.mu.Lock()
			w.reconnects++
			w.mu.Unlock()
			var err error
			if body, err = h.streamRequest(ctx, token, lastID); err != nil {
				if ctx.Err() == nil {
					w.mu.Lock()
					w.err = fmt.Errorf("notification stream ended (%v) and did not reopen: %v", readErr, err)
					w.mu.Unlock()
				}
				return
			}
		}
	}()
	return w, nil
}

// streamRequest opens the stream, after lastID when not empty, and returns
// its body.
func (h *harness) streamRequest(ctx context.Context, token, lastID string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", h.cfg.BaseURL+base+"/notifications/stream", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	// a client of its own: the harness's has a 30 s timeout per request
	resp, err := (&http.Client{}).Do(req)
	if err != nil {
		return nil, fmt.Errorf("notification stream: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		resp.Body.Close()
		if resp.StatusCode == http.StatusNotFound {
			return nil, fmt.Errorf("%w: %s", errNoStream, b)
		}
		return nil, fmt.Errorf("notification stream: status %d: %s", resp.StatusCode, b)
	}
	return resp.Body, nil
}

// note records one notification event's latency, read at t.
func (w *streamWatch) note(data string, t time.Time) {
	var n streamNotification
	w.mu.Lock()
	defer w.mu.Unlock()
	w.events++
	if err := json.Unmarshal([]byte(data), &n); err != nil {
		w.unmatched++
		return
	}
	sent, ok := w.log.sentAt(readingKey{n.IMEI, n.Time.UnixMilli()})
	if !ok {
		w.unmatched++
		return
	}
	w.latencies = append(w.latencies, t.Sub(sent))
}

// stop waits up to grace for notifications still on their way, closes the
// stream and returns what it read.
func (w *streamWatch) stop(grace time.Duration) streamResult {
	select {
	case <-w.done:
	case <-time.After(grace):
	}
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	r := streamResult{events: w.events, unmatched: w.unmatched, reconnects: w.reconnects, err: w.err}
	r.latency = percentilesOf(w.latencies)
	r.matched = int64(len(w.latencies))
	return r
}

// readEvents reads Server-Sent Events from r and calls on with each event's
// last id (empty when it has none), type (default "message") and data
// (lines joined by "\n"); comments (heartbeats) are skipped. It returns
// when r ends.
func readEvents(r io.Reader, on func(id, event, data string)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	id, event, data, has := "", "", []string(nil), false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if has {
				if event == "" {
					event = "message"
				}
				on(id, event, strings.Join(data, "\n"))
			}
			id, event, data, has = "", "", nil, false
		case strings.HasPrefix(line, ":"):
		default:
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "event":
				event, has = value, true
			case "data":
				data, has = append(data, value), true
			case "id":
				id, has = value, true
			case "retry":
				has = true
			}
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return io.EOF
}
