package importfile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/fleetapi/fleetapi/storage"
)

// The zones apply last (after the webhooks): the event rules that name
// them are in the file before them (docs/design.md §8's order), by name.
var _ = declareSection(spec[importZone]{name: "zones", after: "webhooks", key: []string{"account", "name"},
	load: loadZone, dump: dumpZones})

// importZone is a record of the zones section: the zone as the API shows
// it, its account by username; the database assigns id. In a file, a
// zone_in / zone_out rule names its zones by name (ids are each
// database's own): the export writes a zone id of the rule's account as
// that zone's name, the import writes a name back as the id of the
// account's first zone of that name (docs/decisions.md, "Zones in an
// import file").
type importZone struct {
	storage.ZoneValue
	Account   string       `json:"account"`
	AccountID derivedField `json:"account_id,omitzero"`
	ID        dbAssigned   `json:"id,omitzero"`
	CreatedAt *time.Time   `json:"created_at,omitempty"`
	UpdatedAt *time.Time   `json:"updated_at,omitempty"`
}

// zoneRuleTypes are the rule types whose zones name zones (storage's
// zone rules).
const zoneRuleTypes = "('zone_in', 'zone_out')"

// loadZone inserts a zone of the record's account, checked as every zone
// to create (storage.CheckZone), then makes the account's zone rules that
// name it by name name its id. Zone names are not unique in an account:
// like passengers, the k-th record of an account and name is skipped when
// the account already has k zones of that name.
func loadZone(ctx context.Context, im *importer, ref recordRef, z importZone) (bool, error) {
	acct, err := im.owner(ctx, ref, z.Account)
	if err != nil {
		return false, err
	}
	checked, err := storage.CheckZone(z.ZoneValue)
	var bad storage.InvalidFields
	if errors.As(err, &bad) {
		return false, ref.errorf("%s", fieldErrors(bad))
	} else if err != nil {
		return false, err
	}
	v := checked.Value()
	key := fmt.Sprintf("%d\x00%s", acct.ID, v.Name)
	im.zoneNames[key]++
	var have int
	if err := im.db.NewRaw("SELECT count(*) FROM zones WHERE account_id = ? AND name = ?", acct.ID, v.Name).Scan(ctx, &have); err != nil {
		return false, ref.dbError(err)
	}
	inserted := have < im.zoneNames[key]
	if inserted {
		var lat, lon *float64
		if v.Center != nil {
			lat, lon = &v.Center.Lat, &v.Center.Lon
		}
		var points any
		if v.Points != nil {
			raw, err := json.Marshal(v.Points)
			if err != nil {
				return false, err
			}
			points = string(raw)
		}
		if _, err := im.db.NewRaw(`INSERT INTO zones (account_id, name, kind, center_lat, center_lon, radius_m, points, color, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?::jsonb, ?, coalesce(?::timestamptz, now()), coalesce(?::timestamptz, ?::timestamptz, now()))`,
			acct.ID, v.Name, v.Kind, lat, lon, v.RadiusM, points, v.Color, z.CreatedAt, z.UpdatedAt, z.CreatedAt).Exec(ctx); err != nil {
			return false, ref.dbError(err)
		}
	}
	// The rules of the account that name the zone by name name its id (the
	// account's first zone of that name).
	if _, err := im.db.NewRaw(`UPDATE events SET zones = array_replace(zones, ?0, (SELECT min(id)::text FROM zones WHERE account_id = ?1 AND name = ?0))
		WHERE account_id = ?1 AND type IN `+zoneRuleTypes+` AND ?0 = ANY(zones)`, v.Name, acct.ID).Exec(ctx); err != nil {
		return false, ref.dbError(err)
	}
	return inserted, nil
}

// dumpZones writes the subtree's zones.
func dumpZones(ctx context.Context, ex *exporter, emit func(importZone) error) error {
	return eachRow(ctx, ex, "id", "z.account_id = ANY(?)", func(z *storage.Zone) int64 { return z.ID }, func(z *storage.Zone) error {
		return emit(importZone{ZoneValue: storage.ZoneValue{Name: z.Name, Kind: z.Kind, Center: z.Center, RadiusM: z.RadiusM,
			Points: z.Points, Color: z.Color}, Account: ex.names[z.AccountID], CreatedAt: &z.CreatedAt, UpdatedAt: &z.UpdatedAt})
	})
}

// zoneNamesOf returns the zones of a zone rule e as a file names them: an
// id of a zone of e's account as that zone's name, anything else as it
// is.
func zoneNamesOf(ctx context.Context, ex *exporter, e *storage.Event) ([]string, error) {
	if (e.Type != "zone_in" && e.Type != "zone_out") || len(e.Zones) == 0 {
		return e.Zones, nil
	}
	var rows []struct {
		Ref  string `bun:"ref"`
		Name string `bun:"name"`
	}
	if err := ex.db.NewRaw(`SELECT id::text AS ref, name FROM zones WHERE account_id = ? AND id::text = ANY(?)`,
		e.AccountID, pgdialect.Array([]string(e.Zones))).Scan(ctx, &rows); err != nil {
		return nil, err
	}
	names := map[string]string{}
	for _, r := range rows {
		names[r.Ref] = r.Name
	}
	out := make([]string, len(e.Zones))
	for i, z := range e.Zones {
		out[i] = z
		if n, ok := names[z]; ok {
			out[i] = n
		}
	}
	return out, nil
}
