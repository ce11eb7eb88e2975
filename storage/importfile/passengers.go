package importfile

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/fleetapi/fleetapi/storage"
)

// The passengers apply last.
var _ = declareSection(spec[importPassenger]{name: "passengers", after: "events", key: []string{"account", "passenger_name"}, load: loadPassenger})

// importPassenger is a record of the passengers section: every field of
// the model, its account by username; active unless it says otherwise;
// the database assigns passenger_id.
type importPassenger struct {
	storage.Passenger
	Account         string     `json:"account"`
	PassengerActive *bool      `json:"passenger_active"`
	PassengerID     dbAssigned `json:"passenger_id"`
}

// loadPassenger inserts a passenger, normalised as DESIGN §5 says. A
// record whose account and (trimmed) name exist is skipped.
func loadPassenger(ctx context.Context, im *importer, ref recordRef, p importPassenger) (bool, error) {
	acct, err := im.owner(ctx, ref, p.Account)
	if err != nil {
		return false, err
	}
	row := p.Passenger
	row.AccountID = acct.ID
	row.PassengerActive = p.PassengerActive == nil || *p.PassengerActive
	row.Normalize()
	if bad := row.Validate(); bad != nil {
		return false, ref.errorf("%s", fieldErrors(bad))
	}
	return im.insertNew(ctx, ref, &row, "p.account_id = ? AND p.passenger_name = ?", acct.ID, row.PassengerName)
}

// fieldErrors formats field → reason pairs in field order.
func fieldErrors(bad map[string]string) string {
	var parts []string
	for _, f := range slices.Sorted(maps.Keys(bad)) {
		parts = append(parts, fmt.Sprintf("%s: %s", f, bad[f]))
	}
	return strings.Join(parts, "; ")
}
