package storage_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/schema"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/tenancy"
)

// nasty are adversarial fragments for names and device ids: quotes,
// backslashes, LIKE metacharacters, array-literal syntax, SQL, unicode.
var nasty = []string{
	`O'Brien`, `back\slash`, `50% off`, `under_score`, `"quoted"`, `Ünïcödé ✓`, `日本語`, `{a,b}`,
	`NULL`, `emoji 🚚`, "tab\tx", `semi;colon --`, `' OR 1=1 --`, `\'`, `%_%`, `a,b`, ` spaced `, `$1`, `?`,
}

// worldAccount is an account of the differential test's world.
type worldAccount struct {
	id        int64
	typ       tenancy.AccountType
	managerID int64 // 0: none
}

// worldRow is a row of a tenant table: its id, owner and devices (one for
// a row with an imei column, the list of an imei text[] column, none
// without one).
type worldRow struct {
	id      int64
	account int64
	imeis   []string
}

// world is what the differential test stored, known independently of SQL.
type world struct {
	accounts []worldAccount
	byID     map[int64]worldAccount
	byType   map[tenancy.AccountType][]worldAccount
	devices  map[int64][]string // owner → imeis
	allIMEIs []string
	grants   map[int64]map[string]bool // subaccount → granted imeis
	rows     map[string][]worldRow     // resource → rows
	imeiKind map[string]imeiKind       // resource → how its rows name devices
	// objects are the devices stored by buildWorld, devicesTable their
	// table; built holds each table's largest id once the world is built.
	objects      []storage.Object
	devicesTable string
	built        map[string]int64
	// fresh numbers the rows the counter tests add (freshRows), from far
	// above the world's, so that their names (rowName) are unique.
	fresh atomic.Int64
}

// buildWorld stores ≥3 tenants of every account type, devices, grants
// (none, partial, full, foreign) and rows with adversarial values.
func buildWorld(t *testing.T, db bun.IDB, r *rand.Rand) *world {
	t.Helper()
	ctx := context.Background()
	w := &world{byID: map[int64]worldAccount{}, byType: map[tenancy.AccountType][]worldAccount{},
		devices: map[int64][]string{}, grants: map[int64]map[string]bool{}, rows: map[string][]worldRow{}}
	n := 0
	add := func(typ tenancy.AccountType, manager int64) worldAccount {
		n++
		a := &storage.Account{Username: fmt.Sprintf("%s-%d-%s", typ, n, nasty[n%len(nasty)]), Type: typ, Active: true}
		if manager != 0 {
			a.ManagerID = &manager
		}
		if _, err := db.NewInsert().Model(a).Exec(ctx); err != nil {
			t.Fatalf("account: %v", err)
		}
		wa := worldAccount{id: a.ID, typ: typ, managerID: manager}
		w.accounts = append(w.accounts, wa)
		w.byID[wa.id] = wa
		w.byType[typ] = append(w.byType[typ], wa)
		return wa
	}
	// The odd shapes below (a manager under a manager, a subaccount under a
	// manager) are outside the fixed levels the database now enforces; the
	// scopes must still answer for a database that holds them, as one older
	// than migration 20261220000001 could (it refuses to upgrade it, but a
	// scope must never leak on one), so they are written behind the
	// trigger's back.
	if _, err := db.ExecContext(ctx, "ALTER TABLE accounts DISABLE TRIGGER accounts_fixed_levels"); err != nil {
		t.Fatal(err)
	}
	admin := add(tenancy.Admin, 0)
	add(tenancy.Admin, 0)
	var managers []worldAccount
	for i := range 4 {
		boss := int64(0)
		if i%2 == 0 {
			boss = admin.id
		}
		managers = append(managers, add(tenancy.Manager, boss))
	}
	managers = append(managers, add(tenancy.Manager, managers[0].id)) // a manager under a manager
	var users []worldAccount
	for _, m := range managers {
		for range 2 + r.IntN(3) {
			users = append(users, add(tenancy.User, m.id))
		}
	}
	users = append(users, add(tenancy.User, 0), add(tenancy.User, 0), add(tenancy.User, admin.id))
	var subs []worldAccount
	for _, u := range users {
		for range r.IntN(4) {
			subs = append(subs, add(tenancy.Subaccount, u.id))
		}
	}
	subs = append(subs, add(tenancy.Subaccount, managers[1].id)) // a subaccount under a manager
	if _, err := db.ExecContext(ctx, "ALTER TABLE accounts ENABLE TRIGGER accounts_fixed_levels"); err != nil {
		t.Fatal(err)
	}

	// Devices: every user, most managers and an admin own some.
	var objects []storage.Object
	for _, a := range w.accounts {
		if a.typ == tenancy.Subaccount || a.typ == tenancy.Admin && a.id != admin.id {
			continue
		}
		for range 1 + r.IntN(4) {
			imei := deviceID(len(objects), r)
			objects = append(objects, storage.Object{IMEI: imei, AccountID: a.id, Name: "Truck " + imei})
			w.devices[a.id] = append(w.devices[a.id], imei)
			w.allIMEIs = append(w.allIMEIs, imei)
		}
	}
	if _, err := db.NewInsert().Model(&objects).Exec(ctx); err != nil {
		t.Fatalf("objects: %v", err)
	}

	// Grants: none, some, all of the parent's devices, sometimes a
	// device of another account.
	var grants []storage.ObjectGrant
	for _, s := range subs {
		g := map[string]bool{}
		parent := w.devices[s.managerID]
		switch r.IntN(4) {
		case 0: // none
		case 1:
			for _, d := range parent {
				if r.IntN(2) == 0 {
					g[d] = true
				}
			}
		default:
			for _, d := range parent {
				g[d] = true
			}
		}
		if r.IntN(5) == 0 {
			g[w.allIMEIs[r.IntN(len(w.allIMEIs))]] = true
		}
		w.grants[s.id] = g
		for d := range g {
			grants = append(grants, storage.ObjectGrant{SubaccountID: s.id, IMEI: d})
		}
	}
	if len(grants) > 0 {
		if _, err := db.NewInsert().Model(&grants).Exec(ctx); err != nil {
			t.Fatalf("grants: %v", err)
		}
	}
	w.insertRows(t, db, r, objects)
	return w
}

