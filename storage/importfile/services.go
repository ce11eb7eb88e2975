package importfile

import (
	"context"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/storage"
)

// importServices inserts the service records; each device must belong to
// the record's account. A record whose imei and name exist is skipped.
func (im *importer) importServices(ctx context.Context, f *importFile) error {
	for _, r := range f.Services {
		s, ref := r.val, r.ref
		if len(s.ServiceID) > 0 {
			return ref.errorf("service_id is assigned by the database")
		}
		acct, err := im.owner(ctx, ref, s.Account)
		if err != nil {
			return err
		}
		o, err := im.device(ctx, ref, s.IMEI)
		if err != nil {
			return err
		}
		if o.AccountID != acct.ID {
			return ref.errorf("imei %q belongs to another account than %q", s.IMEI, s.Account)
		}
		if s.Name == "" {
			return ref.errorf("name is required")
		}
		found, err := im.exists(ctx, ref, (*storage.Service)(nil), func(q *bun.SelectQuery) *bun.SelectQuery {
			return q.Where("s.imei = ? AND s.name = ?", s.IMEI, s.Name)
		})
		if err != nil {
			return err
		}
		if found {
			im.res.Services.Skipped++
			continue
		}
		row := s.Service
		row.AccountID = acct.ID
		row.Extra = s.Extra
		if err := im.insert(ctx, ref, &row); err != nil {
			return err
		}
		im.res.Services.Inserted++
	}
	return nil
}
