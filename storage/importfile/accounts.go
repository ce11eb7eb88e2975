package importfile

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/limits"
	"github.com/fleetapi/fleetapi/tenancy"
)

// The accounts apply first: every other section names its account.
var _ = declareSection(spec[importAccount]{
	name: "accounts", key: []string{"username"}, loadAll: loadAccounts, dump: dumpAccounts,
})

// importAccount is a record of the accounts section. A subaccount's
// objects are the devices granted to it (the grants section). RateLimit
// and Quotas are the account's own limits (docs/design.md §12: its budget in
// requests per minute, and its quota overrides, null for the platform
// default); CreatedAt, when set, keeps the creation time of an exported
// account.
type importAccount struct {
	Username        string         `json:"username"`
	Email           string         `json:"email"`
	Type            string         `json:"type"`
	Manager         string         `json:"manager,omitempty"`
	Active          *bool          `json:"active"`
	ReadOnly        bool           `json:"read_only"`
	AccountExpire   bool           `json:"account_expire"`
	AccountExpireDt *storage.Date  `json:"account_expire_dt"`
	Privileges      []string       `json:"privileges,omitempty"`
	Objects         []string       `json:"objects,omitempty"`
	RateLimit       *int           `json:"rate_limit,omitempty"`
	Quotas          *limits.Quotas `json:"quotas,omitempty"`
	CreatedAt       *time.Time     `json:"created_at,omitempty"`
	// Timezone is the account's IANA time zone (docs/design.md §14);
	// omitted: UTC.
	Timezone string `json:"timezone,omitempty"`
}

// loadAccounts inserts the accounts, each after its manager, whether the
// manager comes later in the file or already exists.
func loadAccounts(ctx context.Context, im *importer, recs []record[importAccount], n *Count) error {
	first := map[string]int{}
	for i, r := range recs {
		if _, dup := first[r.val.Username]; !dup {
			first[r.val.Username] = i
		}
	}
	if err := im.placeRoots(recs, first); err != nil {
		return err
	}
	for _, r := range recs {
		if err := checkAccount(r); err != nil {
			return err
		}
	}
	const (
		todo = iota
		visiting
		done
	)
	state := make([]int, len(recs))
	var visit func(i int) error
	visit = func(i int) error {
		switch state[i] {
		case done:
			return nil
		case visiting:
			return recs[i].ref.errorf("manager cycle through %q", recs[i].val.Manager)
		}
		state[i] = visiting
		r := recs[i]
		if j, ok := first[r.val.Manager]; ok {
			if err := visit(j); err != nil {
				return err
			}
		}
		if err := im.importAccount(ctx, r, n); err != nil {
			return err
		}
		state[i] = done
		return nil
	}
	for i := range recs {
		if err := visit(i); err != nil {
			return err
		}
	}
	return nil
}

// placeRoots gives the records whose manager is not in the file (first:
// the file's usernames) the manager im.place says: the account Under, or
// none (Top).
func (im *importer) placeRoots(recs []record[importAccount], first map[string]int) error {
	if im.place.Under == "" && !im.place.Top {
		return nil
	}
	if i, ok := first[im.place.Under]; ok && im.place.Under != "" {
		return recs[i].ref.errorf("--under %q: the account is in the file; name an account of the importing database", im.place.Under)
	}
	for i := range recs {
		if _, inFile := first[recs[i].val.Manager]; !inFile {
			recs[i].val.Manager = im.place.Under
		}
	}
	return nil
}

// checkAccount validates what an account record says on its own.
func checkAccount(r record[importAccount]) error {
	a, ref := r.val, r.ref
	switch {
	case a.Username == "":
		return ref.errorf("username is required")
	case storage.ValidUsername(a.Username) != nil:
		return ref.errorf("%v", storage.ValidUsername(a.Username))
	case !tenancy.AccountType(a.Type).Valid():
		return ref.errorf("type %q: want admin, manager, user or subaccount", a.Type)
	case a.Type == string(tenancy.Subaccount) && a.Manager == "":
		return ref.errorf("a subaccount needs a manager (its parent user)")
	case a.Type == string(tenancy.Admin) && a.Manager != "":
		return ref.errorf("an admin has no manager")
	case a.Manager == a.Username:
		return ref.errorf("an account cannot manage itself")
	case a.Timezone != "" && !storage.ValidTimezone(a.Timezone):
		return ref.errorf("timezone %q: want %s", a.Timezone, storage.TimezoneRule)
	case a.Email != "" && !storage.ValidEmail(a.Email):
		return ref.errorf("email %q is not a valid address", a.Email)
	case len(a.Objects) > 0 && a.Type != string(tenancy.Subaccount):
		return ref.errorf("objects are granted to subaccounts only")
	case len(a.Privileges) > 0 && a.Type != string(tenancy.Subaccount):
		return ref.errorf("privileges apply to subaccounts only")
	}
	for _, p := range a.Privileges {
		if p != "reports" && p != "event_notifications" {
			return ref.errorf("privilege %q: want reports or event_notifications", p)
		}
	}
	if a.RateLimit != nil && *a.RateLimit < 1 {
		return ref.errorf("rate_limit must be 1 or more, or null")
	}
	if a.Quotas != nil {
		if a.Type == string(tenancy.Admin) {
			return ref.errorf("an admin has no quotas")
		}
		for _, q := range limits.AllQuotas {
			if v := a.Quotas.Get(q); v != nil && *v < 0 {
				return ref.errorf("quotas.%s must be 0 or more, or null for the platform default", q)
			}
		}
	}
	return nil
}

