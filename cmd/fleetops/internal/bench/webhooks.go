package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/fleetapi/fleetapi/cmd/fleetops/internal/procfs"
	"github.com/fleetapi/fleetapi/cmd/fleetops/internal/stats"
	"github.com/fleetapi/fleetapi/webhook"
)

// The webhooks workload (`fleetops bench --workload webhooks`, docs/
// performance.md "Webhooks (issue 37)"): the manager's webhooks, created
// through POST /webhooks, point at the in-process receiver
// (webhooks_receiver.go); the drive (webhooks_drive.go) makes
// notifications at --webhook-rate; each is delivered to every endpoint.
// Three modes:
//   - rate: --webhook-endpoints endpoints, all answering: notification →
//     delivery latency (the notification's created_at in the body against
//     the receive time), deliveries/s, the server's CPU per delivery;
//   - dead: --webhook-wide endpoints at the same deliveries/s, first all
//     answering, then with --webhook-dead of them never answering (held
//     until the sender's timeout): the healthy endpoints' latency beside
//     the dead ones;
//   - backlog: the receiver down (refusing) while --webhook-backlog
//     deliveries are queued (with SQL: notifications inserted in one
//     statement and one retry-due delivery per endpoint each, as a sender
//     leaves them after a refused first attempt), then up: the drain rate,
//     and the latency of fresh notifications driven during the drain.
// The server must allow the receiver: FLEET_WEBHOOK_ALLOW_HTTP=true and
// FLEET_WEBHOOK_ALLOW_NETS=127.0.0.0/8.

// whResult is one measured run of the webhooks workload.
type whResult struct {
	name                string
	endpoints, dead     int
	rate                float64 // notifications/s driven
	drive               driveResult
	notifications       int64 // created by the drive's readings
	expected            int64 // deliveries due to answering endpoints
	delivered           int64 // distinct (endpoint, webhook-id) received
	duplicates, invalid int64
	elapsed             time.Duration // first post to last delivery
	latency             stats.Percentiles
	serverCPU           time.Duration // per delivery
	backlog, left       int64         // queued; still pending at the end
	drain               time.Duration
	drained             bool
	load                string
	note                string
}

// deliveriesPerSecond is the delivered count over the run's time.
func (r whResult) deliveriesPerSecond() float64 { return stats.Rate(r.delivered, r.elapsed) }

// endpointSet is the webhooks of one run, by receiver endpoint.
type endpointSet struct {
	ids     []int64
	secrets map[int][][]byte
}

