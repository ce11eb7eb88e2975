package importfile

import (
	"context"

	"github.com/fleetapi/fleetapi/storage"
)

// The devices apply after their accounts.
var _ = declareSection(spec[importObject]{name: "objects", after: "accounts", key: []string{"imei"}, load: loadObject, dump: dumpObjects})

// importObject is a record of the objects section: a device, named by its
// IMEI, and its owner by username.
type importObject struct {
	IMEI        string `json:"imei"`
	Account     string `json:"account"`
	Name        string `json:"name"`
	Odometer    int64  `json:"odometer"`
	EngineHours int64  `json:"engine_hours"`
}

// loadObject inserts a device. An IMEI that exists is skipped, unless it
// belongs to another account than the record says.
func loadObject(ctx context.Context, im *importer, ref recordRef, o importObject) (bool, error) {
	if o.IMEI == "" {
		return false, ref.errorf("imei is required")
	}
	acct, err := im.owner(ctx, ref, o.Account)
	if err != nil {
		return false, err
	}
	if o.Odometer < 0 || o.EngineHours < 0 {
		return false, ref.errorf("odometer and engine_hours must not be negative")
	}
	if old, ok, err := im.lookupObject(ctx, o.IMEI); err != nil {
		return false, ref.dbError(err)
	} else if ok {
		if old.AccountID != acct.ID {
			return false, ref.errorf("imei %q already belongs to another account", o.IMEI)
		}
		return false, nil
	}
	row := &storage.Object{IMEI: o.IMEI, AccountID: acct.ID, Name: o.Name, Odometer: o.Odometer, EngineHours: o.EngineHours}
	if err := im.insert(ctx, ref, row); err != nil {
		return false, err
	}
	im.objects[row.IMEI] = row
	return true, nil
}

// dumpObjects writes the subtree's devices.
func dumpObjects(ctx context.Context, ex *exporter, emit func(importObject) error) error {
	return eachRow(ctx, ex, "id", "o.account_id = ANY(?)", func(o *storage.Object) int64 { return o.ID }, func(o *storage.Object) error {
		return emit(importObject{IMEI: o.IMEI, Account: ex.names[o.AccountID], Name: o.Name, Odometer: o.Odometer, EngineHours: o.EngineHours})
	})
}
