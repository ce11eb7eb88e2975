package storage_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/demodata"
)

// TestPassengerNormalizeText pins the stored form of the name and the
// assign id: trimmed of whitespace, controls and zero-width characters at
// the ends only; the assign id in NFC and upper case.
func TestPassengerNormalizeText(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, nameIn, nameOut, idIn, idOut string }{
		{"ascii", "  Zoe ", "Zoe", " ab-1 ", "AB-1"},
		{"zero widths at the ends", "\u200b\ufeffZoe\u2060\u200c\u200d", "Zoe", "\ufeffab\u200b", "AB"},
		{"controls at the ends", "\u0001Zoe\u007f\u0085", "Zoe", "\tab\u009f", "AB"},
		{"inside kept", "Zo\u200be", "Zo\u200be", "a\u200bb", "A\u200bB"},
		{"bidi mark kept", "\u200f\u05e9\u05dc", "\u200f\u05e9\u05dc", "", ""},
		{"emoji tag sequence kept", "\U0001f3f4\U000e0067\U000e0062\U000e007f", "\U0001f3f4\U000e0067\U000e0062\U000e007f", "", ""},
		{"name not normalised", "e\u0301", "e\u0301", "e\u0301", "\u00c9"},
		{"composed", "", "", "\u00e9", "\u00c9"},
		{"reordered marks", "", "", "a\u0302\u0323", "\u1eac"},
		{"compatibility form untouched", "", "", "\ufb01", "\ufb01"},
		{"composes after upper-casing", "", "", "\u0131\u0301", "\u00cd"},
		{"long s composes after upper-casing", "", "", "\u017f\u0307", "\u1e60"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := storage.Passenger{PassengerName: tt.nameIn, PassengerAssignID: tt.idIn}
			p.Normalize()
			if p.PassengerName != tt.nameOut || p.PassengerAssignID != tt.idOut {
				t.Fatalf("got %+q %+q, want %+q %+q", p.PassengerName, p.PassengerAssignID, tt.nameOut, tt.idOut)
			}
		})
	}
}

// TestPassengerValidateVisibleName enumerates names without a visible
// character; the importer and the API share this rule.
func TestPassengerValidateVisibleName(t *testing.T) {
	t.Parallel()
	invisible := []string{
		"\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u034f", "\u061c", "\u180e",
		"\u0301", "\u0301\u0308", "\u20dd", "\u0903", "\ufe0f", "\U000e0100", "\U000e0041",
		"\u200e\u200f", "\u202a\u202e", "\u2066\u2069", "\u2061\u2064",
		"\u00a0", "\u1680", "\u2000\u200a", "\u2028\u2029", "\u202f", "\u205f", "\u3000",
		"\u115f", "\u1160", "\u3164", "\uffa0", "\u2800",
		"\u0001", "\u001b", "\u0080", "\u009f",
		" \u200b\u0301 \u2800 ",
	}
	for _, name := range invisible {
		p := storage.Passenger{PassengerName: name}
		p.Normalize()
		if bad := p.Validate(); bad["passenger_name"] == "" {
			t.Errorf("name %+q (stored %+q) accepted", name, p.PassengerName)
		}
	}
	for _, name := range []string{"Zoe", "\u200bZ", "e\u0301", "\u0301e", "\u3164\u3131", "\u2800\u2801", "\u05e9", "\u4e2d", "\U0001f600", "\u2764\ufe0f", "_", "."} {
		p := storage.Passenger{PassengerName: name}
		p.Normalize()
		if bad := p.Validate(); bad != nil {
			t.Errorf("name %+q: %v", name, bad)
		}
	}
}

// TestCreatePassengerNFCConflict checks that the uniqueness of the assign
// id holds across normal forms below the API too.
func TestCreatePassengerNFCConflict(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := newStore(t)
	importJSON(t, db, demodata.File())
	e := newEngine(t)
	acme := principalOf(t, s, "acme").Account
	scope := scopeOf(t, e, s, "acme", "passengers")
	p, _, err := s.CreatePassenger(ctx, scope, acme.ID, storage.Passenger{PassengerName: "Ana", PassengerAssignID: "e\u0301-1"}, nil)
	if err != nil || p.PassengerAssignID != "\u00c9-1" {
		t.Fatalf("created %+q, err %v", p.PassengerAssignID, err)
	}
	_, _, err = s.CreatePassenger(ctx, scope, acme.ID, storage.Passenger{PassengerName: "Bob", PassengerAssignID: "\u00c9-1"}, nil)
	if !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("composed spelling: err %v, want ErrConflict", err)
	}
	_, _, err = s.CreatePassenger(ctx, scope, acme.ID, storage.Passenger{PassengerName: "\u200b\u0301"}, nil)
	if !errors.Is(err, storage.ErrInvalid) {
		t.Fatalf("invisible name: err %v, want ErrInvalid", err)
	}
}
