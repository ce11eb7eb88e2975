package importfile

import (
	"context"

	"github.com/fleetapi/fleetapi/storage"
)

// The grants apply after the devices they grant: they are the objects of
// the subaccount records of the accounts section, counted per device.
var _ = declareSection(spec[importAccount]{
	name: "grants", file: "accounts", after: "objects", key: []string{"username"}, loadAll: loadGrants,
})

// loadGrants grants each subaccount the devices its record lists; every
// device must belong to the subaccount's parent.
func loadGrants(ctx context.Context, im *importer, recs []record[importAccount], n *Count) error {
	for _, r := range recs {
		if len(r.val.Objects) == 0 {
			continue
		}
		ref := r.ref
		sub, ok, err := im.lookupAccount(ctx, r.val.Username)
		if err != nil {
			return ref.dbError(err)
		}
		if !ok || sub.ManagerID == nil {
			return ref.errorf("subaccount %q has no parent", r.val.Username)
		}
		parent, err := im.accountByID(ctx, *sub.ManagerID)
		if err != nil {
			return ref.dbError(err)
		}
		for _, imei := range r.val.Objects {
			o, err := im.device(ctx, ref, imei)
			if err != nil {
				return err
			}
			if o.AccountID != parent.ID {
				return ref.errorf("imei %q does not belong to parent %q", imei, parent.Username)
			}
			res, err := im.db.NewInsert().Model(&storage.ObjectGrant{SubaccountID: sub.ID, IMEI: imei}).
				On("CONFLICT DO NOTHING").Exec(ctx)
			if err != nil {
				return ref.dbError(err)
			}
			if k, _ := res.RowsAffected(); k > 0 {
				n.Inserted++
			} else {
				n.Skipped++
			}
		}
	}
	return nil
}
