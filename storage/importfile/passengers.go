package importfile

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/storage"
)

// importPassengers inserts the passengers, normalised as DESIGN §5 says. A
// record whose account and (trimmed) name exist is skipped.
func (im *importer) importPassengers(ctx context.Context, f *importFile) error {
	for _, r := range f.Passengers {
		p, ref := r.val, r.ref
		if len(p.PassengerID) > 0 {
			return ref.errorf("passenger_id is assigned by the database")
		}
		acct, err := im.owner(ctx, ref, p.Account)
		if err != nil {
			return err
		}
		row := p.Passenger
		row.AccountID = acct.ID
		row.PassengerActive = p.PassengerActive == nil || *p.PassengerActive
		row.Normalize()
		if bad := row.Validate(); bad != nil {
			return ref.errorf("%s", fieldErrors(bad))
		}
		found, err := im.exists(ctx, ref, (*storage.Passenger)(nil), func(q *bun.SelectQuery) *bun.SelectQuery {
			return q.Where("p.account_id = ? AND p.passenger_name = ?", acct.ID, row.PassengerName)
		})
		if err != nil {
			return err
		}
		if found {
			im.res.Passengers.Skipped++
			continue
		}
		if err := im.insert(ctx, ref, &row); err != nil {
			return err
		}
		im.res.Passengers.Inserted++
	}
	return nil
}

// fieldErrors formats field → reason pairs in field order.
func fieldErrors(bad map[string]string) string {
	fields := make([]string, 0, len(bad))
	for f := range bad {
		fields = append(fields, f)
	}
	sort.Strings(fields)
	parts := make([]string, len(fields))
	for i, f := range fields {
		parts[i] = fmt.Sprintf("%s: %s", f, bad[f])
	}
	return strings.Join(parts, "; ")
}
