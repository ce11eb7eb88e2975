package storage

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/rules"
)

// DefaultPositionsRetention is FLEET_POSITIONS_RETENTION's default: how
// long positions and notifications are kept (docs/design.md §14).
const DefaultPositionsRetention = 90 * 24 * time.Hour

// Reading is one reading the API checked (docs/design.md §14), as storage
// stores it. A nil field was not reported. Time is rounded to the
// microsecond, PostgreSQL's precision, by IngestReadings: (IMEI, Time) is
// the reading's identity.
type Reading struct {
	IMEI        string
	Time        time.Time
	Lat, Lon    *float64
	Speed       *float64
	Heading     *float64
	Altitude    *float64
	Odometer    *float64
	EngineHours *float64
	Ignition    *bool
	// Attributes' values are float64, bool or string.
	Attributes map[string]any
}

// ReadingOutcome is what became of one reading of a batch.
type ReadingOutcome int

const (
	// ReadingAccepted: stored now.
	ReadingAccepted ReadingOutcome = iota + 1
	// ReadingDuplicate: (imei, time) was stored before, or earlier in the
	// same batch: nothing stored, nothing evaluated.
	ReadingDuplicate
	// ReadingUnknownDevice: no device of the caller's objects scope has
	// the imei (another tenant's and a non-existent device alike).
	ReadingUnknownDevice
)

// IngestResult is the outcome of one batch (IngestReadings).
type IngestResult struct {
	// Outcomes has one entry per reading given, in order.
	Outcomes []ReadingOutcome
	// Accepted and Duplicates count the outcomes.
	Accepted, Duplicates int
	// Notifications is how many notifications the batch created (rules
	// fired, services entering soon or expired).
	Notifications int
	// Usage counts, per account that owns a device of the batch, the
	// readings accepted and the notifications created (usage metering).
	Usage map[int64]IngestUsage
}

// IngestUsage is one account's part of a batch.
type IngestUsage struct {
	Readings, Notifications int
}

// IngestReadings stores one batch of readings (POST /readings, docs/design.md
// §14) in ONE transaction, and returns each reading's outcome.
//
// The imeis are resolved to devices through scope, the caller's objects
// data scope: a device outside it and one that does not exist are both
// ReadingUnknownDevice, decided by the same one query (no other statement
// or lock for either). Then, in the lock order of docs/locking.md, the
// devices' owners KEY SHARE and the devices FOR NO KEY UPDATE by id; the
// positions are inserted in one statement, ON CONFLICT (object_id, time)
// DO NOTHING, whose RETURNING tells accepted from duplicate. Per device, in
// time order, the accepted readings newer than the device's last_time are
// evaluated against the active rules of its owner that name it
// (rules.Evaluate, in the owner's time zone), exactly once: duplicates and
// older readings are history only. The newest of them moves the device's
// state (one UPDATE for the batch), what fired becomes notifications (one
// INSERT), and the services of the devices whose odometer or engine hours
// moved are checked for soon/expired (notifyServiceStates).
//
// now is the server's clock (the services' day). On any database error
// nothing is stored: ErrUnavailable (503) and the like, translated.
func (s *Store) IngestReadings(ctx context.Context, scope policy.Scope, readings []Reading, now time.Time) (IngestResult, error) {
	c, err := s.compiledFor(scope, Objects.Descriptor)
	if err != nil {
		return IngestResult{}, err
	}
	for i := range readings {
		readings[i].Time = readings[i].Time.Round(time.Microsecond).UTC()
	}
	imeis := make([]string, 0, len(readings))
	seen := map[string]bool{}
	for _, r := range readings {
		if !seen[r.IMEI] {
			seen[r.IMEI] = true
			imeis = append(imeis, r.IMEI)
		}
	}
	slices.Sort(imeis)
	var res IngestResult
	// An owner erased between the resolution and its lock (accountGone)
	// runs the transaction again: its devices are then unknown.
	for attempt := 0; ; attempt++ {
		err = s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			var err error
			res, err = s.on(tx).ingest(ctx, tx, c, imeis, readings, now)
			return err
		})
		if err == nil || !errors.Is(err, ErrNotFound) || attempt == 2 {
			break
		}
	}
	if err != nil {
		return IngestResult{}, Translate(err)
	}
	return res, nil
}

