package storage

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/policy"
)

// Objects is the objects resource: GET /objects (docs/design.md §9), the devices
// the caller may see (a subaccount: those granted to it).
var Objects = declare[Object](counted)

// Object is a row of objects: a tracked device, owned by one account, with
// its current odometer (km) and engine hours (h) and the current state the
// newest accepted reading set (docs/design.md §14: last_time, position,
// speed, heading, altitude, ignition, attributes; null, attributes
// included, while the device has never reported). It is also the wire form
// of GET /objects; the import file has its own record (importfile), which
// names the owner by username and takes no id. The rules' evaluation state
// (objects.rule_state) is storage's alone: never read into an Object, never
// on the wire.
type Object struct {
	bun.BaseModel `bun:"table:objects,alias:o"`

	ID          int64          `bun:"id,pk,autoincrement" json:"id"`
	IMEI        string         `bun:"imei,notnull" json:"imei" list:"sort,filter,search=1"`
	AccountID   int64          `bun:"account_id,notnull" json:"account_id" list:"filter"`
	Name        string         `bun:"name,notnull" json:"name" list:"sort,filter,search=2"`
	Odometer    int64          `bun:"odometer,notnull" json:"odometer"`
	EngineHours int64          `bun:"engine_hours,notnull" json:"engine_hours"`
	LastTime    *time.Time     `bun:"last_time,nullzero" json:"last_time"`
	Lat         *float64       `bun:"lat,nullzero" json:"lat"`
	Lon         *float64       `bun:"lon,nullzero" json:"lon"`
	Speed       *float64       `bun:"speed,nullzero" json:"speed"`
	Heading     *float64       `bun:"heading,nullzero" json:"heading"`
	Altitude    *float64       `bun:"altitude,nullzero" json:"altitude"`
	Ignition    *bool          `bun:"ignition,nullzero" json:"ignition"`
	Attributes  map[string]any `bun:"attributes,type:jsonb,nullzero" json:"attributes"`
}

var _ bun.AfterScanRowHook = (*Object)(nil)

// AfterScanRow shows the attributes of a device that never reported as
// null, like the other state fields (the column's default is {}).
func (o *Object) AfterScanRow(context.Context) error {
	if o.LastTime == nil {
		o.Attributes = nil
	} else if o.Attributes == nil {
		o.Attributes = map[string]any{}
	}
	return nil
}

// ObjectGrant is a row of object_grants: a device granted to a subaccount.
type ObjectGrant struct {
	bun.BaseModel `bun:"table:object_grants,alias:og"`

	SubaccountID int64  `bun:"subaccount_id,pk"`
	IMEI         string `bun:"imei,pk"`
}

// ObjectByID returns the device with the given id, its current state
// included, when scope (an objects scope, the scope of GET /objects: a
// subaccount's, the devices granted to it) admits it. A device that does
// not exist and one outside the scope are both ErrNotFound. It may run on
// a read replica (Store.WithReplicas), so the state may lag the newest
// reading by the replica's delay. It returns policy.ErrScope for a scope
// of another resource or one storage did not compile, and ErrUnavailable
// when the database cannot be reached.
func (s *Store) ObjectByID(ctx context.Context, scope policy.Scope, id int64) (Object, error) {
	var o Object
	err := s.read(ctx, func(ctx context.Context, rs *Store) error {
		q, err := rs.scopedSelect(scope, Objects.Descriptor, &o)
		if err != nil {
			return err
		}
		// id is an int64 the api parsed: a data exception is the server's.
		return translateOwn(q.Where(Objects.col("id")+" = ?", id).Limit(1).Scan(ctx))
	})
	if err != nil {
		return Object{}, err
	}
	return o, nil
}
