package api

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-fuego/fuego"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/tenancy"
)

// The defaults of the notification streams (docs/operations.md, "Streams").
const (
	// DefaultStreamHeartbeat is the time between two heartbeat comments.
	DefaultStreamHeartbeat = 15 * time.Second
	// DefaultStreamsPerAccount is the most open streams of one account,
	// across every replica.
	DefaultStreamsPerAccount = 5
	// DefaultStreamBuffer is the most events a stream holds for a reader
	// that does not keep up; past it the stream is closed with the hint.
	DefaultStreamBuffer = 256
	// DefaultStreamRecheck is the time between two re-checks of an open
	// stream: its token re-authenticated, its decision and scope taken
	// again, its slot's lease renewed, and the notifications after its
	// cursor read (the poll that stands in for a lost LISTEN session).
	DefaultStreamRecheck = time.Second
	// DefaultStreamWriteTimeout bounds one write to a stream's client.
	DefaultStreamWriteTimeout = 30 * time.Second
)

// streamBatch is the most notifications a stream reads in one query.
const streamBatch = 100

// streamRoute is the route of the notification stream: exempt from the
// request timeout and from the tenant's slots of requests in flight
// (guard.go), since it stays open.
const streamRoute = "/notifications/stream"

// headerLastEventID is the header of a resumed stream (Server-Sent Events).
const headerLastEventID = "Last-Event-ID"

// Lines of the stream besides the events.
var (
	frameHeartbeat  = []byte(": heartbeat\n\n")
	frameSlowReader = []byte("retry: 1000\n: slow reader, reconnect with Last-Event-ID\n\n")
)

// registerNotificationStream declares GET /notifications/stream.
func (s *Server) registerNotificationStream(g *fuego.Server) {
	fuego.GetStd(g, streamRoute, s.streamNotifications, routeOptions(authErrors(), []fuego.RouteOption{
		fuego.OptionOperationID("get_notifications_stream"), fuego.OptionTags("Events"),
		fuego.OptionSummary("Stream of new notifications (Server-Sent Events)"),
		fuego.OptionDescription("The notifications the caller may see as they are stored, as Server-Sent Events (text/event-stream): " +
			"each is `id: <notification id>`, `event: notification`, `data: <the notification's JSON, as in GET /notifications>`. " +
			"Without Last-Event-ID the stream starts now (only new notifications); with it, right after that notification, " +
			"which must be one the caller may see and still retained (else 400 INVALID_PARAMETER: reconnect without it). " +
			"Events come in the order their transactions became visible, never skipping one. A comment `: heartbeat` comes every 15 s. " +
			"At most 5 open streams per account (429 RATE_LIMITED, details.scope \"streams\"). The token and the caller's scope are " +
			"re-checked for every event: a revoked token's stream ends within a second, a removed grant stops that device's notifications. " +
			"A reader that does not keep up is sent `retry: 1000` and `: slow reader, reconnect with Last-Event-ID`, then the stream closes. " +
			"Needs the token permission GET /notifications/stream; a subaccount also needs the event_notifications privilege."),
		fuego.OptionHeader(headerLastEventID, "The id of the last notification received: the stream resumes right after it."),
		paramSchema(openapi3.ParameterInHeader, headerLastEventID, func(sc *openapi3.Schema) { sc.WithPattern(`^[1-9][0-9]{0,18}$`).WithMinLength(1).WithMaxLength(19) }),
		respondsEventStream(notificationSchema(), exampleNotification()),
	})...)
}

// streamState is one open stream's re-checked state.
type streamState struct {
	principal tenancy.Principal
	input     policy.Input
}

