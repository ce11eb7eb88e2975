package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/api"
	"github.com/fleetapi/fleetapi/storage/authsync"
	"github.com/fleetapi/fleetapi/storage/storagetest"
)

// streamWait bounds every wait of the stream tests: generous, since the
// machine is shared; the tests assert on what arrives, never on how soon
// (but the revocation's 1 s, measured and checked against the answer).
const streamWait = 60 * time.Second

// sseEvent is one thing read from a stream: an event (id, event, data), a
// comment or a retry line.
type sseEvent struct {
	id, event, data, comment, retry string
}

// sseStream is an open GET /notifications/stream: what it reads arrives
// on events; ended is closed when the server ends the stream (EOF), at
// endedAt.
type sseStream struct {
	resp    *http.Response
	events  chan sseEvent
	ended   chan struct{}
	endedAt atomic.Int64 // UnixNano
	cancel  context.CancelFunc
}

// openStream opens the stream at base with the token secret and headers
// (name, value pairs). A 200 starts reading (unless noRead); any other
// status is returned with its body read, the stream nil.
func openStream(t *testing.T, base, secret string, noRead bool, headers ...string) (*sseStream, int, []byte) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v2/notifications/stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+secret)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("open the stream: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		defer cancel()
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return nil, resp.StatusCode, body
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	s := &sseStream{resp: resp, events: make(chan sseEvent, 1<<16), ended: make(chan struct{}), cancel: cancel}
	t.Cleanup(s.close)
	if !noRead {
		go s.read()
	}
	return s, resp.StatusCode, nil
}

// read parses the stream until it ends.
func (s *sseStream) read() {
	defer func() {
		s.endedAt.Store(time.Now().UnixNano())
		close(s.ended)
	}()
	r := bufio.NewReader(s.resp.Body)
	var ev sseEvent
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if ev.data != "" || ev.id != "" {
				s.events <- ev
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, ":"):
			s.events <- sseEvent{comment: strings.TrimSpace(line[1:])}
		case strings.HasPrefix(line, "id: "):
			ev.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			ev.event = line[7:]
		case strings.HasPrefix(line, "data: "):
			ev.data = line[6:]
		case strings.HasPrefix(line, "retry: "):
			s.events <- sseEvent{retry: line[7:]}
		}
	}
}

func (s *sseStream) close() {
	s.cancel()
	s.resp.Body.Close()
}

// next returns the next event that is not a comment or a retry line.
func (s *sseStream) next(t *testing.T) sseEvent {
	t.Helper()
	deadline := time.After(streamWait)
	for {
		select {
		case ev := <-s.events:
			if ev.comment == "" && ev.retry == "" {
				return ev
			}
		case <-s.ended:
			select {
			case ev := <-s.events:
				if ev.comment == "" && ev.retry == "" {
					return ev
				}
				continue
			default:
			}
			t.Fatal("the stream ended before the next event")
		case <-deadline:
			t.Fatal("no event in time")
		}
	}
}

// waitComment waits for a comment line with the text.
func (s *sseStream) waitComment(t *testing.T, text string) {
	t.Helper()
	deadline := time.After(streamWait)
	for {
		select {
		case ev := <-s.events:
			if ev.comment == text {
				return
			}
		case <-deadline:
			t.Fatalf("no %q comment in time", text)
		}
	}
}

// waitEnd waits for the server to end the stream.
func (s *sseStream) waitEnd(t *testing.T) {
	t.Helper()
	select {
	case <-s.ended:
	case <-time.After(streamWait):
		t.Fatal("the stream did not end in time")
	}
}

