package storage_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/audit"
	"github.com/fleetapi/fleetapi/storage/demodata"
	"github.com/fleetapi/fleetapi/storage/storagetest"
	"github.com/fleetapi/fleetapi/tenancy"
)

// TestDiffExactChanges: Diff keeps exactly the fields whose JSON differs,
// with before null for a field that was absent (a create).
func TestDiffExactChanges(t *testing.T) {
	d, err := audit.Diff(
		map[string]any{"email": "a@x.example", "active": true, "privileges": []string{"reports"}, "read_only": false},
		map[string]any{"email": "b@x.example", "active": true, "privileges": []string{"reports"}, "read_only": true, "new": 3},
	)
	if err != nil {
		t.Fatal(err)
	}
	want := audit.Changes{
		"email":     {Before: "a@x.example", After: "b@x.example"},
		"read_only": {Before: false, After: true},
		"new":       {Before: nil, After: 3},
	}
	if !reflect.DeepEqual(d, want) {
		t.Fatalf("Diff = %#v, want %#v", d, want)
	}
	created, err := audit.Diff(nil, map[string]any{"username": "x"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(created)
	if string(b) != `{"username":{"before":null,"after":"x"}}` {
		t.Fatalf("create diff = %s", b)
	}
}

// TestAuditRefusesSecretsAndHashes enumerates the shapes of a secret or a
// hash, as a field name or a value at any depth, and proves that none is
// stored, while the values the management API really audits are, and so
// are values that merely look like a digest or a token (issue 19 item 8):
// only the secret of a stored token, or the stored hash of one in any
// common encoding, is refused as a value.
func TestAuditRefusesSecretsAndHashes(t *testing.T) {
	s, db := newStore(t)
	ctx := context.Background()
	importJSON(t, db, demodata.File())
	secret := demodata.Tokens()[0].Secret // stored
	hash, _ := tenancy.HashToken(secret)
	fresh, err := tenancy.NewTokenSecret() // never stored: not a token's secret
	if err != nil {
		t.Fatal(err)
	}
	freshHash, _ := tenancy.HashToken(fresh)
	refused := map[string]audit.Changes{
		"field secret":          {"secret": {After: "x"}},
		"field Secret":          {"Secret": {After: "x"}},
		"field hash":            {"hash": {After: "x"}},
		"field token_hash":      {"token_hash": {After: "x"}},
		"field password":        {"password": {After: "x"}},
		"field api_key":         {"api_key": {After: "x"}},
		"token value":           {"name": {After: secret}},
		"token in text":         {"name": {After: "my token is " + secret + "!"}},
		"token glued to text":   {"email": {After: "a" + secret + "b@x.example"}},
		"token as before":       {"name": {Before: secret, After: "x"}},
		"token in list":         {"permissions": {After: []string{"GET /me", secret}}},
		"token in map":          {"x": {After: map[string]any{"y": secret}}},
		"secret key in map":     {"x": {After: map[string]any{"secret": "v"}}},
		"stored hash hex":       {"name": {After: hex.EncodeToString(hash[:])}},
		"stored hash HEX":       {"name": {After: strings.ToUpper(hex.EncodeToString(hash[:]))}},
		"stored hash bytea":     {"name": {After: `\x` + hex.EncodeToString(hash[:])}},
		"stored hash base64":    {"name": {After: base64.StdEncoding.EncodeToString(hash[:])}},
		"stored hash base64url": {"name": {After: base64.RawURLEncoding.EncodeToString(hash[:])}},
		"bytes":                 {"name": {After: []byte("abc")}},
		"token hash array":      {"name": {After: hash}},
		"token hash in a slice": {"name": {After: []any{"a", hash[:]}}},
	}
	acme, err := s.AccountByUsername(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	for name, changes := range refused {
		ev := &audit.Event{ActorAccountID: acme.ID, ActorTokenID: 1, Action: policy.ActionAccountUpdate,
			TargetAccountID: acme.ID, TargetID: acme.ID, Changes: changes}
		if err := audit.Write(ctx, db.DB, ev); !errors.Is(err, audit.ErrSecret) {
			t.Errorf("%s: err = %v, want audit.ErrSecret", name, err)
		}
	}
	var sv *audit.SecretValueError
	if err := audit.Write(ctx, db.DB, &audit.Event{ActorAccountID: acme.ID, ActorTokenID: 1,
		Action: policy.ActionAccountUpdate, TargetAccountID: acme.ID, TargetID: acme.ID,
		Changes: audit.Changes{"email": {After: "x" + secret}}}); !errors.As(err, &sv) || sv.Field != "email" {
		t.Errorf("a stored secret in email: err = %v, want a SecretValueError naming email", err)
	}
	if n := count(t, db, "SELECT count(*) FROM audit_events"); n != 0 {
		t.Fatalf("%d audit rows stored after refusals", n)
	}
	exp := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	allowed := audit.Changes{
		"username":          {After: "acme-ci"},
		"email":             {Before: "ops@acme.example", After: "it@acme.example"},
		"imei":              {Before: []string{}, After: []string{"356938035643809", "861073032104551"}},
		"permissions":       {After: []string{"GET *", "POST /tokens"}},
		"account_expire_dt": {Before: nil, After: "2026-12-31"},
		"expires_at":        {After: exp},
		"rate_limit":        {Before: nil, After: 60},
		"active":            {Before: true, After: false},
		"name":              {After: strings.Repeat("1", 32)}, // digits only: an IMEI-like name, not a digest
		"notes":             {After: "flt_ops@acme.example " + strings.Repeat("a", 43)},
		"uuid":              {After: "3f2504e04f8911d39a0c0305e82c3301"},         // a dash-less UUID (MD5-sized hex)
		"serial":            {After: "a94a8fe5ccb19ba61c4c0873d391e987982fbbd3"}, // a 40-hex device serial (SHA-1-sized)
		"flt_email":         {After: "flt_0123456789abcdefghijABCDEFGHIJ@acme.example"},
		"fresh token":       {After: fresh},                                          // token-shaped, but no token's secret
		"other sha-256":     {After: hex.EncodeToString(freshHash[:])},               // a digest, but no stored token's
		"sha-512 hex":       {After: strings.Repeat("9e", 64)},                       // no token hash has this length
		"sha-256 base64":    {After: "n4bQgYhMfWWaL+qgxVrQFaO/TxsrC4Is0V1sFbDwCgg="}, // not a stored hash
		"bcrypt":            {After: "$2a$10$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy"},
	}
	ev := &audit.Event{ActorAccountID: acme.ID, ActorTokenID: 1, Action: policy.ActionAccountUpdate,
		TargetAccountID: acme.ID, TargetID: acme.ID, Changes: allowed}
	if err := audit.Write(ctx, db.DB, ev); err != nil {
		t.Fatalf("allowed changes: %v", err)
	}
	if n := count(t, db, "SELECT count(*) FROM audit_events"); n != 1 {
		t.Fatalf("%d audit rows, want 1", n)
	}
	for name, ev := range map[string]*audit.Event{
		"unknown action": {ActorAccountID: acme.ID, ActorTokenID: 1, Action: "account.delete", TargetAccountID: acme.ID, TargetID: acme.ID},
		"no actor":       {ActorTokenID: 1, Action: policy.ActionAccountUpdate, TargetAccountID: acme.ID, TargetID: acme.ID},
		"no target":      {ActorAccountID: acme.ID, ActorTokenID: 1, Action: policy.ActionAccountUpdate},
	} {
		if err := audit.Write(ctx, db.DB, ev); err == nil {
			t.Errorf("%s: stored", name)
		}
	}
}

// count runs a count query on the test database.
func count(t *testing.T, db *storagetest.DB, q string, args ...any) int {
	t.Helper()
	var n int
	if err := db.NewRaw(q, args...).Scan(context.Background(), &n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// TestManageInTxOneTransaction: a management write checks its accounts
// against the management scope, changes and audits in one transaction; an
// account outside the scope (existing or not), a failing change and a
// refused audit row each leave neither the change nor an audit row.
func TestManageInTxOneTransaction(t *testing.T) {
	s, db := newStore(t)
	ctx := context.Background()
	importJSON(t, db, demodata.File())
	e := newEngine(t)
	fleetco := principalOf(t, s, "fleetco")
	scope, err := e.ManagementScope(ctx, policy.NewInput(fleetco, "", "", demoToday))
	if err != nil {
		t.Fatal(err)
	}
	acme := principalOf(t, s, "acme").Account
	tailspin := principalOf(t, s, "tailspin").Account
	actor := storage.Actor{AccountID: fleetco.Account.ID, TokenID: 7, RequestID: "req-1", TraceID: "trace-1"}
	setEmail := func(id int64, email string, ev audit.Event, fail error) func(context.Context, *storage.Store) (audit.Event, error) {
		return func(ctx context.Context, tx *storage.Store) (audit.Event, error) {
			if err := storage.ExecInTx(ctx, tx, "UPDATE accounts SET email = ? WHERE id = ?", email, id); err != nil {
				return audit.Event{}, err
			}
			return ev, fail
		}
	}
	email := func(id int64) string {
		var e string
		if err := db.NewRaw("SELECT email FROM accounts WHERE id = ?", id).Scan(ctx, &e); err != nil {
			t.Fatal(err)
		}
		return e
	}
	update := audit.Event{Action: policy.ActionAccountUpdate, TargetAccountID: acme.ID, TargetID: acme.ID,
		Changes: audit.Changes{"email": {Before: acme.Email, After: "new@acme.example"}}}

	failures := map[string]struct {
		w    storage.ManagementWrite
		want error
	}{
		"other tenant": {storage.ManagementWrite{Accounts: []int64{tailspin.ID}, Actor: actor,
			Change: setEmail(tailspin.ID, "x@x.example", update, nil)}, storage.ErrNotFound},
		"missing account": {storage.ManagementWrite{Accounts: []int64{acme.ID, 987654}, Actor: actor,
			Change: setEmail(acme.ID, "x@x.example", update, nil)}, storage.ErrNotFound},
		"failing change": {storage.ManagementWrite{Accounts: []int64{acme.ID}, Actor: actor,
			Change: setEmail(acme.ID, "x@x.example", update, storage.ErrConflict)}, storage.ErrConflict},
		"secret in the audit": {storage.ManagementWrite{Accounts: []int64{acme.ID}, Actor: actor,
			Change: setEmail(acme.ID, "x@x.example", audit.Event{Action: policy.ActionTokenCreate, TargetAccountID: acme.ID,
				TargetID: 1, Changes: audit.Changes{"hash": {After: "x"}}}, nil)}, audit.ErrSecret},
		"unknown action": {storage.ManagementWrite{Accounts: []int64{acme.ID}, Actor: actor,
			Change: setEmail(acme.ID, "x@x.example", audit.Event{Action: "account.delete", TargetAccountID: acme.ID, TargetID: acme.ID}, nil)}, nil},
	}
	for name, f := range failures {
		_, err := s.ManageInTx(ctx, scope, f.w)
		if err == nil || f.want != nil && !errors.Is(err, f.want) {
			t.Errorf("%s: err = %v, want %v", name, err, f.want)
		}
	}
	if got := email(acme.ID); got != acme.Email {
		t.Fatalf("acme's email %q after failed writes, want %q", got, acme.Email)
	}
	if got := email(tailspin.ID); got != tailspin.Email {
		t.Fatalf("tailspin's email %q after failed writes", got)
	}
	if n := count(t, db, "SELECT count(*) FROM audit_events"); n != 0 {
		t.Fatalf("%d audit rows after failed writes, want 0", n)
	}
	rs, err := e.Scope(ctx, policy.NewInput(fleetco, "GET", "/services", demoToday), storage.Services.Resource())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ManageInTx(ctx, rs, storage.ManagementWrite{Actor: actor, Change: setEmail(acme.ID, "x@x.example", update, nil)}); !errors.Is(err, policy.ErrScope) {
		t.Fatalf("a row scope as management scope: err = %v", err)
	}

	ev, err := s.ManageInTx(ctx, scope, storage.ManagementWrite{Accounts: []int64{acme.ID}, Actor: actor,
		Change: setEmail(acme.ID, "new@acme.example", update, nil)})
	if err != nil {
		t.Fatal(err)
	}
	if got := email(acme.ID); got != "new@acme.example" {
		t.Fatalf("email %q after the write", got)
	}
	var rows []audit.Event
	if err := db.NewSelect().Model(&rows).Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].ID != ev.ID {
		t.Fatalf("audit rows %+v, want the one event %d", rows, ev.ID)
	}
	got := rows[0]
	if got.ActorAccountID != fleetco.Account.ID || got.ActorTokenID != 7 || got.RequestID != "req-1" || got.TraceID != "trace-1" ||
		got.Action != policy.ActionAccountUpdate || got.TargetAccountID != acme.ID || got.TargetID != acme.ID || got.At.IsZero() {
		t.Fatalf("audit row %+v", got)
	}
	b, _ := json.Marshal(got.Changes)
	if want := `{"email":{"before":"ops@acme.example","after":"new@acme.example"}}`; string(b) != want {
		t.Fatalf("changes %s, want %s", b, want)
	}
}
