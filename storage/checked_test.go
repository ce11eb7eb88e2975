package storage_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/demodata"
	"github.com/fleetapi/fleetapi/tenancy"
)

// TestCheckedPassenger (issue 35 item 4): the rule of a passenger is
// checked once per create. CheckPassenger gives the stored form or an
// InvalidFields naming every failing field; CreatePassenger stores a
// checked passenger as it is, and refuses one that CheckPassenger did not
// make without writing anything.
func TestCheckedPassenger(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := newStore(t)
	importJSON(t, db, demodata.File())
	acme := principalOf(t, s, "acme").Account
	scope := scopeOf(t, newEngine(t), s, "acme", "passengers")
	rows := func() int {
		t.Helper()
		var n int
		if err := db.NewRaw("SELECT count(*) FROM passengers").Scan(ctx, &n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	_, err := storage.CheckPassenger(storage.Passenger{PassengerName: " \u200b ", PassengerEmail: "x", PassengerDesc: string(make([]rune, 1001))})
	var bad storage.InvalidFields
	if !errors.As(err, &bad) || !errors.Is(err, storage.ErrInvalid) {
		t.Fatalf("invalid passenger: %v, want InvalidFields", err)
	}
	if got, want := slices.Sorted(maps.Keys(bad)), []string{"passenger_desc", "passenger_email", "passenger_name"}; !slices.Equal(got, want) {
		t.Fatalf("fields %v, want %v", got, want)
	}

	c, err := storage.CheckPassenger(storage.Passenger{PassengerName: "  Zoe Park ", PassengerAssignID: " zp-9 ", PassengerActive: true})
	if err != nil {
		t.Fatal(err)
	}
	if p := c.Passenger(); p.PassengerName != "Zoe Park" || p.PassengerAssignID != "ZP-9" {
		t.Fatalf("checked %+q %+q, want the stored form", p.PassengerName, p.PassengerAssignID)
	}
	created, _, err := s.CreatePassenger(ctx, scope, acme.ID, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if created.PassengerName != "Zoe Park" || created.PassengerAssignID != "ZP-9" || !created.PassengerActive {
		t.Fatalf("created %+v", created)
	}

	before := rows()
	if _, _, err := s.CreatePassenger(ctx, scope, acme.ID, storage.CheckedPassenger{}, nil); err == nil || errors.Is(err, storage.ErrInvalid) {
		t.Fatalf("unchecked CheckedPassenger: %v, want a refusal that is not the client's fault", err)
	}
	if after := rows(); after != before {
		t.Fatalf("%d rows after the refusal, %d before", after, before)
	}
}

// TestCheckedManagedToken (issue 35 item 4): CheckManagedToken is the one
// check of a token made through the management API, at the clock it is
// given; Inherit completes only what the token leaves to the caller's.
func TestCheckedManagedToken(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	past := now.Add(-time.Minute)
	_, err := storage.CheckManagedToken(storage.ManagedTokenInput{Permissions: []string{"GET /nowhere"}, ExpiresAt: &past, RateLimit: -1}, now)
	var bad storage.InvalidFields
	if !errors.As(err, &bad) {
		t.Fatalf("invalid token: %v, want InvalidFields", err)
	}
	if got, want := slices.Sorted(maps.Keys(bad)), []string{"expires_at", "permissions", "rate_limit"}; !slices.Equal(got, want) {
		t.Fatalf("fields %v, want %v", got, want)
	}

	later := now.Add(time.Hour).In(time.FixedZone("", 3600))
	caller := tenancy.Token{ID: 7, AccountID: 3, ExpiresAt: &later, RateLimit: 30}
	c, err := storage.CheckManagedToken(storage.ManagedTokenInput{Name: "ci", Permissions: []string{"GET *"}}, now)
	if err != nil {
		t.Fatal(err)
	}
	c.Inherit(3, caller)
	in := c.Input()
	if in.AccountID != 3 || in.ExpiresAt == nil || !in.ExpiresAt.Equal(later) || in.ExpiresAt.Location() != time.UTC ||
		in.RateLimit != 30 || in.ParentTokenID != 7 {
		t.Fatalf("inherited %+v", in)
	}
	own := now.Add(time.Minute)
	c, err = storage.CheckManagedToken(storage.ManagedTokenInput{AccountID: 5, Name: "ci", Permissions: []string{"GET *"}, ExpiresAt: &own, RateLimit: 10}, now)
	if err != nil {
		t.Fatal(err)
	}
	c.Inherit(3, caller)
	if in := c.Input(); in.AccountID != 5 || !in.ExpiresAt.Equal(own) || in.RateLimit != 10 || in.ParentTokenID != 7 {
		t.Fatalf("own limits replaced: %+v", in)
	}
}