// streamNotifications answers GET /notifications/stream.
func (s *Server) streamNotifications(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	cl, ok := callFrom(ctx)
	if !ok {
		s.writeError(w, r, errors.New("no authenticated call in context"))
		return
	}
	if r.URL.RawQuery != "" {
		q, perr := parseQuery(r.URL.RawQuery)
		if perr != nil {
			s.writeError(w, r, perr)
			return
		}
		for name := range q {
			s.writeError(w, r, invalidParam(name, "unknown parameter"))
			return
		}
	}
	res := storage.Notifications.Resource()
	scope, err := s.cfg.Policy.Scope(ctx, cl.input, res)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var cursor storage.NotificationCursor
	if values := r.Header.Values(headerLastEventID); len(values) > 0 {
		id, perr := parseLastEventID(values)
		if perr != nil {
			s.writeError(w, r, perr)
			return
		}
		// Through the scope: another tenant's notification is exactly an
		// unknown one.
		cursor, err = s.cfg.Store.NotificationStreamCursor(ctx, scope, id)
		if errors.Is(err, storage.ErrNotFound) {
			err = invalidHeader(headerLastEventID, "not a notification of this stream: unknown, no longer retained or not visible to the caller; reconnect without it")
		}
	} else {
		cursor, err = s.cfg.Store.NotificationStreamStart(ctx)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	lease := max(5*time.Second, 5*s.cfg.StreamRecheck)
	slot, err := s.cfg.Store.OpenStreamSlot(ctx, cl.principal.Account.ID, s.cfg.StreamsPerAccount, lease)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if slot == 0 {
		s.writeError(w, r, newError(CodeRateLimited, "the account has the most open notification streams already",
			map[string]any{"limit": s.cfg.StreamsPerAccount, "scope": "streams"}))
		return
	}
	freed := false
	free := func() {
		if !freed {
			freed = true
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			_ = s.cfg.Store.CloseStreamSlot(fctx, slot)
		}
	}
	defer free()
	st := &streamState{principal: cl.principal, input: cl.input}
	h := w.Header()
	h["Content-Type"] = []string{"text/event-stream"}
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)

	out := make(chan []byte, s.cfg.StreamBuffer)
	final := make(chan []byte, 1)
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	written := make(chan struct{})
	var progress atomic.Int64 // frames the writer has written
	go s.streamWriter(sctx, cancel, w, out, final, written, &progress)
	finish := func(last []byte) {
		if last != nil {
			final <- last
		}
		close(out)
		<-written
	}

	wake, unsubscribe := s.cfg.Wakeups.subscribe()
	defer unsubscribe()
	var invalidated <-chan struct{}
	inv, hasInv := s.cfg.Auth.(interface{ Invalidated() <-chan struct{} })
	if hasInv {
		invalidated = inv.Invalidated()
	}
	recheck := time.NewTicker(s.cfg.StreamRecheck)
	defer recheck.Stop()
	heartbeat := time.NewTicker(s.cfg.StreamHeartbeat)
	defer heartbeat.Stop()
	header := r.Header.Get("Authorization")
	method, route := routeOf(r)

	// send queues a frame unless the buffer is full.
	send := func(frame []byte) bool {
		select {
		case out <- frame:
			return true
		default:
			return false
		}
	}
	// fetch sends the notifications after the cursor that the stream's
	// current scope admits, at most as many as the buffer has room for
	// (a burst never overflows it). A buffer found full again, with no
	// frame written since it was first found full and at least
	// slowReaderAfter later, is a slow reader: ok is false. (Two looks
	// alone are not enough: a wake and a heartbeat may come a millisecond
	// apart, faster than any reader.)
	fullAt, fullSince := int64(-1), time.Time{}
	slowAfter := max(2*s.cfg.StreamRecheck, time.Second)
	fetch := func() (ok bool, err error) {
		for {
			room := cap(out) - len(out)
			if room == 0 {
				done := progress.Load()
				if done != fullAt {
					fullAt, fullSince = done, time.Now()
					return true, nil // read again at the next wake or re-check
				}
				return time.Since(fullSince) < slowAfter, nil
			}
			scope, err := s.cfg.Policy.Scope(sctx, st.input, res)
			if err != nil {
				return false, err
			}
			batch := min(streamBatch, room)
			rows, err := s.cfg.Store.NotificationsAfter(sctx, scope, cursor, batch)
			if err != nil {
				return false, err
			}
			for _, n := range rows {
				frame, err := notificationFrame(n.Notification)
				if err != nil {
					return false, err
				}
				if !send(frame) {
					return false, errors.New("notification stream: the buffer filled beyond its room")
				}
				cursor = n.Cursor
			}
			if len(rows) < batch {
				return true, nil
			}
		}
	}
	// check re-authenticates the token and takes the route's decision
	// again; false when the stream must end.
	check := func() bool {
		p, _, err := s.cfg.Auth.AuthenticateCached(sctx, header)
		if err != nil {
			return false
		}
		in := policy.NewInput(p, method, route, s.cfg.Now().UTC())
		d, err := s.cfg.Policy.Decide(sctx, in)
		if err != nil || !d.Allow {
			return false
		}
		st.principal, st.input = p, in
		return true
	}
	if ok, err := fetch(); err != nil || !ok {
		s.endStream(r, err, ok, finish, free)
		return
	}
	for {
		select {
		case <-sctx.Done():
			finish(nil)
			return
		case <-invalidated:
			invalidated = inv.Invalidated()
			if !check() {
				finish(nil)
				return
			}
		case <-heartbeat.C:
			send(frameHeartbeat) // none while the buffer is full: events are pending
		case <-recheck.C:
			if !check() {
				finish(nil)
				return
			}
			renewed, err := s.cfg.Store.RenewStreamSlot(sctx, slot, lease)
			if err != nil || !renewed {
				finish(nil)
				return
			}
		case <-wake:
		}
		if ok, err := fetch(); err != nil || !ok {
			s.endStream(r, err, ok, finish, free)
			return
		}
	}
}

