package importfile

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/fleetapi/fleetapi/storage"
)

// The passengers apply last.
var _ = declareSection(spec[importPassenger]{name: "passengers", after: "events", key: []string{"account", "passenger_name"}, load: loadPassenger, dump: dumpPassengers})

// importPassenger is a record of the passengers section: every field of
// the model, its account by username; active unless it says otherwise;
// the database assigns passenger_id; created_at, when set, keeps an
// exported passenger's creation time.
type importPassenger struct {
	storage.Passenger
	Account         string     `json:"account"`
	PassengerActive *bool      `json:"passenger_active"`
	CreatedAt       *time.Time `json:"created_at,omitempty"`
	PassengerID     dbAssigned `json:"passenger_id,omitzero"`
}

// loadPassenger inserts a passenger, checked as every passenger to create
// (storage.CheckPassenger: normalised and validated as docs/design.md §5 says).
// Passenger names are not unique in an account, so the natural key counts
// too: the k-th record of an account and (trimmed) name in the file is
// skipped when the account already has k passengers of that name, which
// keeps a re-import from adding anything and a file with two passengers
// of one name (an export) loading both.
func loadPassenger(ctx context.Context, im *importer, ref recordRef, p importPassenger) (bool, error) {
	acct, err := im.owner(ctx, ref, p.Account)
	if err != nil {
		return false, err
	}
	row := p.Passenger
	row.AccountID = acct.ID
	row.PassengerActive = p.PassengerActive == nil || *p.PassengerActive
	checked, err := storage.CheckPassenger(row)
	var bad storage.InvalidFields
	if errors.As(err, &bad) {
		return false, ref.errorf("%s", fieldErrors(bad))
	} else if err != nil {
		return false, err
	}
	row = checked.Passenger()
	if p.CreatedAt != nil {
		row.CreatedAt = *p.CreatedAt
	}
	key := fmt.Sprintf("%d\x00%s", acct.ID, row.PassengerName)
	im.passengerNames[key]++
	var have int
	if err := im.db.NewSelect().Model((*storage.Passenger)(nil)).ColumnExpr("count(*)").
		Where("p.account_id = ? AND p.passenger_name = ?", acct.ID, row.PassengerName).Scan(ctx, &have); err != nil {
		return false, ref.dbError(err)
	}
	if have >= im.passengerNames[key] {
		return false, nil
	}
	return true, im.insert(ctx, ref, &row)
}

// dumpPassengers writes the subtree's passengers.
func dumpPassengers(ctx context.Context, ex *exporter, emit func(importPassenger) error) error {
	return eachRow(ctx, ex, "passenger_id", "p.account_id = ANY(?)", func(p *storage.Passenger) int64 { return p.PassengerID }, func(p *storage.Passenger) error {
		return emit(importPassenger{Passenger: *p, Account: ex.names[p.AccountID], PassengerActive: &p.PassengerActive, CreatedAt: &p.CreatedAt})
	})
}

// fieldErrors formats field → reason pairs in field order.
func fieldErrors(bad map[string]string) string {
	var parts []string
	for _, f := range slices.Sorted(maps.Keys(bad)) {
		parts = append(parts, fmt.Sprintf("%s: %s", f, bad[f]))
	}
	return strings.Join(parts, "; ")
}