// parentTypes are the account types that may manage an account of a type.
func parentTypes(t tenancy.AccountType) []tenancy.AccountType {
	switch t {
	case tenancy.Manager:
		return []tenancy.AccountType{tenancy.Admin}
	case tenancy.User:
		return []tenancy.AccountType{tenancy.Admin, tenancy.Manager}
	case tenancy.Subaccount:
		return []tenancy.AccountType{tenancy.User}
	}
	return nil
}

// importAccount inserts one account whose manager, if any, is already in
// the database, or skips it when the username exists.
func (im *importer) importAccount(ctx context.Context, r record[importAccount], n *Count) error {
	a, ref := r.val, r.ref
	row := &storage.Account{
		Username:        a.Username,
		Email:           a.Email,
		Type:            tenancy.AccountType(a.Type),
		Active:          a.Active == nil || *a.Active,
		ReadOnly:        a.ReadOnly,
		AccountExpire:   a.AccountExpire,
		AccountExpireDt: a.AccountExpireDt,
		Privileges:      storage.StringList(a.Privileges),
		RateLimit:       a.RateLimit,
		Timezone:        a.Timezone,
	}
	if row.Timezone == "" {
		row.Timezone = storage.DefaultTimezone
	}
	if a.Quotas != nil {
		row.SetOverrides(*a.Quotas)
	}
	if a.CreatedAt != nil {
		row.CreatedAt = *a.CreatedAt
	}
	if a.Manager != "" {
		mgr, ok, err := im.lookupAccount(ctx, a.Manager)
		if err != nil {
			return ref.dbError(err)
		}
		if !ok {
			return ref.errorf("unknown manager %q", a.Manager)
		}
		if !slices.Contains(parentTypes(row.Type), mgr.Type) {
			return ref.errorf("manager %q is a %s, which cannot manage a %s", a.Manager, mgr.Type, row.Type)
		}
		row.ManagerID = &mgr.ID
	}
	if _, ok, err := im.lookupAccount(ctx, a.Username); err != nil {
		return ref.dbError(err)
	} else if ok {
		n.Skipped++
		return nil
	}
	// Usernames are unique whatever the case (docs/design.md §9): another spelling
	// of an existing username (in the database or earlier in the file) is
	// refused, naming it, rather than left to the unique index.
	var other string
	err := im.db.NewSelect().TableExpr("accounts AS a").Column("a.username").
		Where("lower(normalize(a.username, NFC)) = lower(normalize(?, NFC))", a.Username).Limit(1).Scan(ctx, &other)
	switch err = storage.Translate(err); {
	case err == nil:
		return ref.errorf("username %q: the account %q exists; usernames are unique whatever the case", a.Username, other)
	case !errors.Is(err, storage.ErrNotFound):
		return ref.dbError(err)
	}
	if err := im.insert(ctx, ref, row); err != nil {
		return err
	}
	im.remember(row)
	n.Inserted++
	return nil
}

// dumpAccounts writes the subtree's accounts, each with its limits and,
// for a subaccount, the devices granted to it (the grants section). The
// root names its manager, which the export does not hold.
func dumpAccounts(ctx context.Context, ex *exporter, emit func(importAccount) error) error {
	var grants []storage.ObjectGrant
	if err := ex.db.NewSelect().Model(&grants).Where("og.subaccount_id = ANY(?)", pgdialect.Array(ex.ids)).
		Order("og.subaccount_id", "og.imei").Scan(ctx); err != nil {
		return err
	}
	granted := map[int64][]string{}
	for _, g := range grants {
		granted[g.SubaccountID] = append(granted[g.SubaccountID], g.IMEI)
	}
	ex.granted = len(grants)
	return eachRow(ctx, ex, "id", "a.id = ANY(?)", func(a *storage.Account) int64 { return a.ID }, func(a *storage.Account) error {
		rec := importAccount{
			Username: a.Username, Email: a.Email, Type: string(a.Type), Active: &a.Active, ReadOnly: a.ReadOnly,
			AccountExpire: a.AccountExpire, AccountExpireDt: a.AccountExpireDt, Privileges: a.Privileges,
			Objects: granted[a.ID], RateLimit: a.RateLimit, CreatedAt: &a.CreatedAt, Timezone: a.Timezone,
		}
		if q := a.Overrides(); q != (limits.Quotas{}) {
			rec.Quotas = &q
		}
		if a.ManagerID != nil {
			name, ok := ex.names[*a.ManagerID]
			if !ok {
				if err := ex.db.NewSelect().TableExpr("accounts AS m").Column("m.username").
					Where("m.id = ?", *a.ManagerID).Scan(ctx, &name); err != nil {
					return err
				}
			}
			rec.Manager = name
		}
		return emit(rec)
	})
}