// endStream ends a stream after a failed or refused read: an error is
// logged and the stream closed; a full buffer (a slow reader) frees the
// slot at once and closes the stream after the buffered events, the
// retry and the hint.
func (s *Server) endStream(r *http.Request, err error, _ bool, finish func([]byte), free func()) {
	if err != nil {
		if r.Context().Err() == nil {
			s.log.WarnContext(r.Context(), "notification stream ended", "error", err.Error())
		}
		finish(nil)
		return
	}
	free()
	finish(frameSlowReader)
}

// streamWriter writes the stream's frames to w as they come, each written
// and flushed within the write timeout (extended per write: the server's
// WriteTimeout does not cut a stream), counting them in progress, then the
// final frame when out is closed. A failed write cancels the stream.
func (s *Server) streamWriter(ctx context.Context, cancel context.CancelFunc, w http.ResponseWriter, out <-chan []byte, final <-chan []byte, done chan<- struct{},
	progress *atomic.Int64) {
	defer close(done)
	rc := http.NewResponseController(w)
	write := func(b []byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(s.cfg.StreamWriteTimeout)) // ErrNotSupported: nothing to extend
		if _, err := w.Write(b); err != nil {
			cancel()
			return false
		}
		if err := rc.Flush(); err != nil {
			cancel()
			return false
		}
		return true
	}
	// The stream outlives the server's read timeout: a read deadline
	// reached would end the request's context (the server's background
	// read of the connection). A gone client shows as a failed write.
	_ = rc.SetReadDeadline(time.Time{})
	// The headers now, so that the client sees the stream open.
	_ = rc.SetWriteDeadline(time.Now().Add(s.cfg.StreamWriteTimeout))
	if err := rc.Flush(); err != nil {
		cancel()
	}
	for b := range out {
		if ctx.Err() != nil {
			continue // drain: the stream is over
		}
		write(b)
		progress.Add(1)
	}
	select {
	case b := <-final:
		if ctx.Err() == nil {
			write(b)
		}
	default:
	}
}

// notificationFrame is the event of one notification.
func notificationFrame(n storage.Notification) ([]byte, error) {
	var data bytes.Buffer
	if err := encodeJSON(&data, n); err != nil {
		return nil, err
	}
	b := make([]byte, 0, data.Len()+48)
	b = append(b, "id: "...)
	b = strconv.AppendInt(b, n.ID, 10)
	b = append(b, "\nevent: notification\ndata: "...)
	b = append(b, bytes.TrimRight(data.Bytes(), "\n")...)
	return append(b, "\n\n"...), nil
}

// parseLastEventID parses the Last-Event-ID header: one notification id.
func parseLastEventID(values []string) (int64, error) {
	if len(values) != 1 {
		return 0, invalidHeader(headerLastEventID, "given more than once")
	}
	id, err := strconv.ParseInt(values[0], 10, 64)
	if err != nil || id < 1 || strconv.FormatInt(id, 10) != values[0] {
		return 0, invalidHeader(headerLastEventID, "must be a notification id (decimal digits, from 1)")
	}
	return id, nil
}

// invalidHeader is the 400 INVALID_PARAMETER error naming the header.
func invalidHeader(name, reason string) *Error {
	return invalidParam(name, reason)
}

// orDefaultDuration returns d, or def when d is not positive.
func orDefaultDuration(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
