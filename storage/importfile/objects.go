package importfile

import (
	"context"

	"github.com/fleetapi/fleetapi/storage"
)

// importObjects inserts the devices. An IMEI that exists is skipped, unless
// it belongs to another account than the record says.
func (im *importer) importObjects(ctx context.Context, f *importFile) error {
	for _, r := range f.Objects {
		o, ref := r.val, r.ref
		if o.IMEI == "" {
			return ref.errorf("imei is required")
		}
		acct, err := im.owner(ctx, ref, o.Account)
		if err != nil {
			return err
		}
		if o.Odometer < 0 || o.EngineHours < 0 {
			return ref.errorf("odometer and engine_hours must not be negative")
		}
		if old, ok, err := im.lookupObject(ctx, o.IMEI); err != nil {
			return ref.dbError(err)
		} else if ok {
			if old.AccountID != acct.ID {
				return ref.errorf("imei %q already belongs to another account", o.IMEI)
			}
			im.res.Objects.Skipped++
			continue
		}
		row := &storage.Object{IMEI: o.IMEI, AccountID: acct.ID, Name: o.Name, Odometer: o.Odometer, EngineHours: o.EngineHours}
		if err := im.insert(ctx, ref, row); err != nil {
			return err
		}
		im.objects[row.IMEI] = row
		im.res.Objects.Inserted++
	}
	return nil
}

// importGrants grants each subaccount the devices its record lists; every
// device must belong to the subaccount's parent.
func (im *importer) importGrants(ctx context.Context, f *importFile) error {
	for _, r := range f.Accounts {
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
			if n, _ := res.RowsAffected(); n > 0 {
				im.res.Grants.Inserted++
			} else {
				im.res.Grants.Skipped++
			}
		}
	}
	return nil
}
