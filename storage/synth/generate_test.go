package synth_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/storagetest"
	"github.com/fleetapi/fleetapi/storage/synth"
	"github.com/fleetapi/fleetapi/tenancy"
)

// generateToday is the fixed reference day of the generate tests.
var generateToday = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// tableDigests returns an md5 of every generated table's rows (creation
// times left out), to compare two data sets.
func tableDigests(t *testing.T, db *storagetest.DB) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, table := range []string{"accounts", "objects", "object_grants", "services", "reports", "events", "passengers"} {
		var d string
		q := `SELECT md5(string_agg(r, E'\n' ORDER BY r)) FROM (SELECT (to_jsonb(t) - 'created_at')::text AS r FROM ` + table + ` t) x`
		if err := db.NewRaw(q).Scan(context.Background(), &d); err != nil {
			t.Fatalf("digest %s: %v", table, err)
		}
		out[table] = d
	}
	return out
}

// TestGenerateSmall loads the small preset, checks its sizes, tokens, due
// share and sequences, refuses to load it again without Force, and with
// Force loads exactly the same rows.
func TestGenerateSmall(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storagetest.New(t)
	cfg, err := synth.Preset("small")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Today = generateToday
	res, err := synth.Generate(ctx, db.DB, cfg)
	if err != nil {
		t.Fatalf("generate: %v", err)
	}
	want := map[string]int64{
		"accounts": int64(1 + cfg.Managers + cfg.Users + cfg.Subaccounts), "objects": int64(cfg.Devices),
		"services": int64(cfg.Services), "reports": int64(cfg.Reports), "events": int64(cfg.Events),
		"passengers": int64(cfg.Passengers),
	}
	for _, tc := range res.Tables {
		if w, ok := want[tc.Table]; ok && tc.Rows != w {
			t.Errorf("%s: %d rows, want %d", tc.Table, tc.Rows, w)
		}
		if tc.Table == "object_grants" && (tc.Rows < int64(cfg.Subaccounts) || tc.Rows > int64(cfg.Subaccounts*cfg.Grants)) {
			t.Errorf("object_grants: %d rows", tc.Rows)
		}
	}
	for table, n := range rowCounts(t, db) {
		if w, ok := want[table]; ok && int64(n) != w {
			t.Errorf("stored %s: %d rows, want %d", table, n, w)
		}
	}

	store := storage.NewStore(db.DB)
	engine := newEngine(t)
	principals := map[string]tenancy.Principal{}
	pool := map[string][]int64{}
	for _, tok := range res.Tokens {
		hash, err := tenancy.HashToken(tok.Token)
		if err != nil {
			t.Fatalf("%s token: %v", tok.Role, err)
		}
		p, found, err := store.PrincipalByTokenHash(ctx, hash)
		if err != nil || !found {
			t.Fatalf("%s token: found %v, %v", tok.Role, found, err)
		}
		if string(p.Account.Type) != tok.Role || p.Account.ID != tok.AccountID || p.Token.RateLimit != synth.TokenRateLimit {
			t.Errorf("%s token: principal %+v", tok.Role, p)
		}
		if !p.Account.Active || p.Account.ReadOnly || p.Account.Expired(generateToday) {
			t.Errorf("%s token: account cannot use the API: %+v", tok.Role, p.Account)
		}
		if tok.Pool {
			pool[tok.Role] = append(pool[tok.Role], p.Account.ID)
			continue
		}
		principals[tok.Role] = p
	}
	// The mixed workload's pool: every manager once, and as many usable
	// users and subaccounts as the preset has (up to 60 each), no account
	// twice.
	seen := map[int64]bool{}
	for role, ids := range pool {
		for _, id := range ids {
			if seen[id] {
				t.Errorf("pool: account %d (%s) twice", id, role)
			}
			seen[id] = true
		}
	}
	if len(pool["manager"]) != cfg.Managers || len(pool["user"]) < 50 || len(pool["subaccount"]) < cfg.Subaccounts*9/10 || len(pool["admin"]) != 0 {
		t.Errorf("pool: %d managers, %d users, %d subaccounts, %d admins", len(pool["manager"]), len(pool["user"]), len(pool["subaccount"]), len(pool["admin"]))
	}
	if len(principals) != 4 {
		t.Fatalf("tokens: %+v", res.Tokens)
	}

	// Every role sees rows; the user sees its 20 devices' 100 services.
	req := storage.ListRequest{Page: 1, PerPage: 50, Sort: storage.Services.ID()}
	totals := map[string]int64{}
	for role, p := range principals {
		in := policy.NewInput(p, "GET", "/services", generateToday)
		scope, err := engine.Scope(ctx, in, "services")
		if err != nil {
			t.Fatal(err)
		}
		page, err := storage.List(ctx, store, scope, storage.Services, req)
		if err != nil {
			t.Fatalf("%s: list: %v", role, err)
		}
		totals[role] = page.Total
	}
	if totals["admin"] != int64(cfg.Services) || totals["user"] != 100 || totals["subaccount"] < 1 || totals["subaccount"] > 25 ||
		totals["manager"] <= totals["user"] || totals["manager"] >= totals["admin"] {
		t.Errorf("totals per role: %v", totals)
	}

	// A share of the services is due.
	adminServices, err := engine.Scope(ctx, policy.NewInput(principals["admin"], "GET", "/services/due", generateToday), storage.Services.Resource())
	if err != nil || !adminServices.Unrestricted() {
		t.Fatalf("admin services scope: %s, %v", adminServices, err)
	}
	due, err := store.DueServices(ctx, adminServices, generateToday, cfg.Services)
	if err != nil {
		t.Fatal(err)
	}
	if share := float64(len(due)) / float64(cfg.Services); share < 0.05 || share > 0.5 {
		t.Errorf("due share %.2f", share)
	}

	// The sequences continue after the copied ids.
	up := principals["user"]
	scope, err := engine.Scope(ctx, policy.NewInput(up, "POST", "/passengers", generateToday), "passengers")
	if err != nil {
		t.Fatal(err)
	}
	created, _, err := store.CreatePassenger(ctx, scope, up.Account.ID, storage.Passenger{PassengerName: "After generate"}, nil)
	if err != nil || created.PassengerID != int64(cfg.Passengers+1) {
		t.Fatalf("passenger after generate: id %d, %v", created.PassengerID, err)
	}

	before := tableDigests(t, db)
	if _, err := synth.Generate(ctx, db.DB, cfg); !errors.Is(err, synth.ErrNotEmpty) {
		t.Fatalf("second generate: %v, want ErrNotEmpty", err)
	}
	cfg.Force = true
	if _, err := synth.Generate(ctx, db.DB, cfg); err != nil {
		t.Fatalf("generate --force: %v", err)
	}
	after := tableDigests(t, db)
	for table, d := range before {
		if table == "passengers" {
			continue // one passenger was created in between
		}
		if after[table] != d {
			t.Errorf("%s differs between two runs with seed %d", table, cfg.Seed)
		}
	}
}

