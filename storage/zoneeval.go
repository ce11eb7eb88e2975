package storage

import (
	"context"
	"log/slog"
	"slices"
	"strconv"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/fleetapi/fleetapi/places"
	"github.com/fleetapi/fleetapi/rules"
)

// Zones in force (docs/design.md §15): the zones the zone_in and zone_out
// rules of an evaluation name, loaded with the rules, once per batch, and
// which of them hold a reading's position.

// placedZone is a zone a rule names: its owner and its compiled shape.
type placedZone struct {
	account int64
	region  *places.Region
}

// zoneRule reports whether e is a zone_in or zone_out rule.
func zoneRule(e Event) bool { return e.Type == rules.ZoneIn || e.Type == rules.ZoneOut }

// loadPlaces reads the zones that the zone rules among evs name (one
// statement; none without zone rules), compiled with places. A name that
// is not an id is skipped (such a rule names a missing zone). A stored
// shape that does not compile (only SQL behind the API's back writes one)
// is left out and logged: its rules name a missing zone.
func loadPlaces(ctx context.Context, db bun.IDB, evs []Event) (map[string]placedZone, error) {
	var ids []int64
	for _, e := range evs {
		if !zoneRule(e) {
			continue
		}
		for _, z := range e.Zones {
			if id, err := strconv.ParseInt(z, 10, 64); err == nil && id > 0 && !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	out := map[string]placedZone{}
	if len(ids) == 0 {
		return out, nil
	}
	var zs []Zone
	if err := db.NewRaw(`SELECT id, account_id, name, kind, center_lat, center_lon, radius_m, points FROM zones WHERE id = ANY(?)`,
		pgdialect.Array(ids)).Scan(ctx, &zs); err != nil {
		return nil, err
	}
	for _, z := range zs {
		_ = z.AfterScanRow(ctx)
		region, probs := places.Compile(z.Shape())
		if region == nil {
			slog.Default().Warn("zone shape does not compile: its rules never fire", slog.Int64("zone_id", z.ID), slog.Any("problems", probs))
			continue
		}
		out[strconv.FormatInt(z.ID, 10)] = placedZone{account: z.AccountID, region: region}
	}
	return out, nil
}

// withZones is e as the rules read it, its zones that are not zones of its
// account in ZonesMissing.
func (ev evaluation) withZones(e Event) rules.Rule {
	r := e.Rule()
	if zoneRule(e) {
		r.ZonesMissing = missingZones(e, func(id string) (int64, bool) {
			z, ok := ev.places[id]
			return z.account, ok
		})
	}
	return r
}

// missingZones are the zones e names that owner does not place in e's
// account (owner: the account of a zone id, and whether it exists).
func missingZones(e Event, owner func(id string) (int64, bool)) []string {
	var missing []string
	for _, z := range e.Zones {
		if acct, ok := owner(z); !ok || acct != e.AccountID {
			missing = append(missing, z)
		}
	}
	return missing
}

// inZones are the zones, among those rs name, that hold the position
// lat, lon; nil without a position.
func (ev evaluation) inZones(rs []rules.Rule, lat, lon *float64) map[string]bool {
	if lat == nil || lon == nil {
		return nil
	}
	in := map[string]bool{}
	p := places.Point{Lat: *lat, Lon: *lon}
	for _, r := range rs {
		for _, z := range r.Zones {
			if _, done := in[z]; done {
				continue
			}
			pz, ok := ev.places[z]
			in[z] = ok && pz.region.Contains(p)
		}
	}
	return in
}

// EventZonesMissing returns the zones the zone_in or zone_out rule e
// names that are not zones of its account (absent, another account's, or
// not an id): GET /events/{id} says such a rule is not evaluable. e was
// read in the caller's scope; the zones are read by id and compared with
// its account, so nothing of another account is shown but its absence.
// It returns ErrUnavailable.
func (s *Store) EventZonesMissing(ctx context.Context, e Event) ([]string, error) {
	if !zoneRule(e) || len(e.Zones) == 0 {
		return nil, nil
	}
	var zs []Zone
	err := s.read(ctx, func(ctx context.Context, rs *Store) error {
		var ids []int64
		for _, z := range e.Zones {
			if id, err := strconv.ParseInt(z, 10, 64); err == nil && id > 0 {
				ids = append(ids, id)
			}
		}
		return translateOwn(rs.db.NewRaw(`SELECT id, account_id FROM zones WHERE id = ANY(?) AND account_id = ?`,
			pgdialect.Array(ids), e.AccountID).Scan(ctx, &zs))
	})
	if err != nil {
		return nil, err
	}
	return missingZones(e, func(id string) (int64, bool) {
		for _, z := range zs {
			if strconv.FormatInt(z.ID, 10) == id {
				return z.AccountID, true
			}
		}
		return 0, false
	}), nil
}