// ingest is IngestReadings' transaction.
func (s *Store) ingest(ctx context.Context, tx bun.Tx, c *compiledScope, imeis []string, readings []Reading, now time.Time) (IngestResult, error) {
	res := IngestResult{Outcomes: make([]ReadingOutcome, len(readings)), Usage: map[int64]IngestUsage{}}
	// 1. The devices of the caller's scope among the imeis: one query.
	var inScope []ruleDevice
	err := s.selectIn(Objects.Descriptor, c.page, (*Object)(nil)).
		ColumnExpr(Objects.col("id")+", "+Objects.col("imei")+", "+Objects.col("account_id")).
		Where(Objects.col("imei")+" = ANY(?)", pgdialect.Array(imeis)).
		Scan(ctx, &inScope)
	if err != nil {
		return res, err
	}
	// 2. The owners KEY SHARE, then the devices FOR NO KEY UPDATE by id.
	owners := accountLocks{}
	ids := make([]int64, 0, len(inScope))
	resolved := map[int64]int64{} // device id → owner at resolution
	for _, d := range inScope {
		owners = owners.with(forKeyShare, d.AccountID)
		ids = append(ids, d.ID)
		resolved[d.ID] = d.AccountID
	}
	if err := owners.lock(ctx, tx); err != nil {
		return res, err
	}
	locked, err := lockDevices(ctx, tx, ids)
	if err != nil {
		return res, err
	}
	byIMEI := map[string]*ruleDevice{}
	for i := range locked {
		d := &locked[i]
		// A device moved to another owner since the resolution (PATCH
		// /objects/{id} in between) is not known to this batch: its new
		// owner is not held, and may be outside the caller's scope.
		if resolved[d.ID] == d.AccountID {
			byIMEI[d.IMEI] = d
		}
	}
	// 3. The positions: the batch's own duplicates first, then one insert.
	first := map[positionKey]int{} // the index of the first reading of each identity
	var rows []positionRow
	for i, r := range readings {
		d := byIMEI[r.IMEI]
		if d == nil {
			res.Outcomes[i] = ReadingUnknownDevice
			continue
		}
		k := positionKey{d.ID, r.Time.UnixMicro()}
		if _, dup := first[k]; dup {
			res.Outcomes[i] = ReadingDuplicate
			continue
		}
		first[k] = i
		rows = append(rows, positionOf(d, r))
	}
	if err := ensurePartitionsFor(ctx, tx, rows); err != nil {
		return res, err
	}
	inserted, err := insertPositions(ctx, tx, rows)
	if err != nil {
		return res, err
	}
	for k, i := range first {
		if inserted[k] {
			res.Outcomes[i] = ReadingAccepted
		} else {
			res.Outcomes[i] = ReadingDuplicate
		}
	}
	// 4. Evaluation, per device in time order, of the accepted readings
	// newer than the device's state.
	newer := map[int64][]Reading{}
	for i, o := range res.Outcomes {
		switch o {
		case ReadingAccepted:
			res.Accepted++
			d := byIMEI[readings[i].IMEI]
			u := res.Usage[d.AccountID]
			u.Readings++
			res.Usage[d.AccountID] = u
			if d.LastTime == nil || readings[i].Time.After(*d.LastTime) {
				newer[d.ID] = append(newer[d.ID], readings[i])
			}
		case ReadingDuplicate:
			res.Duplicates++
		}
	}
	if len(newer) == 0 {
		return res, nil
	}
	var evaluated []int64 // the owners of the devices with readings to evaluate
	for _, d := range locked {
		if len(newer[d.ID]) > 0 && !slices.Contains(evaluated, d.AccountID) {
			evaluated = append(evaluated, d.AccountID)
		}
	}
	ev, err := loadEvaluation(ctx, tx, evaluated, "")
	if err != nil {
		return res, err
	}
	var states []deviceState
	var notes []notificationRow
	var moved []int64
	for i := range locked {
		d := &locked[i]
		rs := newer[d.ID]
		if len(rs) == 0 {
			continue
		}
		sort.Slice(rs, func(a, b int) bool { return rs[a].Time.Before(rs[b].Time) })
		st := d.ruleState()
		next := deviceState{ID: d.ID}
		rl, loc := ev.rulesFor(d), ev.location(d.AccountID)
		for _, r := range rs {
			var fired []rules.Fired
			rr := ruleReading(r)
			rr.InZones = ev.inZones(rl, r.Lat, r.Lon)
			st, fired = rules.Evaluate(rl, loc, st, rr)
			for _, f := range fired {
				notes = append(notes, firedRow(d, f, r.Lat, r.Lon))
			}
			next.apply(r)
		}
		raw, err := json.Marshal(st)
		if err != nil {
			return res, err
		}
		next.RuleState = raw
		states = append(states, next)
		if next.Odometer != nil || next.EngineHours != nil {
			moved = append(moved, d.ID)
		}
	}
	if err := updateDeviceStates(ctx, tx, states); err != nil {
		return res, err
	}
	created, err := insertNotifications(ctx, tx, notes)
	if err != nil {
		return res, err
	}
	res.addNotifications(created)
	// The service notifications: their accounts are the devices' owners;
	// their time is the ingest's clock (one call for the batch's devices,
	// whose newest readings may differ).
	created, err = notifyServiceStates(ctx, tx, moved, now.UTC(), now)
	if err != nil {
		return res, err
	}
	res.addNotifications(created)
	return res, nil
}

