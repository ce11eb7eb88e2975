package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/rules"
)

// The clock's rules (docs/design.md §14): what fires without a reading.
// connection_no fires when a device has been silent for its rule's
// checked_value minutes (SweepSilence); a notify_service_expire service
// record enters "soon" or "expired" as the day moves (SweepServiceDays).
// A replica runs them while it holds the lease ClockLease (package clock);
// each device is evaluated in its own transaction under its row lock, so
// two sweeps at once (a lease taken over from a paused holder) still
// notify each silence and each state entered once.

// ClockLease is the name of the clock's lease in fleet_leases.
const ClockLease = "clock_rules"

// clockBatch is how many candidate devices one query of a sweep reads.
const clockBatch = 500

// ClockSweep is what one sweep of the clock's rules did.
type ClockSweep struct {
	// Devices is how many devices were evaluated (locked and read).
	Devices int
	// Notifications are the notifications created, per account: usage
	// metering's "notifications" (docs/design.md §14, "Around it").
	Notifications map[int64]int64
}

// Created is the number of notifications the sweep created.
func (c ClockSweep) Created() int64 {
	var n int64
	for _, v := range c.Notifications {
		n += v
	}
	return n
}

func (c *ClockSweep) add(o ClockSweep) {
	c.Devices += o.Devices
	c.Notifications = addCounts(c.Notifications, o.Notifications)
}

// candidate is a device a sweep evaluates, with its owner.
type candidate struct {
	ID        int64 `bun:"id"`
	AccountID int64 `bun:"account_id"`
}

// silentCandidates is the query of the devices that may owe a
// connection_no at now: a reading seen (last_time), an active
// connection_no rule of the owner naming the device (an empty imei list
// names every device) whose checked_value, a plain number of minutes, has
// passed since last_time, and whose state does not record that it fired
// for this silence already (rules.RuleState.Silence, the reading time of
// the silence it fired for). A checked_value that is not a plain number
// is malformed (rules.Check): never a candidate. rules.Silence decides.
const silentCandidates = `SELECT o.id, o.account_id FROM objects AS o
	WHERE o.last_time IS NOT NULL AND o.id > ? AND EXISTS (
		SELECT 1 FROM events AS e
		WHERE e.account_id = o.account_id AND e.active AND e.type = 'connection_no'
		  AND (e.imei = '{}' OR o.imei = ANY(e.imei))
		  AND btrim(e.checked_value) ~ '^[0-9]{1,12}(\.[0-9]{1,6}){0,1}$'
		  AND extract(epoch FROM (CAST(? AS timestamptz) - o.last_time)) >= btrim(e.checked_value)::numeric * 60
		  AND NOT COALESCE(CASE WHEN (o.rule_state #>> ARRAY['rules', e.event_id::text, 'silence']) ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}T'
		      THEN (o.rule_state #>> ARRAY['rules', e.event_id::text, 'silence'])::timestamptz = o.last_time END, false))
	ORDER BY o.id LIMIT ?`

// SweepSilence fires the connection_no rules due at now (docs/design.md
// §14: no reading for checked_value minutes, at most once per silence; a
// reading re-arms them): for each candidate device, in its own
// transaction, the owner's account KEY SHARE then the device FOR NO KEY
// UPDATE (docs/locking.md), rules.Silence over its rule state, the fired
// notifications inserted and the state written back. now is a parameter
// so that tests move the clock.
func (s *Store) SweepSilence(ctx context.Context, now time.Time) (ClockSweep, error) {
	var out ClockSweep
	var after int64
	for {
		var batch []candidate
		if err := s.db.NewRaw(silentCandidates, after, now, clockBatch).Scan(ctx, &batch); err != nil {
			return out, translateOwn(err)
		}
		for _, c := range batch {
			one, err := s.silenceDevice(ctx, c, now)
			if err != nil {
				return out, err
			}
			out.add(one)
			after = c.ID
		}
		if len(batch) < clockBatch {
			return out, nil
		}
	}
}

