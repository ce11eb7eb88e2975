package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/places"
	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage/audit"
	"github.com/fleetapi/fleetapi/storage/limits"
)

// Zones is the zones resource: /zones (docs/design.md §15, Places). A zone
// belongs to an account (one a subaccount may read is its parent's); the
// account's event rules name it in their zones, by id.
var Zones = declare[Zone]()

// MaxZoneName bounds a zone's name, in characters (the column's CHECK).
const MaxZoneName = 100

// Zone is a row of zones as the API shows it: a circle has center and
// radius_m, a polygon points (the closed ring as given); the other fields
// are null.
type Zone struct {
	bun.BaseModel `bun:"table:zones,alias:z"`

	ID        int64          `bun:"id,pk,autoincrement" json:"id"`
	AccountID int64          `bun:"account_id,notnull" json:"account_id" list:"filter"`
	Name      string         `bun:"name,notnull" json:"name" list:"sort,filter,search=1"`
	Kind      string         `bun:"kind,notnull" json:"kind" list:"sort,filter"`
	CenterLat *float64       `bun:"center_lat" json:"-"`
	CenterLon *float64       `bun:"center_lon" json:"-"`
	Center    *places.Point  `bun:"-" json:"center"`
	RadiusM   *float64       `bun:"radius_m" json:"radius_m"`
	Points    []places.Point `bun:"points,type:jsonb,nullzero" json:"points"`
	Color     string         `bun:"color,notnull" json:"color" list:"filter"`
	CreatedAt time.Time      `bun:"created_at,nullzero,notnull,default:current_timestamp" json:"created_at" list:"sort"`
	UpdatedAt time.Time      `bun:"updated_at,nullzero,notnull,default:current_timestamp" json:"updated_at"`
}

var _ bun.AfterScanRowHook = (*Zone)(nil)

// AfterScanRow makes Center from the center columns (bun calls it after
// reading each row).
func (z *Zone) AfterScanRow(context.Context) error {
	z.Center = nil
	if z.CenterLat != nil && z.CenterLon != nil {
		z.Center = &places.Point{Lat: *z.CenterLat, Lon: *z.CenterLon}
	}
	return nil
}

// Shape returns the zone's geometry as places reads it.
func (z Zone) Shape() places.Shape {
	return places.Shape{Kind: z.Kind, Center: z.Center, RadiusM: z.RadiusM, Points: z.Points}
}

// ZoneValue is a zone's content, unchecked: what a create gives and what a
// change leads to. CheckZone judges it.
type ZoneValue struct {
	Name    string         `json:"name"`
	Kind    string         `json:"kind"`
	Center  *places.Point  `json:"center"`
	RadiusM *float64       `json:"radius_m"`
	Points  []places.Point `json:"points"`
	Color   string         `json:"color"`
}

// CheckedZone is a ZoneValue that CheckZone accepted.
type CheckedZone struct {
	v ZoneValue
}

// Value returns the checked content.
func (c CheckedZone) Value() ZoneValue { return c.v }

// validColor reports whether c is a zone's color: empty or "#rrggbb".
func validColor(c string) bool {
	if c == "" {
		return true
	}
	if len(c) != 7 || c[0] != '#' {
		return false
	}
	_, err := strconv.ParseUint(c[1:], 16, 32)
	return err == nil
}

// CheckZone judges v: name 1 to MaxZoneName characters, not blank; color
// empty or "#rrggbb"; the shape valid by places.Compile. Its error is an
// InvalidFields (ErrInvalid) naming each failing field as the body spells
// it ("points[3].lat").
func CheckZone(v ZoneValue) (CheckedZone, error) {
	bad := InvalidFields{}
	switch n := utf8.RuneCountInString(v.Name); {
	case strings.TrimSpace(v.Name) == "":
		bad["name"] = "required, not blank"
	case n > MaxZoneName:
		bad["name"] = fmt.Sprintf("at most %d characters", MaxZoneName)
	}
	if !validColor(v.Color) {
		bad["color"] = `empty or "#rrggbb" (hexadecimal)`
	}
	if _, probs := places.Compile(places.Shape{Kind: v.Kind, Center: v.Center, RadiusM: v.RadiusM, Points: v.Points}); len(probs) > 0 {
		for _, p := range probs {
			bad[p.Field] = p.Reason
		}
	}
	if len(bad) > 0 {
		return CheckedZone{}, bad
	}
	return CheckedZone{v}, nil
}

// ZonePatch is a change of a zone (UpdateZone): nil fields stay. Geometry
// fields change the geometry: a new kind drops the old kind's fields, so
// that a circle made a polygon needs points; the result is checked whole
// (CheckZone).
type ZonePatch struct {
	Name    *string
	Kind    *string
	Center  *places.Point
	RadiusM *float64
	Points  []places.Point
	Color   *string
}