// addNotifications counts the notifications created, per account, in the
// batch's total and its usage.
func (res *IngestResult) addNotifications(created map[int64]int64) {
	for account, n := range created {
		res.Notifications += int(n)
		u := res.Usage[account]
		u.Notifications += int(n)
		res.Usage[account] = u
	}
}

// ruleReading is r as the rules see it.
func ruleReading(r Reading) rules.Reading {
	return rules.Reading{Time: r.Time, Lat: r.Lat, Lon: r.Lon, Speed: r.Speed, Odometer: r.Odometer,
		EngineHours: r.EngineHours, Ignition: r.Ignition, Attributes: r.Attributes}
}

// positionRow is one row of positions, as jsonb_to_recordset reads it.
type positionRow struct {
	ObjectID    int64          `json:"object_id"`
	Time        time.Time      `json:"time"`
	AccountID   int64          `json:"account_id"`
	IMEI        string         `json:"imei"`
	Lat         *float64       `json:"lat"`
	Lon         *float64       `json:"lon"`
	Speed       *float64       `json:"speed"`
	Heading     *float64       `json:"heading"`
	Altitude    *float64       `json:"altitude"`
	Odometer    *float64       `json:"odometer"`
	EngineHours *float64       `json:"engine_hours"`
	Ignition    *bool          `json:"ignition"`
	Attributes  map[string]any `json:"attributes"`
}

func positionOf(d *ruleDevice, r Reading) positionRow {
	attrs := r.Attributes
	if attrs == nil {
		attrs = map[string]any{}
	}
	return positionRow{ObjectID: d.ID, Time: r.Time, AccountID: d.AccountID, IMEI: d.IMEI, Lat: r.Lat, Lon: r.Lon,
		Speed: r.Speed, Heading: r.Heading, Altitude: r.Altitude, Odometer: r.Odometer, EngineHours: r.EngineHours,
		Ignition: r.Ignition, Attributes: attrs}
}

// positionKey identifies a position: the device and the time in
// microseconds.
type positionKey struct {
	object int64
	micros int64
}

// insertPositions inserts rows in one statement and returns the keys of
// those it inserted (the others existed: duplicates).
func insertPositions(ctx context.Context, tx bun.Tx, rows []positionRow) (map[positionKey]bool, error) {
	out := map[positionKey]bool{}
	if len(rows) == 0 {
		return out, nil
	}
	doc, err := json.Marshal(rows)
	if err != nil {
		return nil, err
	}
	var got []struct {
		ObjectID int64     `bun:"object_id"`
		Time     time.Time `bun:"time"`
	}
	err = tx.NewRaw(`INSERT INTO positions (object_id, time, account_id, imei, lat, lon, speed, heading, altitude, odometer, engine_hours, ignition, attributes)
SELECT object_id, time, account_id, imei, lat, lon, speed, heading, altitude, odometer, engine_hours, ignition, attributes
FROM jsonb_to_recordset(?::jsonb) AS r(object_id bigint, time timestamptz, account_id bigint, imei text, lat float8, lon float8,
  speed float8, heading float8, altitude float8, odometer float8, engine_hours float8, ignition boolean, attributes jsonb)
ON CONFLICT (object_id, time) DO NOTHING
RETURNING object_id, time`, string(doc)).Scan(ctx, &got)
	if err != nil {
		return nil, err
	}
	for _, g := range got {
		out[positionKey{g.ObjectID, g.Time.UnixMicro()}] = true
	}
	return out, nil
}