// insertRows stores about 320 rows of every declared resource but the
// devices (stored above), built from the descriptor alone (genericRow),
// then reads every resource's rows back (readRows): a resource declared
// in storage is in the world without code here. Each resource's rows are
// drawn from a stream of its own (resourceRand), and r gives one draw
// whatever the resources are: declaring a resource changes no other
// resource's rows, nor anything the caller draws from r afterwards.
func (w *world) insertRows(t *testing.T, db bun.IDB, r *rand.Rand, objects []storage.Object) {
	t.Helper()
	ctx := context.Background()
	const perTable = 320
	seed := r.Uint64()
	w.objects = objects
	w.devicesTable = db.Dialect().Tables().Get(reflect.TypeFor[storage.Object]()).Name
	w.imeiKind = map[string]imeiKind{}
	w.built = map[string]int64{}
	for _, d := range storage.Descriptors() {
		table := db.Dialect().Tables().Get(d.ModelType())
		w.imeiKind[string(d.Resource())] = imeiKindOf(table)
		if d.Table() == w.devicesTable {
			continue
		}
		rr := resourceRand(seed, d.Resource())
		rows := reflect.MakeSlice(reflect.SliceOf(d.ModelType()), perTable, perTable)
		for i := range perTable {
			owner, device := w.rowOwnerAndDevice(rr, table)
			w.genericRow(rr, d, table, rows.Index(i), i, owner, device)
			if complete, ok := completeRow[d.Table()]; ok {
				complete(rr, rows.Index(i))
			}
		}
		ptr := reflect.New(rows.Type())
		ptr.Elem().Set(rows)
		if _, err := db.NewInsert().Model(ptr.Interface()).Exec(ctx); err != nil {
			t.Fatalf("insert %s rows built from the descriptor: %v (a column the world cannot fill generically?)", d.Resource(), err)
		}
	}
	for _, d := range storage.Descriptors() {
		rows := w.readRows(t, db, d)
		w.rows[string(d.Resource())] = rows
		if len(rows) > 0 {
			w.built[d.Table()] = rows[len(rows)-1].id
		}
	}
}

// completeRow completes, per table, what genericRow cannot fill from the
// field kinds: the columns a CHECK relates to each other (a zone's kind
// and its geometry).
var completeRow = map[string]func(r *rand.Rand, row reflect.Value){
	"zones": func(r *rand.Rand, row reflect.Value) {
		z := row.Addr().Interface().(*storage.Zone)
		lat, lon, radius := r.Float64()*180-90, r.Float64()*360-180, 1+r.Float64()*1000
		z.Kind, z.CenterLat, z.CenterLon, z.RadiusM = "circle", &lat, &lon, &radius
	},
}

// resourceRand is the random stream of one resource: seeded by seed and
// the resource's name, so that it does not depend on which other
// resources are declared, nor in which order.
func resourceRand(seed uint64, resource policy.Resource) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(resource))
	return rand.New(rand.NewPCG(seed, h.Sum64()))
}

// imeiKind says how a resource names devices: not at all, one (imei
// text) or a list (imei text[]).
type imeiKind int

const (
	imeiNone imeiKind = iota
	imeiScalar
	imeiList
)

func imeiKindOf(table *schema.Table) imeiKind {
	f, ok := table.FieldMap["imei"]
	switch {
	case !ok:
		return imeiNone
	case f.IndirectType.Kind() == reflect.String:
		return imeiScalar
	default:
		return imeiList
	}
}

// rowOwnerAndDevice picks the owner of a new row of table: for a row
// naming one device, a device of the world and its owner; otherwise
// rowOwner.
func (w *world) rowOwnerAndDevice(r *rand.Rand, table *schema.Table) (owner int64, device string) {
	if imeiKindOf(table) == imeiScalar {
		o := w.objects[r.IntN(len(w.objects))]
		return o.AccountID, o.IMEI
	}
	return w.rowOwner(r), ""
}

