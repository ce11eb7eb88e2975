package storage_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"unicode/utf8"

	"github.com/uptrace/bun"

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
// a service, a list for a report or event rule, none for a passenger).
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

// insertRows stores about 320 rows of each tenant table.
func (w *world) insertRows(t *testing.T, db bun.IDB, r *rand.Rand, objects []storage.Object) {
	t.Helper()
	ctx := context.Background()
	const perTable = 320
	var services []storage.Service
	for i := range perTable {
		o := objects[r.IntN(len(objects))]
		services = append(services, storage.Service{AccountID: o.AccountID, IMEI: o.IMEI, Name: rowName(i), Odo: r.IntN(2) == 0})
	}
	var reports []storage.Report
	var events []storage.Event
	var passengers []storage.Passenger
	for i := range perTable {
		owner := w.rowOwner(r)
		reports = append(reports, storage.Report{AccountID: owner, Name: rowName(i), Type: nasty[r.IntN(len(nasty))], IMEI: w.deviceList(r, owner)})
		owner = w.rowOwner(r)
		events = append(events, storage.Event{AccountID: owner, Name: rowName(i), Type: nasty[r.IntN(len(nasty))], IMEI: w.deviceList(r, owner)})
		passengers = append(passengers, storage.Passenger{AccountID: w.rowOwner(r), PassengerName: rowName(i), PassengerActive: true})
	}
	for _, m := range []any{&services, &reports, &events, &passengers} {
		if _, err := db.NewInsert().Model(m).Exec(ctx); err != nil {
			t.Fatalf("insert %T: %v", m, err)
		}
	}
	for _, s := range services {
		w.rows["services"] = append(w.rows["services"], worldRow{id: s.ServiceID, account: s.AccountID, imeis: []string{s.IMEI}})
	}
	for _, x := range reports {
		w.rows["reports"] = append(w.rows["reports"], worldRow{id: x.ReportID, account: x.AccountID, imeis: x.IMEI})
	}
	for _, x := range events {
		w.rows["events"] = append(w.rows["events"], worldRow{id: x.EventID, account: x.AccountID, imeis: x.IMEI})
	}
	for _, x := range passengers {
		w.rows["passengers"] = append(w.rows["passengers"], worldRow{id: x.PassengerID, account: x.AccountID})
	}
}

// rowOwner picks the owner of a report, event rule or passenger: mostly a
// user that has subaccounts or any user, sometimes any account.
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