// apply returns the content of z changed by p.
func (p ZonePatch) apply(z Zone) ZoneValue {
	v := ZoneValue{Name: z.Name, Kind: z.Kind, Center: z.Center, RadiusM: z.RadiusM, Points: z.Points, Color: z.Color}
	if p.Name != nil {
		v.Name = *p.Name
	}
	if p.Color != nil {
		v.Color = *p.Color
	}
	if p.Kind != nil && *p.Kind != v.Kind {
		v.Kind, v.Center, v.RadiusM, v.Points = *p.Kind, nil, nil, nil
	}
	if p.Center != nil {
		v.Center = p.Center
	}
	if p.RadiusM != nil {
		v.RadiusM = p.RadiusM
	}
	if p.Points != nil {
		v.Points = p.Points
	}
	return v
}

// zoneColumns are the SQL values of the columns of v, in the order
// name, kind, center_lat, center_lon, radius_m, points, color.
func zoneColumns(v ZoneValue) ([]any, error) {
	var lat, lon *float64
	if v.Center != nil {
		lat, lon = &v.Center.Lat, &v.Center.Lon
	}
	var points *string
	if v.Points != nil {
		raw, err := json.Marshal(v.Points)
		if err != nil {
			return nil, err
		}
		s := string(raw)
		points = &s
	}
	return []any{v.Name, v.Kind, lat, lon, v.RadiusM, points, v.Color}, nil
}

// zoneFields are a zone's audited fields.
func zoneFields(z Zone) map[string]any {
	return map[string]any{"name": z.Name, "kind": z.Kind, "center": z.Center, "radius_m": z.RadiusM, "points": z.Points, "color": z.Color}
}

// CreateZone stores cz as a zone of account owner and returns it, audited
// (zone.create) in the same transaction. The owner is locked (step 1 of
// the lock order, docs/locking.md) FOR NO KEY UPDATE for its zones quota
// (a *limits.QuotaError above it), the caller whose key idem claims KEY
// SHARE; a retry with the same request returns the stored zone with
// replayed true, another request under the key is
// ErrIdempotencyKeyReused. The new row must be inside scope (a zones
// scope): policy.ErrScope otherwise. It returns ErrNotFound (the owner was
// erased meanwhile), ErrIdempotencyKeyReused and ErrUnavailable.
func (s *Store) CreateZone(ctx context.Context, scope policy.Scope, actor Actor, owner int64, cz CheckedZone, idem *IdempotentRequest) (created Zone, replayed bool, err error) {
	if _, err := s.compiledFor(scope, Zones.Descriptor); err != nil {
		return Zone{}, false, err
	}
	cols, err := zoneColumns(cz.v)
	if err != nil {
		return Zone{}, false, err
	}
	err = s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		locks := accountLocks{}.with(forNoKeyUpdate, owner)
		if idem != nil {
			locks = locks.with(forKeyShare, idem.AccountID)
		}
		if err := locks.lock(ctx, tx); err != nil {
			return err
		}
		if idem != nil {
			raw, claimed, err := claimKey(ctx, tx, *idem)
			if err != nil {
				return err
			}
			if !claimed {
				replayed = true
				return json.Unmarshal(raw, &created)
			}
		}
		if err := s.checkQuota(ctx, tx, owner, limits.QuotaZones); err != nil {
			return err
		}
		var id int64
		if err := tx.NewRaw(`INSERT INTO zones (account_id, name, kind, center_lat, center_lon, radius_m, points, color)
			VALUES (?, ?, ?, ?, ?, ?, ?::jsonb, ?) RETURNING id`, append([]any{owner}, cols...)...).Scan(ctx, &id); err != nil {
			return err
		}
		z, err := s.on(tx).zoneIn(ctx, scope, id, "")
		if err != nil {
			if errors.Is(err, ErrNotFound) {
				return fmt.Errorf("%w: a zone of account %d is outside the caller's scope", policy.ErrScope, owner)
			}
			return err
		}
		created = z
		ev, err := audit.New(policy.ActionZoneCreate, z.AccountID, z.ID, nil, zoneFields(z))
		if err != nil {
			return err
		}
		if err := writeAudit(ctx, tx, actor, &ev); err != nil {
			return err
		}
		if idem != nil {
			return storeIdempotentResponse(ctx, tx, *idem, created)
		}
		return nil
	})
	if err != nil {
		return Zone{}, false, Translate(err)
	}
	return created, replayed, nil
}

// zoneIn reads the zone id inside scope with s's database, locked with
// lock when not empty ("NO KEY UPDATE"); ErrNotFound when the scope does
// not admit it or it does not exist.
func (s *Store) zoneIn(ctx context.Context, scope policy.Scope, id int64, lock string) (Zone, error) {
	return rowIn(ctx, s, Zones, scope, id, lock)
}