// apiCall sends one request with token and returns the status and body.
func (h *harness) apiCall(ctx context.Context, token, method, path string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, h.cfg.BaseURL+base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// createEndpoints creates n webhooks of the manager (types overspeed) for
// the receiver's endpoints 0..n-1.
func (h *harness) createEndpoints(ctx context.Context, token string, recv *receiver, n int) (endpointSet, error) {
	set := endpointSet{secrets: map[int][][]byte{}}
	for i := range n {
		status, b, err := h.apiCall(ctx, token, "POST", "/webhooks", map[string]any{
			"url": recv.url(i), "description": fmt.Sprintf("fleetops bench endpoint %d", i), "types": []string{"overspeed"}, "active": true})
		if err == nil && status != http.StatusCreated {
			err = fmt.Errorf("status %d: %.300s", status, b)
		}
		if err != nil {
			return set, fmt.Errorf("webhooks: POST /webhooks (the server needs FLEET_WEBHOOK_ALLOW_HTTP=true and FLEET_WEBHOOK_ALLOW_NETS=127.0.0.0/8): %w", err)
		}
		var created struct {
			Data struct {
				ID     int64  `json:"id"`
				Secret string `json:"secret"`
			} `json:"data"`
		}
		if err := json.Unmarshal(b, &created); err != nil {
			return set, fmt.Errorf("webhooks: POST /webhooks answer: %w", err)
		}
		key, err := webhook.ParseSecret(created.Data.Secret)
		if err != nil {
			return set, fmt.Errorf("webhooks: POST /webhooks secret: %w", err)
		}
		set.ids = append(set.ids, created.Data.ID)
		set.secrets[i] = [][]byte{key}
	}
	return set, nil
}

// deleteEndpoints deletes the set's webhooks (their queued deliveries go
// with them). A DELETE waits for a send in flight to the endpoint, which
// a dead endpoint holds for the sender's whole timeout (15 s), longer than
// the server's request timeout (10 s): a 503 is asked again, for at most a
// minute.
func (h *harness) deleteEndpoints(ctx context.Context, token string, set endpointSet) error {
	// Deactivated first: the sender claims no more of their deliveries, so
	// the DELETEs do not queue behind a steady stream of sends (measured:
	// a DELETE of an endpoint with deliveries flowing answered 503 for
	// over a minute).
	for _, id := range set.ids {
		status, b, err := h.apiCall(ctx, token, "PATCH", fmt.Sprintf("/webhooks/%d", id), map[string]any{"active": false})
		if err == nil && status/100 != 2 {
			err = fmt.Errorf("status %d: %.200s", status, b)
		}
		if err != nil {
			return fmt.Errorf("webhooks: PATCH /webhooks/%d: %w", id, err)
		}
	}
	for _, id := range set.ids {
		for deadline := time.Now().Add(time.Minute); ; {
			status, b, err := h.apiCall(ctx, token, "DELETE", fmt.Sprintf("/webhooks/%d", id), nil)
			if err == nil && status == http.StatusServiceUnavailable && time.Now().Before(deadline) {
				continue
			}
			if err == nil && status/100 != 2 {
				err = fmt.Errorf("status %d: %.200s", status, b)
			}
			if err != nil {
				return fmt.Errorf("webhooks: DELETE /webhooks/%d: %w", id, err)
			}
			break
		}
	}
	return nil
}

// tally folds arrivals into a result: distinct deliveries of answering
// endpoints, duplicates, bad signatures and the latency of those whose
// notification is after fromID (0: all), created by the run.
func tally(res *whResult, arrivals []arrival, fromID int64, start time.Time) {
	seen := map[[2]string]bool{}
	var lat []time.Duration
	var last time.Time
	for _, a := range arrivals {
		if !a.valid {
			res.invalid++
		}
		k := [2]string{fmt.Sprint(a.endpoint), a.msgID}
		if seen[k] {
			res.duplicates++
			continue
		}
		seen[k] = true
		res.delivered++
		if a.received.After(last) {
			last = a.received
		}
		if a.notificationID > fromID && !a.createdAt.IsZero() {
			lat = append(lat, a.received.Sub(a.createdAt))
		}
	}
	if !last.IsZero() {
		res.elapsed = last.Sub(start)
	}
	res.latency = percentilesOf(lat)
}

// whRun drives notifications at rate for --webhook-duration to endpoints
// endpoints of which the first dead never answer, then waits (at most
// --webhook-settle) for the deliveries due to the answering ones.
func (h *harness) whRun(ctx context.Context, name, token string, recv *receiver, devs []*whDevice, endpoints, dead int, rate float64) (res whResult, err error) {
	res = whResult{name: name, endpoints: endpoints, dead: dead, rate: rate, load: procfs.ReadLoadAverage().OneMinute()}
	set, err := h.createEndpoints(ctx, token, recv, endpoints)
	defer func() {
		if derr := h.deleteEndpoints(context.WithoutCancel(ctx), token, set); derr != nil && err == nil {
			err = derr
		}
	}()
	if err != nil {
		return res, err
	}
	deadSet := map[int]bool{}
	for i := range dead {
		deadSet[i] = true
	}
	recv.reset(set.secrets, deadSet)
	before, err := h.maxNotificationID(ctx)
	if err != nil {
		return res, err
	}
	cpu := startCPU(h.cfg.ServerPID)
	start := time.Now()
	stop := make(chan struct{})
	timer := time.AfterFunc(h.cfg.WebhookDuration, func() { close(stop) })
	defer timer.Stop()
	res.drive = h.drive(ctx, token, devs, rate, stop)
	if res.notifications, err = h.benchNotificationsSince(ctx, before); err != nil {
		return res, err
	}
	res.expected = res.notifications * int64(endpoints-dead)
	deadline := time.Now().Add(h.cfg.WebhookSettle)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		var got whResult
		tally(&got, recv.snapshot(), before, start)
		if got.delivered >= res.expected {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	tally(&res, recv.snapshot(), before, start)
	if h.cfg.ServerPID != 0 && res.delivered > 0 {
		res.serverCPU = cpu.perRequest(res.delivered)
	}
	if res.delivered < res.expected {
		res.note = fmt.Sprintf("%d of %d deliveries arrived within %s of the drive's end", res.delivered, res.expected, h.cfg.WebhookSettle)
	}
	return res, nil
}

// benchNotificationsSince counts the notifications of the workload's rules
// after id.
func (h *harness) benchNotificationsSince(ctx context.Context, id int64) (int64, error) {
	var n int64
	err := h.db.NewRaw(`SELECT count(*) FROM notifications n JOIN events e ON e.event_id = n.event_id
WHERE n.id > ? AND e.name = ?`, id, benchRuleName).Scan(ctx, &n)
	return n, err
}

// webhooksWorkload runs the modes of --webhook-modes and prints the report.
func (h *harness) webhooksWorkload(ctx context.Context) error {
	token, ok := h.tokens["manager"]
	if !ok {
		return fmt.Errorf("webhooks: no manager token in %s", h.cfg.TokensFile)
	}
	manager := h.principals["manager"].Account.ID
	devs, err := h.whDevices(ctx, manager, h.cfg.WebhookDevices)
	if err != nil {
		return err
	}
	rules, err := h.insertRules(ctx, devs)
	defer func() { _ = h.deleteRules(context.WithoutCancel(ctx), rules) }()
	if err != nil {
		return err
	}
	recv, err := startReceiver()
	if err != nil {
		return err
	}
	defer recv.close()
	fmt.Fprintf(h.out, "fleetops bench webhooks: %s, receiver %s, %d devices of manager %d, %.0f notifications/s for %s per run, modes %s\n",
		h.cfg.BaseURL, recv.addr, len(devs), manager, h.cfg.WebhookRate, h.cfg.WebhookDuration, h.cfg.WebhookModes)
	var runs []whResult
	for _, mode := range strings.Split(h.cfg.WebhookModes, ",") {
		var got []whResult
		switch strings.TrimSpace(mode) {
		case "rate":
			r, err := h.whRun(ctx, "rate", token, recv, devs, h.cfg.WebhookEndpoints, 0, h.cfg.WebhookRate)
			if err != nil {
				return err
			}
			got = append(got, r)
		case "dead":
			// the same deliveries/s as the rate mode, spread over more endpoints
			rate := h.cfg.WebhookRate * float64(h.cfg.WebhookEndpoints) / float64(h.cfg.WebhookWide)
			for _, dead := range []int{0, h.cfg.WebhookDead} {
				r, err := h.whRun(ctx, fmt.Sprintf("dead %d of %d", dead, h.cfg.WebhookWide), token, recv, devs, h.cfg.WebhookWide, dead, rate)
				if err != nil {
					return err
				}
				got = append(got, r)
			}
		case "backlog":
			r, err := h.whBacklog(ctx, token, recv, devs)
			if err != nil {
				return err
			}
			got = append(got, r)
		}
		for _, r := range got {
			fmt.Fprintln(h.out, r.line())
		}
		runs = append(runs, got...)
	}
	table := webhooksMarkdown(runs)
	fmt.Fprintln(h.out)
	fmt.Fprint(h.out, table)
	if h.cfg.MarkdownFile != "" {
		return writeFile(h.cfg.MarkdownFile, table)
	}
	return nil
}
