package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/uptrace/bun/dialect/pgdialect"
)

// What the webhooks workload drives: notifications at a target rate. Each
// driven device gets an active overspeed rule of its own account
// (checked_value 50 km/h, below every generated rule's 90 to 130, so only
// this rule fires), inserted with SQL (no route writes event rules), and
// each tick posts one device's pair of readings through POST /readings,
// 40 km/h then 60 km/h: the rule re-arms on the first and fires on the
// second, one notification a tick.

// benchRuleName names the rules the workload inserts (and deletes).
const benchRuleName = "fleetops bench webhooks"

// whDevice is a device the webhooks workload drives.
type whDevice struct {
	ID        int64  `bun:"id"`
	IMEI      string `bun:"imei"`
	AccountID int64  `bun:"account_id"`
	// lastMS is the time of its newest reading, Unix milliseconds.
	LastMS int64 `bun:"last_ms"`
}

// whDevices are the first n devices of account (a manager) and its
// customers: the notifications its webhooks are sent.
func (h *harness) whDevices(ctx context.Context, account int64, n int) ([]*whDevice, error) {
	var out []*whDevice
	err := h.db.NewRaw(`SELECT o.id, o.imei, o.account_id, coalesce((extract(epoch FROM o.last_time) * 1000)::bigint, 0) AS last_ms
FROM objects o JOIN accounts a ON a.id = o.account_id
WHERE a.id = ? OR a.manager_id = ? ORDER BY o.id LIMIT ?`, account, account, n).Scan(ctx, &out)
	if err != nil {
		return nil, fmt.Errorf("webhooks: devices: %w", err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("webhooks: the manager's accounts hold no device")
	}
	return out, nil
}

// insertRules gives each device's account one active overspeed rule at 50
// km/h for the devices; it returns the rules' ids.
func (h *harness) insertRules(ctx context.Context, devs []*whDevice) ([]int64, error) {
	imeis := map[int64][]string{}
	for _, d := range devs {
		imeis[d.AccountID] = append(imeis[d.AccountID], d.IMEI)
	}
	var ids []int64
	for account, list := range imeis {
		var id int64
		if err := h.db.NewRaw(`INSERT INTO events (account_id, type, name, active, imei, checked_value)
VALUES (?, 'overspeed', ?, true, ?, '50') RETURNING event_id`, account, benchRuleName, pgdialect.Array(list)).Scan(ctx, &id); err != nil {
			return ids, fmt.Errorf("webhooks: rule: %w", err)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// deleteRules removes the rules insertRules made.
func (h *harness) deleteRules(ctx context.Context, ids []int64) error {
	_, err := h.db.NewRaw("DELETE FROM events WHERE event_id = ANY(?)", pgdialect.Array(ids)).Exec(ctx)
	return err
}

// whReading is one reading of the pair a tick posts.
type whReading struct {
	IMEI     string    `json:"imei"`
	Time     time.Time `json:"time"`
	Speed    float64   `json:"speed"`
	Ignition bool      `json:"ignition"`
}

// driveResult is what a drive posted.
type driveResult struct {
	ticks, errors int64
	firstError    string
}

// drive posts, rate times a second until stop is closed, the next device's
// pair of readings (round robin), at most 16 posts in flight. token is the
// manager's.
func (h *harness) drive(ctx context.Context, token string, devs []*whDevice, rate float64, stop <-chan struct{}) driveResult {
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 16, MaxConnsPerHost: 16}}
	defer client.CloseIdleConnections()
	var (
		res        driveResult
		ticks, bad atomic.Int64
		once       sync.Once
		wg         sync.WaitGroup
		sem        = make(chan struct{}, 16)
	)
	interval := time.Duration(float64(time.Second) / rate)
	next := time.Now()
	for i := 0; ; i++ {
		select {
		case <-stop:
			wg.Wait()
			res.ticks, res.errors = ticks.Load(), bad.Load()
			return res
		case <-ctx.Done():
			wg.Wait()
			res.ticks, res.errors = ticks.Load(), bad.Load()
			return res
		case <-time.After(time.Until(next)):
		}
		next = next.Add(interval)
		d := devs[i%len(devs)]
		now := time.Now().UnixMilli()
		low := max(now-500, d.LastMS+1)
		d.LastMS = low + 1
		body, _ := json.Marshal(struct {
			Readings []whReading `json:"readings"`
		}{[]whReading{
			{IMEI: d.IMEI, Time: time.UnixMilli(low).UTC(), Speed: 40, Ignition: true},
			{IMEI: d.IMEI, Time: time.UnixMilli(low + 1).UTC(), Speed: 60, Ignition: true},
		}})
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			ticks.Add(1)
			b, err := doWith(ctx, client, h.cfg.BaseURL, token, apiRequest{method: "POST", path: base + "/readings", body: body, status: 200}, true)
			if err == nil {
				var out batchOutcome
				if out, err = readingsAnswer(b); err == nil && out.accepted != 2 {
					err = fmt.Errorf("readings: %d of 2 accepted (%s)", out.accepted, out.firstRejection)
				}
			}
			if err != nil && ctx.Err() == nil {
				bad.Add(1)
				once.Do(func() { res.firstError = err.Error() })
			}
		})
	}
}
