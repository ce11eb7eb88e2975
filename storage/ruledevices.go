package storage

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/fleetapi/fleetapi/rules"
)

// What an evaluation of event rules reads, for the ingest (IngestReadings)
// and the clock (SweepSilence) alike: the devices under their locks, the
// active rules and the time zones of their owners.

// ruleDevice is a device whose rules are evaluated: its identity and what
// the evaluation reads of its state.
type ruleDevice struct {
	ID        int64           `bun:"id"`
	IMEI      string          `bun:"imei"`
	AccountID int64           `bun:"account_id"`
	LastTime  *time.Time      `bun:"last_time"`
	Lat       *float64        `bun:"lat"`
	Lon       *float64        `bun:"lon"`
	RuleState json.RawMessage `bun:"rule_state,type:jsonb"`
}

// lockDevices reads the devices ids FOR NO KEY UPDATE, by id (the lock
// order of docs/locking.md: the caller holds their owners first). A device
// that no longer exists is absent.
func lockDevices(ctx context.Context, tx bun.IDB, ids []int64) ([]ruleDevice, error) {
	var out []ruleDevice
	if len(ids) == 0 {
		return out, nil
	}
	err := tx.NewRaw(`SELECT id, imei, account_id, last_time, lat, lon, rule_state FROM objects
WHERE id = ANY(?) ORDER BY id FOR NO KEY UPDATE`, pgdialect.Array(ids)).Scan(ctx, &out)
	return out, err
}

// evaluation is what the rules of some devices need: the active rules and
// the time zone of each owner.
type evaluation struct {
	events map[int64][]Event // by account, in id order
	zones  map[int64]*time.Location
	// places are the zones the zone_in and zone_out rules name, by id
	// (as the rules spell it), that exist and whose shape compiles.
	places map[string]placedZone
}

// loadEvaluation reads the active rules of the accounts owners (of the
// type typ only, when not empty) and their time zones (LoadTimezone; a
// zone that is not valid, written behind the API's back, reads UTC and is
// logged), and the zones their zone_in and zone_out rules name
// (loadPlaces): at most three statements.
func loadEvaluation(ctx context.Context, db bun.IDB, owners []int64, typ string) (evaluation, error) {
	ev := evaluation{events: map[int64][]Event{}, zones: map[int64]*time.Location{}}
	var evs []Event
	err := db.NewRaw(`SELECT event_id, account_id, type, name, checked_value, week_days, day_time, imei, zones FROM events
WHERE account_id = ANY(?) AND active AND (? = '' OR type = ?) ORDER BY account_id, event_id`,
		pgdialect.Array(owners), typ, typ).Scan(ctx, &evs)
	if err != nil {
		return ev, err
	}
	for _, e := range evs {
		ev.events[e.AccountID] = append(ev.events[e.AccountID], e)
	}
	if ev.places, err = loadPlaces(ctx, db, evs); err != nil {
		return ev, err
	}
	var zones []struct {
		ID       int64  `bun:"id"`
		Timezone string `bun:"timezone"`
	}
	if err := db.NewRaw("SELECT id, timezone FROM accounts WHERE id = ANY(?)", pgdialect.Array(owners)).Scan(ctx, &zones); err != nil {
		return ev, err
	}
	for _, z := range zones {
		loc, ok := LoadTimezone(z.Timezone)
		if !ok {
			slog.Default().Warn("account time zone unknown: its rules read UTC", slog.Int64("account_id", z.ID),
				slog.String("timezone", z.Timezone))
			loc = time.UTC
		}
		ev.zones[z.ID] = loc
	}
	return ev, nil
}

// rulesFor returns the active rules of d's owner that name d (an empty
// imei list names every device of the account), in id order, as
// Event.Rule reads them.
func (ev evaluation) rulesFor(d *ruleDevice) []rules.Rule {
	var out []rules.Rule
	for _, e := range ev.events[d.AccountID] {
		if len(e.IMEI) > 0 && !slices.Contains(e.IMEI, d.IMEI) {
			continue
		}
		out = append(out, ev.withZones(e))
	}
	return out
}

// location is account's time zone: UTC when it is not a valid one.
func (ev evaluation) location(account int64) *time.Location {
	if loc := ev.zones[account]; loc != nil {
		return loc
	}
	return time.UTC
}

// ruleState decodes the device's evaluation state. A state that does not
// decode (only SQL behind the server's back writes one) starts over, every
// rule armed, for the ingest and the clock alike: a device must not be
// stuck refusing every batch because of its state.
func (d *ruleDevice) ruleState() rules.State {
	var st rules.State
	if len(d.RuleState) > 0 && json.Unmarshal(d.RuleState, &st) != nil {
		return rules.State{}
	}
	return st
}