// genericRow fills row i of resource d, owned by owner, from the field
// kinds: account_id is owner; a row naming one device names device (which
// owner must own; for the devices table, a new device id), a list of
// devices is deviceList of the owner; the searched and name fields
// adversarial and unique per row (by i), the other booleans and integers
// of the list random, everything else the zero value that the model's
// hooks and the column defaults complete.
func (w *world) genericRow(r *rand.Rand, d *storage.Descriptor, table *schema.Table, row reflect.Value, i int, owner int64, device string) {
	for _, f := range table.Fields {
		v := f.Value(row)
		listed, isListed := d.Field(f.Name)
		switch {
		case f.IsPK:
		case f.Name == "account_id":
			v.SetInt(owner)
		case f.Name == "imei":
			if imeiKindOf(table) == imeiList {
				v.Set(reflect.ValueOf(w.deviceList(r, owner)))
			} else {
				v.SetString(device)
			}
		case f.IndirectType.Kind() == reflect.String && !f.IsPtr && (isListed && listed.Search || strings.Contains(f.Name, "name")):
			v.SetString(truncate(rowName(i)+" "+nasty[r.IntN(len(nasty))], 100))
		case f.Name == "url" && f.IndirectType.Kind() == reflect.String && !f.IsPtr:
			// a webhook's endpoint: never empty (CHECK url <> '')
			v.SetString(fmt.Sprintf("https://hook-%d.example/", i))
		case f.Name == "type" && f.IndirectType.Kind() == reflect.String && !f.IsPtr:
			// a kind that is not searched (notifications): never empty (CHECK type <> '')
			v.SetString(fmt.Sprintf("type-%d", r.IntN(5)))
		case !isListed || f.IsPtr:
		case listed.Kind == storage.KindBool:
			v.SetBool(r.IntN(2) == 0)
		case listed.Kind == storage.KindInt || listed.Kind == storage.KindInt32:
			v.SetInt(r.Int64N(1000))
		}
	}
}

// readRows reads the id, owner and devices of every row of resource d
// back from the database (a raw query: the world knows its rows without a
// scope).
func (w *world) readRows(t *testing.T, db bun.IDB, d *storage.Descriptor) []worldRow {
	t.Helper()
	devices := `'{}'::text[]`
	switch w.imeiKind[string(d.Resource())] {
	case imeiScalar:
		devices = `ARRAY["imei"]`
	case imeiList:
		devices = `"imei"`
	}
	var rows []struct {
		ID      int64    `bun:"id"`
		Account int64    `bun:"account_id"`
		IMEIs   []string `bun:"imeis,array"`
	}
	if err := db.NewRaw(`SELECT ? AS id, "account_id", `+devices+` AS imeis FROM ? ORDER BY 1`,
		bun.Ident(d.ID().Name), bun.Ident(d.Table())).Scan(context.Background(), &rows); err != nil {
		t.Fatalf("read the %s rows back: %v", d.Resource(), err)
	}
	out := make([]worldRow, len(rows))
	for i, x := range rows {
		out[i] = worldRow{id: x.ID, account: x.Account, imeis: x.IMEIs}
	}
	return out
}

// rowOwner picks the owner of a row that names no device or a list of
// them: mostly a user, sometimes any account.
func (w *world) rowOwner(r *rand.Rand) int64 {
	if r.IntN(10) < 7 {
		users := w.byType[tenancy.User]
		return users[r.IntN(len(users))].id
	}
	return w.accounts[r.IntN(len(w.accounts))].id
}

// deviceList is a report's or event rule's device list: empty, some or all
// of the owner's devices, with another account's device, an unknown
// device, or duplicates.
func (w *world) deviceList(r *rand.Rand, owner int64) storage.StringList {
	own := w.devices[owner]
	out := storage.StringList{}
	pickOwn := func() {
		for _, d := range own {
			if r.IntN(2) == 0 {
				out = append(out, d)
			}
		}
	}
	switch r.IntN(8) {
	case 0: // empty
	case 1:
		out = append(out, own...)
	case 2:
		pickOwn()
		out = append(out, w.allIMEIs[r.IntN(len(w.allIMEIs))])
	case 3:
		pickOwn()
		out = append(out, "unknown-"+nasty[r.IntN(len(nasty))])
	case 4:
		if len(own) > 0 {
			d := own[r.IntN(len(own))]
			out = append(out, d, d)
		}
	default:
		if len(own) > 0 {
			out = append(out, own[r.IntN(len(own))])
		}
		pickOwn()
	}
	return out
}

// deviceID is a device id: digits or an adversarial string, unique by i.
func deviceID(i int, r *rand.Rand) string {
	if r.IntN(2) == 0 {
		return fmt.Sprintf("35693803%07d", i)
	}
	return truncate(fmt.Sprintf("%s#%d", nasty[r.IntN(len(nasty))], i), 50)
}

func rowName(i int) string { return fmt.Sprintf("%s %d", nasty[i%len(nasty)], i) }

func truncate(s string, n int) string {
	for utf8.RuneCountInString(s) > n {
		_, size := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-size]
	}
	return s
}