// ensurePartitionsFor makes the daily partitions of positions that rows
// need and that do not exist (the maintenance makes them ahead; a reading
// of a day it has not reached, a clock skew or a retention longer than
// the migration's first partitions, would otherwise fail the batch). It is
// one query when every partition exists.
func ensurePartitionsFor(ctx context.Context, tx bun.Tx, rows []positionRow) error {
	if len(rows) == 0 {
		return nil
	}
	days := map[string]bool{}
	var list []string
	for _, r := range rows {
		d := r.Time.UTC().Format(time.DateOnly)
		if !days[d] {
			days[d] = true
			list = append(list, d)
		}
	}
	var missing []time.Time
	err := tx.NewRaw(`SELECT d FROM unnest(?::date[]) AS d WHERE to_regclass('positions_' || to_char(d, 'YYYYMMDD')) IS NULL`,
		pgdialect.Array(list)).Scan(ctx, &missing)
	if err != nil {
		return err
	}
	for _, d := range missing {
		if _, err := tx.NewRaw("SELECT ensure_positions_partitions(?::date, ?::date)", d.Format(time.DateOnly), d.Format(time.DateOnly)).Exec(ctx); err != nil {
			return err
		}
	}
	return nil
}

// deviceState is the new state of one device: the newest evaluated
// reading's time, and per field the newest value reported among the
// batch's evaluated readings (a field a reading does not report keeps the
// value before it).
type deviceState struct {
	ID          int64           `json:"id"`
	LastTime    time.Time       `json:"last_time"`
	Lat         *float64        `json:"lat"`
	Lon         *float64        `json:"lon"`
	Speed       *float64        `json:"speed"`
	Heading     *float64        `json:"heading"`
	Altitude    *float64        `json:"altitude"`
	Ignition    *bool           `json:"ignition"`
	Attributes  map[string]any  `json:"attributes"`
	Odometer    *int64          `json:"odometer"`
	EngineHours *int64          `json:"engine_hours"`
	RuleState   json.RawMessage `json:"rule_state"`
}

// apply moves the state to r, which is newer than every reading applied.
func (s *deviceState) apply(r Reading) {
	s.LastTime = r.Time
	set := func(dst **float64, v *float64) {
		if v != nil {
			*dst = v
		}
	}
	set(&s.Lat, r.Lat)
	set(&s.Lon, r.Lon)
	set(&s.Speed, r.Speed)
	set(&s.Heading, r.Heading)
	set(&s.Altitude, r.Altitude)
	if r.Ignition != nil {
		s.Ignition = r.Ignition
	}
	for k, v := range r.Attributes {
		if s.Attributes == nil {
			s.Attributes = map[string]any{}
		}
		s.Attributes[k] = v
	}
	if r.Odometer != nil {
		v := int64(math.Floor(*r.Odometer))
		s.Odometer = &v
	}
	if r.EngineHours != nil {
		v := int64(math.Floor(*r.EngineHours))
		s.EngineHours = &v
	}
}

// updateDeviceStates writes the new states in one statement. The
// attributes merge key by key into the device's (a reading reports some
// attributes, not necessarily all). The objects columns it changes are not
// among those the list versions watch (migrations 20270110000001,
// 20270112000001), so a reading bumps no list version.
func updateDeviceStates(ctx context.Context, tx bun.Tx, states []deviceState) error {
	if len(states) == 0 {
		return nil
	}
	doc, err := json.Marshal(states)
	if err != nil {
		return err
	}
	_, err = tx.NewRaw(`UPDATE objects AS o SET
  last_time = r.last_time,
  lat = COALESCE(r.lat, o.lat), lon = COALESCE(r.lon, o.lon),
  speed = COALESCE(r.speed, o.speed), heading = COALESCE(r.heading, o.heading), altitude = COALESCE(r.altitude, o.altitude),
  ignition = COALESCE(r.ignition, o.ignition),
  attributes = o.attributes || COALESCE(r.attributes, '{}'),
  odometer = COALESCE(r.odometer, o.odometer), engine_hours = COALESCE(r.engine_hours, o.engine_hours),
  rule_state = r.rule_state
FROM jsonb_to_recordset(?::jsonb) AS r(id bigint, last_time timestamptz, lat float8, lon float8, speed float8, heading float8,
  altitude float8, ignition boolean, attributes jsonb, odometer bigint, engine_hours bigint, rule_state jsonb)
WHERE o.id = r.id`, string(doc)).Exec(ctx)
	return err
}
