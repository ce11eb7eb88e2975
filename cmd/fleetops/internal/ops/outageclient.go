package ops

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fleetapi/fleetapi/cmd/fleetops/internal/stats"
)

// note records the 503 figures of res.
func (o *outage) note(res result) {
	if res.Err != nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	now := o.since()
	switch {
	case res.Status == http.StatusServiceUnavailable:
		o.lat503 = append(o.lat503, res.Latency)
		if o.first503 == 0 {
			o.first503 = now
		}
		o.last503 = now
		ra := res.header.Get("Retry-After")
		if n, err := strconv.Atoi(ra); err != nil || n < 1 {
			o.noRetryAfter++
		}
		if o.retryAfter == nil {
			o.retryAfter = map[string]int{}
		}
		o.retryAfter[ra]++
	case res.Status < 300 && o.startedAt != 0 && o.firstOKAfterRestart == 0:
		o.firstOKAfterRestart = now
	}
}

// read sends the i-th read: the reads go round four list routes.
func (o *outage) read(ctx context.Context, i int64) {
	paths := [...]string{"/api/v2/services?per_page=50", "/api/v2/me", "/api/v2/services/due", "/api/v2/events"}
	path := paths[i%int64(len(paths))]
	res := send(ctx, o.client, o.r.base(), call{method: http.MethodGet, path: path, token: o.tok.Secret})
	name := "GET " + strings.TrimPrefix(strings.SplitN(path, "?", 2)[0], "/api/v2")
	o.rec.Add(name, res.Outcome, res.ok(http.StatusOK, http.StatusServiceUnavailable))
	o.note(res)
}

// maxPending bounds the creates waiting for a retry.
const maxPending = 500

// create makes one attempt of a passenger create with an Idempotency-Key:
// a create due for a retry when there is one, else a new one (while fewer
// than maxPending wait). A create answered 503 or lost to a transport error
// waits Retry-After (at most a second) and is sent again, same key and
// body, until it is created; what is still waiting when the run ends is
// retried by report.
func (o *outage) create(ctx context.Context, i int64) {
	o.mu.Lock()
	var key string
	now := time.Now()
	for j, p := range o.pending {
		if !p.at.After(now) {
			key = p.key
			o.pending = slices.Delete(o.pending, j, j+1)
			break
		}
	}
	if key == "" && len(o.pending) >= maxPending {
		o.mu.Unlock()
		select { // every create waits for a retry: pause like a client would
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
		return
	}
	if key == "" {
		key = "outage-" + o.runID + "-" + strconv.FormatInt(i, 10)
		body, _ := json.Marshal(map[string]any{"passenger_name": "Outage " + key, "passenger_assign_id": key})
		o.keys[key] = &keyState{body: body, failures: map[string]int{}}
	}
	st := o.keys[key]
	o.mu.Unlock()

	res := o.post(ctx, key, st.body)
	o.rec.Add("POST /passengers", res.Outcome, res.ok(http.StatusCreated, http.StatusServiceUnavailable))
	o.note(res)
	o.mu.Lock()
	defer o.mu.Unlock()
	st.attempts++
	if res.Err == nil && res.Status == http.StatusCreated {
		st.created, st.createdOnTry, st.id = true, st.attempts, passengerID(res.body)
		return
	}
	reason := stats.ErrKind(res.Err)
	if res.Err == nil {
		reason = strconv.Itoa(res.Status) + " " + res.Code
	}
	st.failures[reason]++
	if res.Err == nil && res.Status < 500 {
		return // refused for good: counted as unexpected
	}
	wait := time.Second
	if ra, err := strconv.Atoi(res.header.Get("Retry-After")); err == nil && time.Duration(ra)*time.Second < wait {
		wait = time.Duration(ra) * time.Second
	}
	o.pending = append(o.pending, pendingCreate{key: key, at: time.Now().Add(wait)})
}

// post sends a passenger create with its Idempotency-Key.
func (o *outage) post(ctx context.Context, key string, body []byte) result {
	return send(ctx, o.client, o.r.base(), call{method: http.MethodPost, path: "/api/v2/passengers", token: o.tok.Secret,
		body: body, header: http.Header{"Idempotency-Key": {key}}})
}

// passengerID reads data.passenger_id of a create's answer (0 when none).
func passengerID(body []byte) int64 {
	var env struct {
		Data struct {
			PassengerID int64 `json:"passenger_id"`
		} `json:"data"`
	}
	_ = json.Unmarshal(body, &env)
	return env.Data.PassengerID
}