// ZoneByID returns the zone id when scope (a zones scope) admits it; one
// that does not exist and one outside the scope are both ErrNotFound. It
// may run on a read replica. It returns policy.ErrScope and
// ErrUnavailable.
func (s *Store) ZoneByID(ctx context.Context, scope policy.Scope, id int64) (Zone, error) {
	var z Zone
	err := s.read(ctx, func(ctx context.Context, rs *Store) error {
		var err error
		z, err = rs.zoneIn(ctx, scope, id, "")
		return err
	})
	return z, err
}

// changeZone runs change on the zone id inside scope (changeOwned).
func (s *Store) changeZone(ctx context.Context, scope policy.Scope, actor Actor, id int64,
	change func(ctx context.Context, tx bun.Tx, z Zone) (audit.Event, error)) error {
	return changeOwned(ctx, s, Zones, scope, actor, id, func(z Zone) int64 { return z.AccountID }, change)
}

// UpdateZone applies p to the zone id inside scope and returns it,
// audited (zone.update, the fields that changed; nothing is written or
// audited when nothing changes). The changed zone is checked whole
// (CheckZone: an InvalidFields). It returns ErrNotFound (outside the scope
// or absent), ErrInvalid, policy.ErrScope and ErrUnavailable.
func (s *Store) UpdateZone(ctx context.Context, scope policy.Scope, actor Actor, id int64, p ZonePatch) (Zone, error) {
	var out Zone
	err := s.changeZone(ctx, scope, actor, id, func(ctx context.Context, tx bun.Tx, z Zone) (audit.Event, error) {
		cz, err := CheckZone(p.apply(z))
		if err != nil {
			return audit.Event{}, err
		}
		v := cz.v
		after := z
		after.Name, after.Kind, after.Center, after.RadiusM, after.Points, after.Color = v.Name, v.Kind, v.Center, v.RadiusM, v.Points, v.Color
		changes, err := audit.Diff(zoneFields(z), zoneFields(after))
		if err != nil || len(changes) == 0 {
			out = z
			return audit.Event{}, err
		}
		cols, err := zoneColumns(v)
		if err != nil {
			return audit.Event{}, err
		}
		if err := tx.NewRaw(`UPDATE zones SET name = ?, kind = ?, center_lat = ?, center_lon = ?, radius_m = ?, points = ?::jsonb,
			color = ?, updated_at = now() WHERE id = ? RETURNING updated_at`, append(cols, id)...).Scan(ctx, &after.UpdatedAt); err != nil {
			return audit.Event{}, err
		}
		if after.Center != nil {
			after.CenterLat, after.CenterLon = &after.Center.Lat, &after.Center.Lon
		} else {
			after.CenterLat, after.CenterLon = nil, nil
		}
		out = after
		return audit.Event{Action: policy.ActionZoneUpdate, TargetAccountID: z.AccountID, TargetID: id, Changes: changes}, nil
	})
	return out, err
}

// ZoneInUse is the refusal to delete a zone that event rules of its
// account name (docs/decisions.md, "Places"): an ErrConflict naming them.
type ZoneInUse struct {
	// EventIDs are the rules that name the zone, ascending.
	EventIDs []int64
}

// Error names the rules.
func (e *ZoneInUse) Error() string {
	return fmt.Sprintf("%v: the zone is named by event rules %v", ErrConflict, e.EventIDs)
}

// Is makes errors.Is(err, ErrConflict) true.
func (e *ZoneInUse) Is(target error) bool { return target == ErrConflict }

// DeleteZone deletes the zone id inside scope, audited (zone.delete),
// unless an event rule of the zone's account names it: then a *ZoneInUse
// (ErrConflict) naming the rules, and nothing is deleted. It returns
// ErrNotFound, policy.ErrScope and ErrUnavailable.
func (s *Store) DeleteZone(ctx context.Context, scope policy.Scope, actor Actor, id int64) error {
	return s.changeZone(ctx, scope, actor, id, func(ctx context.Context, tx bun.Tx, z Zone) (audit.Event, error) {
		var ids []int64
		if err := tx.NewRaw(`SELECT event_id FROM events WHERE account_id = ? AND ? = ANY(zones) ORDER BY event_id`,
			z.AccountID, strconv.FormatInt(id, 10)).Scan(ctx, &ids); err != nil {
			return audit.Event{}, err
		}
		if len(ids) > 0 {
			return audit.Event{}, &ZoneInUse{EventIDs: ids}
		}
		if _, err := tx.NewDelete().Model((*Zone)(nil)).Where(Zones.col(Zones.id.Name)+" = ?", id).Exec(ctx); err != nil {
			return audit.Event{}, err
		}
		gone := map[string]any{}
		for k := range zoneFields(z) {
			gone[k] = nil
		}
		changes, err := audit.Diff(zoneFields(z), gone)
		return audit.Event{Action: policy.ActionZoneDelete, TargetAccountID: z.AccountID, TargetID: id, Changes: changes}, err
	})
}

// MarshalJSON writes the checked content (what an Idempotency-Key's
// request hash is made of).
func (c CheckedZone) MarshalJSON() ([]byte, error) { return json.Marshal(c.v) }
