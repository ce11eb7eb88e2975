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
	res     Result
}

func newImporter(db bun.IDB) *importer {
	return &importer{
		db:      db,
		byName:  map[string]*storage.Account{},
		byID:    map[int64]*storage.Account{},
		objects: map[string]*storage.Object{},
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
	a := new(storage.Account)
	err := im.db.NewSelect().Model(a).Where("a.username = ?", username).Scan(ctx)
	if err = storage.Translate(err); errors.Is(err, storage.ErrNotFound) {
		return nil, false, nil
	} else if err != nil {
		return nil, false, err
	}
	im.remember(a)
	return a, true, nil
}

// accountByID returns an account known to exist.
func (im *importer) accountByID(ctx context.Context, id int64) (*storage.Account, error) {
	if a, ok := im.byID[id]; ok {
		return a, nil
	}
	a := new(storage.Account)
	if err := im.db.NewSelect().Model(a).Where("a.id = ?", id).Scan(ctx); err != nil {
		return nil, storage.Translate(err)
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
	o := new(storage.Object)
	err := im.db.NewSelect().Model(o).Where("o.imei = ?", imei).Scan(ctx)
	if err = storage.Translate(err); errors.Is(err, storage.ErrNotFound) {
		return nil, false, nil
	} else if err != nil {
		return nil, false, err
	}
	im.objects[imei] = o
	return o, true, nil
}

// owner resolves the account that owns a record: it must exist and must not
// be a subaccount (a subaccount's rows belong to its parent).
func (im *importer) owner(ctx context.Context, ref recordRef, username string) (*storage.Account, error) {
	if username == "" {
		return nil, ref.errorf("account is required")
	}
	a, ok, err := im.lookupAccount(ctx, username)
	if err != nil {
		return nil, ref.dbError(err)
	}
	if !ok {
		return nil, ref.errorf("unknown account %q", username)
	}
	if a.Type == tenancy.Subaccount {
		return nil, ref.errorf("account %q is a subaccount; records belong to its parent", username)
	}
	return a, nil
}

// device resolves an IMEI that must exist.
func (im *importer) device(ctx context.Context, ref recordRef, imei string) (*storage.Object, error) {
	if imei == "" {
		return nil, ref.errorf("imei is required")
	}
	o, ok, err := im.lookupObject(ctx, imei)
	if err != nil {
		return nil, ref.dbError(err)
	}
	if !ok {
		return nil, ref.errorf("unknown imei %q", imei)
	}
	return o, nil
}

// exists reports whether a row of model matches the query built by where.
func (im *importer) exists(ctx context.Context, ref recordRef, model any, where func(*bun.SelectQuery) *bun.SelectQuery) (bool, error) {
	ok, err := where(im.db.NewSelect().Model(model)).Exists(ctx)
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