// silenceDevice evaluates one device's connection_no rules at now in one
// transaction. A device erased or moved to another account since it was
// chosen is left for the next sweep.
func (s *Store) silenceDevice(ctx context.Context, c candidate, now time.Time) (ClockSweep, error) {
	var out ClockSweep
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		out = ClockSweep{}
		d, ok, err := lockDevice(ctx, tx, c)
		if err != nil || !ok {
			return err
		}
		out.Devices = 1
		ev, err := loadEvaluation(ctx, tx, []int64{d.AccountID}, rules.ConnectionNo)
		if err != nil {
			return err
		}
		st := d.ruleState()
		before, _ := json.Marshal(st)
		next, fired := rules.Silence(ev.rulesFor(&d), ev.location(d.AccountID), st, *d.LastTime, now)
		rows := make([]notificationRow, 0, len(fired))
		for _, f := range fired {
			rows = append(rows, firedRow(&d, f, d.Lat, d.Lon)) // f.Time is now (rules.Silence)
		}
		if out.Notifications, err = insertNotifications(ctx, tx, rows); err != nil {
			return err
		}
		after, err := json.Marshal(next)
		if err != nil {
			return fmt.Errorf("storage: rule state of device %d: %w", d.ID, err)
		}
		if bytes.Equal(before, after) {
			return nil
		}
		_, err = tx.NewRaw("UPDATE objects SET rule_state = ? WHERE id = ?", string(after), d.ID).Exec(ctx)
		return err
	})
	if err != nil {
		return ClockSweep{}, translateOwn(err)
	}
	return out, nil
}

// lockDevice takes the lock order's locks of a clock evaluation
// (docs/locking.md): the device's owner KEY SHARE (behind its erase
// gate), then the device FOR NO KEY UPDATE (lockDevices), and reads the
// device. false: the device or its owner is gone, or the device moved to
// another account, or has no reading.
func lockDevice(ctx context.Context, tx bun.IDB, c candidate) (ruleDevice, bool, error) {
	err := accountLocks{c.AccountID: forKeyShare}.lock(ctx, tx)
	if errors.Is(err, ErrNotFound) {
		return ruleDevice{}, false, nil
	}
	if err != nil {
		return ruleDevice{}, false, err
	}
	d, err := lockDevices(ctx, tx, []int64{c.ID})
	if err != nil {
		return ruleDevice{}, false, err
	}
	if len(d) == 0 || d[0].AccountID != c.AccountID || d[0].LastTime == nil {
		return ruleDevice{}, false, nil
	}
	return d[0], true, nil
}

// serviceCandidates is the query of the devices with a
// notify_service_expire service record.
const serviceCandidates = `SELECT o.id, o.account_id FROM objects AS o
	WHERE o.id > ? AND EXISTS (SELECT 1 FROM services AS s WHERE s.imei = o.imei AND s.account_id = o.account_id AND s.notify_service_expire)
	ORDER BY o.id LIMIT ?`

// serviceBatch is how many devices one transaction of SweepServiceDays
// locks.
const serviceBatch = 100

// SweepServiceDays brings every notify_service_expire service record's
// state up to date on now's UTC day (notifyServiceStates): the day moves
// records into "soon" and "expired" without a reading. The day is UTC,
// as GET /services/due computes it, so that what the notifications say
// and what the due list shows agree. Devices are taken in batches, each
// in one transaction: the owners KEY SHARE in the lock order, then the
// devices FOR NO KEY UPDATE by id.
func (s *Store) SweepServiceDays(ctx context.Context, now time.Time) (ClockSweep, error) {
	var out ClockSweep
	var after int64
	for {
		var batch []candidate
		if err := s.db.NewRaw(serviceCandidates, after, serviceBatch).Scan(ctx, &batch); err != nil {
			return out, translateOwn(err)
		}
		if len(batch) == 0 {
			return out, nil
		}
		one, err := s.serviceBatch(ctx, batch, now)
		if err != nil {
			return out, err
		}
		out.add(one)
		after = batch[len(batch)-1].ID
		if len(batch) < serviceBatch {
			return out, nil
		}
	}
}

// serviceBatch runs notifyServiceStates for the devices of batch (sorted
// by id) in one transaction under their locks.
func (s *Store) serviceBatch(ctx context.Context, batch []candidate, now time.Time) (ClockSweep, error) {
	var out ClockSweep
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		out = ClockSweep{}
		owners := accountLocks{}
		ids := make([]int64, 0, len(batch))
		want := map[int64]int64{}
		for _, c := range batch {
			owners[c.AccountID] = forKeyShare
			ids = append(ids, c.ID)
			want[c.ID] = c.AccountID
		}
		// Owners erased meanwhile are simply absent: their devices are
		// gone with them.
		if _, err := lockAccounts(ctx, tx, owners); err != nil {
			return err
		}
		locked, err := lockDevices(ctx, tx, ids)
		if err != nil {
			return err
		}
		held := make([]int64, 0, len(locked))
		for _, d := range locked {
			if want[d.ID] == d.AccountID { // a device moved meanwhile waits for the next sweep
				held = append(held, d.ID)
			}
		}
		out.Devices = len(held)
		out.Notifications, err = notifyServiceStates(ctx, tx, held, now.UTC(), now)
		return err
	})
	if err != nil {
		return ClockSweep{}, translateOwn(err)
	}
	return out, nil
}