func TestGenerateRejectsBadSizes(t *testing.T) {
	t.Parallel()
	db := storagetest.New(t)
	for name, cfg := range map[string]synth.Config{
		"no_users":            {Managers: 1, Subaccounts: 1, Devices: 1, Grants: 1},
		"fewer_devices":       {Managers: 1, Users: 10, Subaccounts: 1, Devices: 5, Grants: 1},
		"too_many_per_device": {Managers: 1, Users: 1, Subaccounts: 1, Devices: 1, Services: 50, Grants: 1},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := synth.Generate(context.Background(), db.DB, cfg); !errors.Is(err, storage.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
		})
	}
	if _, err := synth.Preset("huge"); err == nil {
		t.Fatal("unknown preset accepted")
	}
}

// TestGenerateEmptiesEveryTableReferencingAccounts: a tenant table that a
// later migration adds (here one made by the test, referencing accounts
// and objects) needs no entry in the generator: --force empties it with
// the others. (A list of tables kept by hand failed TRUNCATE accounts with
// "cannot truncate a table referenced in a foreign key constraint".)
func TestGenerateEmptiesEveryTableReferencingAccounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storagetest.New(t)
	cfg := synth.Config{Seed: 3, Managers: 1, Users: 2, Subaccounts: 1, Devices: 4, Services: 4, Reports: 2,
		Events: 2, Passengers: 2, Grants: 1, Today: generateToday}
	if _, err := synth.Generate(ctx, db.DB, cfg); err != nil {
		t.Fatalf("generate: %v", err)
	}
	for _, stmt := range []string{
		`CREATE TABLE generate_probe (probe_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
			account_id bigint NOT NULL REFERENCES accounts (id), imei text REFERENCES objects (imei))`,
		`INSERT INTO generate_probe (account_id, imei) SELECT account_id, imei FROM objects ORDER BY id LIMIT 1`,
	} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	if _, err := synth.Generate(ctx, db.DB, cfg); !errors.Is(err, synth.ErrNotEmpty) {
		t.Fatalf("second generate: %v, want ErrNotEmpty", err)
	}
	cfg.Force = true
	res, err := synth.Generate(ctx, db.DB, cfg)
	if err != nil {
		t.Fatalf("generate --force with a table referencing accounts: %v", err)
	}
	var left int
	if err := db.NewRaw("SELECT count(*) FROM generate_probe").Scan(ctx, &left); err != nil || left != 0 {
		t.Fatalf("generate_probe after generate --force: %d rows, %v", left, err)
	}
	var tables []string
	for _, tc := range res.Tables {
		tables = append(tables, tc.Table)
	}
	if want := []string{"accounts", "objects", "object_grants", "services", "reports", "events", "passengers"}; !slices.Equal(tables, want) {
		t.Fatalf("tables written %v, want %v", tables, want)
	}
}
