package importfile

import (
	"context"
	"errors"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/tenancy"
)

// importer applies one import file inside a transaction, caching the
// accounts and objects it has looked up or inserted.
type importer struct {
	db      bun.IDB
	byName  map[string]*storage.Account
	byID    map[int64]*storage.Account
	objects map[string]*storage.Object
	// passengerNames counts the passenger records of the file per account
	// and name (loadPassenger).
	passengerNames map[string]int
	// zoneNames counts the zone records of the file per account and name
	// (loadZone).
	zoneNames map[string]int
	// place says where the file's root accounts go (LoadPlaced).
	place Placement
}

func newImporter(db bun.IDB) *importer {
	return &importer{
		db:      db,
		byName:  map[string]*storage.Account{},
		byID:    map[int64]*storage.Account{},
		objects: map[string]*storage.Object{},

		passengerNames: map[string]int{},
		zoneNames:      map[string]int{},
	}
}

func (im *importer) remember(a *storage.Account) {
	im.byName[a.Username] = a
	im.byID[a.ID] = a
}

// lookupAccount returns the account with that username; ok is false when
// there is none.
func (im *importer) lookupAccount(ctx context.Context, username string) (*storage.Account, bool, error) {
	if a, ok := im.byName[username]; ok {
		return a, true, nil
	}
	a, ok, err := findOne[storage.Account](ctx, im.db, "a.username = ?", username)
	if ok {
		im.remember(a)
	}
	return a, ok, err
}

// accountByID returns an account known to exist.
func (im *importer) accountByID(ctx context.Context, id int64) (*storage.Account, error) {
	if a, ok := im.byID[id]; ok {
		return a, nil
	}
	a, ok, err := findOne[storage.Account](ctx, im.db, "a.id = ?", id)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, storage.ErrNotFound
	}
	im.remember(a)
	return a, nil
}

// lookupObject returns the device with that IMEI; ok is false when there
// is none.
func (im *importer) lookupObject(ctx context.Context, imei string) (*storage.Object, bool, error) {
	if o, ok := im.objects[imei]; ok {
		return o, true, nil
	}
	o, ok, err := findOne[storage.Object](ctx, im.db, "o.imei = ?", imei)
	if ok {
		im.objects[imei] = o
	}
	return o, ok, err
}

// findOne returns the row of the model T that where selects; ok is false
// when there is none.
func findOne[T any](ctx context.Context, db bun.IDB, where string, arg any) (*T, bool, error) {
	row := new(T)
	err := storage.Translate(db.NewSelect().Model(row).Where(where, arg).Scan(ctx))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, false, nil
	}
	return row, err == nil, err
}

// account resolves the account a record names: it must exist.
func (im *importer) account(ctx context.Context, ref recordRef, username string) (*storage.Account, error) {
	return resolve(ctx, ref, "account", username, im.lookupAccount)
}

// owner resolves the account that owns a record: it must exist and must not
// be a subaccount (a subaccount's rows belong to its parent).
func (im *importer) owner(ctx context.Context, ref recordRef, username string) (*storage.Account, error) {
	a, err := im.account(ctx, ref, username)
	if err == nil && a.Type == tenancy.Subaccount {
		return nil, ref.errorf("account %q is a subaccount; records belong to its parent", username)
	}
	return a, err
}

// device resolves an IMEI that must exist.
func (im *importer) device(ctx context.Context, ref recordRef, imei string) (*storage.Object, error) {
	return resolve(ctx, ref, "imei", imei, im.lookupObject)
}

// resolve finds what a record refers to by name (its what): the name is
// required and must exist.
func resolve[T any](ctx context.Context, ref recordRef, what, name string, lookup func(context.Context, string) (*T, bool, error)) (*T, error) {
	if name == "" {
		return nil, ref.errorf("%s is required", what)
	}
	v, ok, err := lookup(ctx, name)
	if err != nil {
		return nil, ref.dbError(err)
	}
	if !ok {
		return nil, ref.errorf("unknown %s %q", what, name)
	}
	return v, nil
}

// namedOwner resolves the owner of a record named within its account (a
// report definition, an event rule) and checks its name and its devices.
func (im *importer) namedOwner(ctx context.Context, ref recordRef, username, name string, imeis []string) (*storage.Account, error) {
	acct, err := im.owner(ctx, ref, username)
	if err != nil {
		return nil, err
	}
	if name == "" {
		return nil, ref.errorf("name is required")
	}
	return acct, im.checkDevices(ctx, ref, acct, imeis)
}

// checkDevices checks that every IMEI of a record is a device the account
// sees: its own, one of an account it manages, or any for an admin.
func (im *importer) checkDevices(ctx context.Context, ref recordRef, acct *storage.Account, imeis []string) error {
	for _, imei := range imeis {
		o, err := im.device(ctx, ref, imei)
		if err != nil {
			return err
		}
		if o.AccountID == acct.ID || acct.Type == tenancy.Admin {
			continue
		}
		owner, err := im.accountByID(ctx, o.AccountID)
		if err != nil {
			return ref.dbError(err)
		}
		if owner.ManagerID == nil || *owner.ManagerID != acct.ID {
			return ref.errorf("imei %q is not a device of account %q", imei, acct.Username)
		}
	}
	return nil
}

// exists reports whether a row of the model's table matches where (a
// record's natural key; ?TableAlias names the table).
func (im *importer) exists(ctx context.Context, ref recordRef, model any, where string, args ...any) (bool, error) {
	ok, err := im.db.NewSelect().Model(model).Where(where, args...).Exists(ctx)
	if err != nil {
		return false, ref.dbError(err)
	}
	return ok, nil
}

// insert inserts a row, filling in what the database returns.
func (im *importer) insert(ctx context.Context, ref recordRef, model any) error {
	if _, err := im.db.NewInsert().Model(model).Returning("*").Exec(ctx); err != nil {
		return ref.dbError(err)
	}
	return nil
}

// byAccountAndName is the natural key of a record named within its
// account, for insertNew.
const byAccountAndName = "?TableAlias.account_id = ? AND ?TableAlias.name = ?"

// insertNew inserts a row unless one matching where (its natural key)
// exists: inserted is false when it skipped the record.
func (im *importer) insertNew(ctx context.Context, ref recordRef, model any, where string, args ...any) (inserted bool, err error) {
	found, err := im.exists(ctx, ref, model, where, args...)
	if err != nil || found {
		return false, err
	}
	if err := im.insert(ctx, ref, model); err != nil {
		return false, err
	}
	return true, nil
}
