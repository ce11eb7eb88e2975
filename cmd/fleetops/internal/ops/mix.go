package ops

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// endpoint is one entry of a load mix: its name in the tables, its share,
// the status it should get, and how to build its seq-th request.
type endpoint struct {
	name   string
	weight int
	want   int
	build  func(seq int64) call
}

// mix is a weighted set of endpoints.
type mix struct {
	entries []endpoint
	total   int
}

// newMix returns the mix of entries, which must have positive weights.
func newMix(entries ...endpoint) mix {
	m := mix{entries: entries}
	for _, e := range entries {
		m.total += e.weight
	}
	return m
}

// weights describes the shares ("GET /me 10%, ...").
func (m mix) weights() string {
	parts := make([]string, len(m.entries))
	for i, e := range m.entries {
		parts[i] = fmt.Sprintf("%s %d%%", e.name, e.weight*100/m.total)
	}
	return strings.Join(parts, ", ")
}

// pick returns the endpoint of request seq, in proportion to the weights:
// a multiplicative hash spreads the sequence over the weights evenly
// without a shared random source.
func (m mix) pick(seq int64) endpoint {
	x := int((uint64(seq)*2654435761)>>7) % m.total
	for _, e := range m.entries {
		if x < e.weight {
			return e
		}
		x -= e.weight
	}
	return m.entries[len(m.entries)-1]
}

// loadMix is the endpoint mix of the load run: reads over every route by
// admin, manager, user and subaccount tokens, and passenger creates with
// an Idempotency-Key unique to runID.
func loadMix(t map[string]token, runID string) mix {
	readers := []string{t["admin"].Secret, t["manager"].Secret, t["user"].Secret, t["subaccount"].Secret}
	eventReaders := readers[:3] // the demo subaccount lacks event_notifications (403)
	get := func(path string, toks []string) func(int64) call {
		return func(seq int64) call {
			return call{method: http.MethodGet, path: path, token: toks[seq%int64(len(toks))]}
		}
	}
	return newMix(
		endpoint{"GET /me", 10, 200, get("/api/v2/me", readers)},
		endpoint{"GET /services", 15, 200, get("/api/v2/services?per_page=50", readers)},
		endpoint{"GET /services search+sort", 10, 200, get("/api/v2/services?search=oil&sort=name&order=desc&per_page=20", readers)},
		endpoint{"GET /services/due", 15, 200, get("/api/v2/services/due", readers)},
		endpoint{"GET /reports", 10, 200, get("/api/v2/reports", readers)},
		endpoint{"GET /events", 10, 200, get("/api/v2/events?page=1&per_page=10", eventReaders)},
		endpoint{"GET /events/{id}", 15, 200, func(seq int64) call {
			return call{method: http.MethodGet, path: "/api/v2/events/" + strconv.FormatInt(seq%4+1, 10), token: t["admin"].Secret}
		}},
		endpoint{"POST /passengers", 15, 201, func(seq int64) call {
			key := "load-" + runID + "-" + strconv.FormatInt(seq, 36)
			body, _ := json.Marshal(map[string]any{
				"passenger_name": "Load " + key, "passenger_assign_id": key, "passenger_phone": "+351000000",
			})
			return call{method: http.MethodPost, path: "/api/v2/passengers", token: t["user"].Secret, body: body,
				header: http.Header{"Idempotency-Key": {key}}}
		}},
	)
}