// startWakes runs a notification listener feeding wakeups on db until the
// test ends, and waits until it listens.
func startWakes(t *testing.T, db *storagetest.DB, wakeups *api.Wakeups) {
	t.Helper()
	states := make(chan bool, 16)
	l := authsync.NewWakeListener(db.DirectURL, wakeups.Wake, authsync.WakeOptions{OnState: func(c bool) { states <- c }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = l.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	select {
	case <-states:
	case <-time.After(streamWait):
		t.Fatal("the notification listener never listened")
	}
}

// streamConfig is the streams' test configuration: heartbeats and
// re-checks often, so that the tests see them without waiting long.
func streamConfig(wakeups *api.Wakeups, buffer int) func(*api.Config) {
	return func(c *api.Config) {
		c.Wakeups = wakeups
		c.StreamHeartbeat = 50 * time.Millisecond
		c.StreamRecheck = 50 * time.Millisecond
		c.StreamBuffer = buffer
	}
}

// newStreamServer is the demo data's API over a real HTTP server, with a
// notification listener.
func newStreamServer(t *testing.T, buffer int) (*testAPI, *httptest.Server) {
	t.Helper()
	wakeups := api.NewWakeups()
	a := newTestAPIWith(t, streamConfig(wakeups, buffer))
	startWakes(t, a.db, wakeups)
	srv := httptest.NewServer(a.handler)
	t.Cleanup(srv.Close)
	return a, srv
}

// wantNotification checks that ev is the notification id, with the JSON
// GET /notifications/{id} answers for it.
func wantNotification(t *testing.T, a *testAPI, secret string, ev sseEvent, id int64) {
	t.Helper()
	if ev.id != fmt.Sprint(id) || ev.event != "notification" {
		t.Fatalf("event id %q event %q, want id %d event notification (data %s)", ev.id, ev.event, id, ev.data)
	}
	one := a.get(fmt.Sprintf("/api/v2/notifications/%d", id), secret)
	want, _ := json.Marshal(one.body["data"])
	var got any
	if err := json.Unmarshal([]byte(ev.data), &got); err != nil {
		t.Fatalf("data is not JSON: %v: %s", err, ev.data)
	}
	gotJSON, _ := json.Marshal(got)
	if string(gotJSON) != string(want) {
		t.Fatalf("data %s, want the list item %s", gotJSON, want)
	}
}

// TestNotificationStreamNew: a stream without Last-Event-ID starts now:
// it receives the caller's notifications stored after it opened, not
// another tenant's, and sees the heartbeat comment.
func TestNotificationStreamNew(t *testing.T) {
	t.Parallel()
	a, srv := newStreamServer(t, 0)
	acme := demoToken(t, "acme-all")
	s, status, body := openStream(t, srv.URL, acme, false)
	if s == nil {
		t.Fatalf("open: %d %s", status, body)
	}
	s.waitComment(t, "heartbeat")
	insertNotification(t, a.db, globexReefr, "sensor", "globex's")
	id := insertNotification(t, a.db, acmeVan, "zone_in", "acme's")
	wantNotification(t, a, acme, s.next(t), id) // the demo rows before it and globex's never came
}

// TestNotificationStreamResume: with Last-Event-ID the stream resumes
// right after that notification and receives exactly the ones after it
// in the order their transactions became visible: a row committed later
// with a smaller id (two concurrent transactions) is not skipped. Another
// tenant's id answers exactly like an unknown one: 400 INVALID_PARAMETER.
func TestNotificationStreamResume(t *testing.T) {
	t.Parallel()
	a, srv := newStreamServer(t, 0)
	acme := demoToken(t, "acme-all")
	ctx := context.Background()
	last := insertNotification(t, a.db, acmeTruck, "overspeed", "received before")
	// tx1 stores X first (smaller id and xid) and commits last; tx2
	// stores Y and commits at once.
	tx1, err := a.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx1.Rollback()
	var x, y int64
	insert := `INSERT INTO notifications (account_id, type, imei, object_id, time, message)
		SELECT o.account_id, 'overspeed', o.imei, o.id, now(), ? FROM objects o WHERE o.imei = ? RETURNING id`
	if err := tx1.NewRaw(insert, "X", acmeTruck).Scan(ctx, &x); err != nil {
		t.Fatal(err)
	}
	if err := a.db.NewRaw(insert, "Y", acmeVan).Scan(ctx, &y); err != nil {
		t.Fatal(err)
	}
	if x >= y {
		t.Fatalf("ids X %d, Y %d: want X < Y", x, y)
	}
	s, status, body := openStream(t, srv.URL, acme, false, "Last-Event-ID", fmt.Sprint(last))
	if s == nil {
		t.Fatalf("open with Last-Event-ID: %d %s", status, body)
	}
	// Y is committed, X not: several re-checks pass (heartbeats) and Y
	// must not come before X.
	for range 3 {
		s.waitComment(t, "heartbeat")
	}
	select {
	case ev := <-s.events:
		if ev.comment == "" {
			t.Fatalf("an event while X is uncommitted: %+v", ev)
		}
	default:
	}
	if err := tx1.Commit(); err != nil {
		t.Fatal(err)
	}
	wantNotification(t, a, acme, s.next(t), x)
	wantNotification(t, a, acme, s.next(t), y)

	// another tenant's id and an unknown id: the same 400
	other := insertNotification(t, a.db, globexReefr, "sensor", "globex's")
	_, st1, b1 := openStream(t, srv.URL, acme, false, "Last-Event-ID", fmt.Sprint(other))
	_, st2, b2 := openStream(t, srv.URL, acme, false, "Last-Event-ID", "999999999")
	if st1 != http.StatusBadRequest || st2 != http.StatusBadRequest {
		t.Fatalf("another tenant's id: %d %s; unknown id: %d %s", st1, b1, st2, b2)
	}
	var e1, e2 map[string]any
	_ = json.Unmarshal(b1, &e1)
	_ = json.Unmarshal(b2, &e2)
	j1, _ := json.Marshal(e1["error"])
	j2, _ := json.Marshal(e2["error"])
	if string(j1) != string(j2) || !strings.Contains(string(j1), "INVALID_PARAMETER") {
		t.Fatalf("another tenant's id answers %s, an unknown one %s", j1, j2)
	}
	if _, st, b := openStream(t, srv.URL, acme, false, "Last-Event-ID", "abc"); st != http.StatusBadRequest {
		t.Fatalf("Last-Event-ID abc: %d %s", st, b)
	}
}

// TestNotificationStreamLimit: the sixth open stream of an account is 429
// RATE_LIMITED (details.scope "streams"); closing one frees its slot.
func TestNotificationStreamLimit(t *testing.T) {
	t.Parallel()
	_, srv := newStreamServer(t, 0)
	acme := demoToken(t, "acme-all")
	var open []*sseStream
	for i := range api.DefaultStreamsPerAccount {
		s, status, body := openStream(t, srv.URL, acme, false)
		if s == nil {
			t.Fatalf("stream %d: %d %s", i+1, status, body)
		}
		open = append(open, s)
	}
	_, status, body := openStream(t, srv.URL, acme, false)
	if status != http.StatusTooManyRequests {
		t.Fatalf("sixth stream: %d %s", status, body)
	}
	var env struct {
		Error struct {
			Code    string         `json:"code"`
			Details map[string]any `json:"details"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &env); err != nil || env.Error.Code != "RATE_LIMITED" || env.Error.Details["scope"] != "streams" {
		t.Fatalf("sixth stream's answer: %s", body)
	}
	// another account is not limited by acme's streams
	if s, status, body := openStream(t, srv.URL, demoToken(t, "globex-read"), false); s == nil {
		t.Fatalf("globex's stream: %d %s", status, body)
	}
	open[0].close()
	deadline := time.Now().Add(streamWait)
	for {
		s, status, body := openStream(t, srv.URL, acme, false)
		if s != nil {
			break
		}
		if status != http.StatusTooManyRequests || time.Now().After(deadline) {
			t.Fatalf("after closing one: %d %s", status, body)
		}
		time.Sleep(20 * time.Millisecond) // polling for the server to see the closed connection
	}
}

// TestNotificationStreamSlowReader: a reader that never reads fills its
// stream's buffer; the stream frees its slot and, once the reader reads,
// ends with the retry and the hint, while the inserts never waited.
func TestNotificationStreamSlowReader(t *testing.T) {
	t.Parallel()
	a, srv := newStreamServer(t, 4)
	acme := demoToken(t, "acme-all")
	s, status, body := openStream(t, srv.URL, acme, true)
	if s == nil {
		t.Fatalf("open: %d %s", status, body)
	}
	ctx := context.Background()
	slots := func() int {
		var n int
		if err := a.db.NewRaw(`SELECT count(*) FROM notification_streams s JOIN accounts a ON a.id = s.account_id WHERE a.username = 'acme'`).Scan(ctx, &n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if slots() != 1 {
		t.Fatal("the stream holds no slot")
	}
	// Inserts of 64 KiB messages, 20 at a time, until the server gives the
	// slow stream up (its slot freed): each insert returns on its own.
	inserted := 0
	deadline := time.Now().Add(streamWait)
	for slots() != 0 {
		if time.Now().After(deadline) || inserted > 20000 {
			t.Fatalf("the slow stream was never closed (%d notifications inserted)", inserted)
		}
		if _, err := a.db.ExecContext(ctx, `INSERT INTO notifications (account_id, type, imei, object_id, time, message)
			SELECT o.account_id, 'slow', o.imei, o.id, now(), repeat(md5(g::text), 2048) FROM objects o, generate_series(1, 20) g
			WHERE o.imei = ?`, acmeVan); err != nil {
			t.Fatal(err)
		}
		inserted += 20
	}
	t.Logf("the slow stream was given up after %d notifications of 64 KiB", inserted)
	go s.read()
	// The reader reads everything the server wrote until it ended the
	// stream: the buffered events, then the retry and the hint, last.
	s.waitEnd(t)
	var tail []sseEvent
	for len(s.events) > 0 {
		ev := <-s.events
		if ev.comment != "heartbeat" {
			tail = append(tail, ev)
		}
	}
	if n := len(tail); n < 2 || tail[n-2].retry != "1000" || tail[n-1].comment != "slow reader, reconnect with Last-Event-ID" {
		t.Fatalf("the stream's last lines %+v, want retry: 1000 then the hint", tail[max(0, len(tail)-3):])
	}
	t.Logf("the slow reader got %d events before the hint", len(tail)-2)
}

// newStreamReplica is a cachedReplica (its own pool, policy engine,
// authentication cache and its listener) serving notification streams,
// with its own notification listener.
func newStreamReplica(t *testing.T, db *storagetest.DB) *cachedReplica {
	t.Helper()
	wakeups := api.NewWakeups()
	r := newCachedReplica(t, db, replicaOptions{configure: streamConfig(wakeups, 0)})
	startWakes(t, db, wakeups)
	return r
}

// TestNotificationStreamRevocation: a token revoked through the API on
// replica A (DELETE /tokens/{id}) ends its stream on replica B, which
// shares the database: B's authentication cache applies the invalidation
// and wakes the stream, which re-authenticates at once.
func TestNotificationStreamRevocation(t *testing.T) {
	t.Parallel()
	db := storagetest.New(t)
	a := newStreamReplica(t, db)
	b := newStreamReplica(t, db)
	w := newWorld(t, db, "strev")
	victim := w.secrets["u"]
	s, status, body := openStream(t, b.http.URL, victim, false)
	if s == nil {
		t.Fatalf("open on B: %d %s", status, body)
	}
	s.waitComment(t, "heartbeat")
	if got := a.do(http.MethodDelete, fmt.Sprintf("/tokens/%d", w.ids["tok:u"]), w.secrets["m"], nil); got.status != http.StatusNoContent {
		t.Fatalf("DELETE /tokens: %d %s", got.status, got.code)
	}
	answered := time.Now()
	// The barrier is the stream's end itself (a generous deadline); the
	// contract (within 1 s) is checked against the measured time from
	// the revocation's answer to the end the client saw.
	s.waitEnd(t)
	elapsed := time.Duration(s.endedAt.Load() - answered.UnixNano())
	t.Logf("the revoked token's stream on replica B ended %v after the revocation's answer", elapsed)
	if elapsed > time.Second {
		t.Fatalf("the stream ended %v after the revocation's answer, want within 1 s", elapsed)
	}
}

// TestNotificationStreamGrantRemoved: a subaccount's stream carries the
// notifications of its granted devices; once a grant is removed, that
// device's notifications stop while the other device's keep coming.
func TestNotificationStreamGrantRemoved(t *testing.T) {
	t.Parallel()
	db := storagetest.New(t)
	r := newStreamReplica(t, db)
	w := newWorld(t, db, "stgrant")
	var first string
	if err := db.NewRaw(`SELECT imei FROM object_grants WHERE subaccount_id = ?`, w.ids["s"]).Scan(context.Background(), &first); err != nil {
		t.Fatal(err)
	}
	second := fmt.Sprintf("%015d", replicaSeq.Add(1)*1000+999)
	w.exec(t, db, fmt.Sprintf(`INSERT INTO objects (imei, account_id, name) VALUES ('%s', {u}, 'Van');
		INSERT INTO object_grants (subaccount_id, imei) VALUES ({s}, '%s')`, second, second))
	s, status, body := openStream(t, r.http.URL, w.secrets["s"], false)
	if s == nil {
		t.Fatalf("open: %d %s", status, body)
	}
	n1 := insertNotification(t, db, first, "overspeed", "first device, granted")
	if ev := s.next(t); ev.id != fmt.Sprint(n1) {
		t.Fatalf("event %+v, want notification %d", ev, n1)
	}
	w.exec(t, db, fmt.Sprintf(`DELETE FROM object_grants WHERE subaccount_id = {s} AND imei = '%s'`, first))
	// Stored in this order, each committed: the first device's would
	// come first were it still in the scope.
	insertNotification(t, db, first, "overspeed", "first device, grant removed")
	n3 := insertNotification(t, db, second, "overspeed", "second device, granted")
	if ev := s.next(t); ev.id != fmt.Sprint(n3) {
		t.Fatalf("event %+v, want notification %d of the device still granted", ev, n3)
	}
}

// TestNotificationStreamBurst: a reader that keeps up receives a burst
// far larger than its stream's buffer (one statement inserting 200
// notifications), in order, and is not taken for a slow reader.
func TestNotificationStreamBurst(t *testing.T) {
	t.Parallel()
	a, srv := newStreamServer(t, 4)
	acme := demoToken(t, "acme-all")
	s, status, body := openStream(t, srv.URL, acme, false)
	if s == nil {
		t.Fatalf("open: %d %s", status, body)
	}
	var ids []int64
	if err := a.db.NewRaw(`INSERT INTO notifications (account_id, type, imei, object_id, time, message)
		SELECT o.account_id, 'burst', o.imei, o.id, now(), 'burst ' || g FROM objects o, generate_series(1, 200) g
		WHERE o.imei = ? RETURNING id`, acmeVan).Scan(context.Background(), &ids); err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		if ev := s.next(t); ev.id != fmt.Sprint(id) {
			t.Fatalf("event %d: %+v, want notification %d", i, ev, id)
		}
	}
}

// TestNotificationStreamOutlivesTimeouts: a stream is exempt from the
// request timeout, from the server's read and write timeouts (it extends
// its own deadlines) and from the tenant's slots of requests in flight:
// with all four far shorter than the stream's life (counted in heartbeats
// of 50 ms: twenty of them outlast every bound below), it keeps going,
// and the tenant's other requests still get their slot.
func TestNotificationStreamOutlivesTimeouts(t *testing.T) {
	t.Parallel()
	wakeups := api.NewWakeups()
	a := newTestAPIWith(t, func(c *api.Config) {
		streamConfig(wakeups, 0)(c)
		c.RequestTimeout = 100 * time.Millisecond
		c.TenantMaxInFlight = 1
	})
	srv := httptest.NewUnstartedServer(a.handler)
	srv.Config.ReadTimeout = 200 * time.Millisecond
	srv.Config.WriteTimeout = 200 * time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)
	acme := demoToken(t, "acme-all")
	s1, status, body := openStream(t, srv.URL, acme, false)
	if s1 == nil {
		t.Fatalf("first stream: %d %s", status, body)
	}
	s2, status, body := openStream(t, srv.URL, acme, false)
	if s2 == nil {
		t.Fatalf("second stream with one slot in flight: %d %s", status, body)
	}
	for range 20 {
		s1.waitComment(t, "heartbeat")
	}
	if r := a.get("/api/v2/notifications", acme); r.status != http.StatusOK {
		t.Fatalf("a list beside two streams: %d %s", r.status, r.raw)
	}
	id := insertNotification(t, a.db, acmeTruck, "overspeed", "after the timeouts")
	if ev := s1.next(t); ev.id != fmt.Sprint(id) {
		t.Fatalf("event %+v, want %d", ev, id)
	}
}

// TestNotificationStreamLastEventIDBounds: the header Last-Event-ID at and
// past the bounds of its schema (decimal digits from 1, 1 to 19
// characters), over a real connection (TestSchemaBoundsAccepted cannot hold
// a stream under the recorder): an id of the caller's opens the stream;
// the bounds the schema allows but that name no notification of the caller
// (1, the largest bigint) and every value it refuses answer 400
// INVALID_PARAMETER naming the header, never a 500.
func TestNotificationStreamLastEventIDBounds(t *testing.T) {
	t.Parallel()
	a, srv := newStreamServer(t, 0)
	acme := demoToken(t, "acme-all")
	own := insertNotification(t, a.db, acmeTruck, "overspeed", "bounds")
	if s, status, body := openStream(t, srv.URL, acme, false, "Last-Event-ID", fmt.Sprint(own)); s == nil {
		t.Fatalf("an id of the caller's: %d %s", status, body)
	}
	var foreign int64
	if err := a.db.NewRaw("SELECT min(id) FROM notifications WHERE account_id <> (SELECT id FROM accounts WHERE username = 'acme')").
		Scan(context.Background(), &foreign); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{fmt.Sprint(foreign), "9223372036854775807", "0", "01", "-1", "12345678901234567890", "1e3", "x"} {
		s, status, body := openStream(t, srv.URL, acme, false, "Last-Event-ID", v)
		if s != nil {
			t.Fatalf("Last-Event-ID %q opened a stream", v)
		}
		var env struct {
			Error struct {
				Code    string         `json:"code"`
				Details map[string]any `json:"details"`
			} `json:"error"`
		}
		if err := json.Unmarshal(body, &env); err != nil || status != http.StatusBadRequest || env.Error.Code != "INVALID_PARAMETER" {
			t.Fatalf("Last-Event-ID %q: %d %s", v, status, body)
		}
	}
}
