package storage

import (
	"context"
	"time"

	"github.com/fleetapi/fleetapi/policy"
)

// Position is one stored reading of a device (positions), the wire form of
// GET /objects/{id}/positions (docs/design.md §14). A field the reading did
// not report is null.
type Position struct {
	Time        time.Time      `bun:"time" json:"time"`
	Lat         *float64       `bun:"lat" json:"lat"`
	Lon         *float64       `bun:"lon" json:"lon"`
	Speed       *float64       `bun:"speed" json:"speed"`
	Heading     *float64       `bun:"heading" json:"heading"`
	Altitude    *float64       `bun:"altitude" json:"altitude"`
	Odometer    *float64       `bun:"odometer" json:"odometer"`
	EngineHours *float64       `bun:"engine_hours" json:"engine_hours"`
	Ignition    *bool          `bun:"ignition" json:"ignition"`
	Attributes  map[string]any `bun:"attributes,type:jsonb" json:"attributes"`
}

// PositionsRequest is one page of a device's history: from (inclusive)
// to (exclusive), after (exclusive, the keyset of the page before; zero:
// from the start), at most PerPage rows, time ascending.
type PositionsRequest struct {
	ObjectID int64
	From, To time.Time
	After    *time.Time
	PerPage  int
}

// Positions returns a page of the device's positions and whether more
// follow. The device must be in scope, the caller's objects data scope (a
// subaccount: the devices granted to it): ErrNotFound otherwise, the same
// as a device that does not exist.
func (s *Store) Positions(ctx context.Context, scope policy.Scope, req PositionsRequest) (page []Position, more bool, err error) {
	c, err := s.compiledFor(scope, Objects.Descriptor)
	if err != nil {
		return nil, false, err
	}
	n, err := s.selectIn(Objects.Descriptor, c.page, (*Object)(nil)).Where(Objects.col("id")+" = ?", req.ObjectID).Count(ctx)
	if err != nil {
		return nil, false, translateOwn(err)
	}
	if n == 0 {
		return nil, false, ErrNotFound
	}
	from := req.From
	q := s.db.NewSelect().TableExpr("positions").
		ColumnExpr("time, lat, lon, speed, heading, altitude, odometer, engine_hours, ignition, attributes").
		Where("object_id = ?", req.ObjectID).Where("time >= ?", from).Where("time < ?", req.To)
	if req.After != nil {
		q = q.Where("time > ?", *req.After)
	}
	page = []Position{}
	if err := q.OrderExpr("time").Limit(int64(req.PerPage+1)).Scan(ctx, &page); err != nil {
		return nil, false, translateOwn(err)
	}
	if len(page) > req.PerPage {
		return page[:req.PerPage], true, nil
	}
	return page, false, nil
}
