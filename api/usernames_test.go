package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestUsernamesUniqueWhateverTheCase (docs/design.md §9, issue 19 item 10): a
// username that differs from an existing one only in case is 409
// CONFLICT; look-alikes the grammar excludes (a trailing or leading '.', a
// Cyrillic or full-width letter, a combining accent, '@', one character)
// are 400 VALIDATION_FAILED naming username; nothing is stored either way.
func TestUsernamesUniqueWhateverTheCase(t *testing.T) {
	a := newTestAPI(t)
	admin := demoToken(t, "admin-all")
	create := func(username string) response {
		t.Helper()
		return a.send(http.MethodPost, "/api/v2/accounts", admin, fmt.Sprintf(`{"username":%q,"type":"user"}`, username))
	}
	stored := func(username string) int {
		return a.count(t, "SELECT count(*) FROM accounts WHERE username = ?", username)
	}
	if r := create("Wile.E-Coyote_2"); r.status != http.StatusCreated {
		t.Fatalf("a valid new username: %d %s", r.status, r.raw)
	}
	for _, u := range []string{"Admin", "ADMIN", "aDmIn", "FleetCo", "ACME-NIGHT", "wile.e-coyote_2", "WILE.E-COYOTE_2"} {
		r := create(u)
		if r.status != http.StatusConflict || r.errorCode(t) != "CONFLICT" {
			t.Errorf("%q beside an existing spelling: %d %s, want 409 CONFLICT", u, r.status, r.raw)
		}
		if stored(u) != 0 {
			t.Errorf("%q was stored", u)
		}
	}
	for _, u := range []string{"acme.", ".acme", "acme-", "_acme", "a", "аdmin" /* Cyrillic а */, "ａｄｍｉｎ", "admín", "admi\u0301n",
		"acme@example", "ac me", strings.Repeat("a", 65), ""} {
		r := create(u)
		if r.status != http.StatusBadRequest || r.errorCode(t) != "VALIDATION_FAILED" {
			t.Errorf("%q: %d %s, want 400 VALIDATION_FAILED", u, r.status, r.raw)
			continue
		}
		fields, _ := r.body["error"].(map[string]any)["details"].(map[string]any)["fields"].(map[string]any)
		if _, ok := fields["username"]; !ok {
			t.Errorf("%q: details %v do not name username", u, fields)
		}
	}
	for _, u := range []string{"ab", strings.Repeat("b", 64), "a.b", "a_b", "a-b", "9lives"} {
		if r := create(u); r.status != http.StatusCreated {
			t.Errorf("%q: %d %s, want 201", u, r.status, r.raw)
		}
	}
}

// TestUsernamesUniqueInDatabase: the database refuses a username that
// differs from an existing one only in case or in Unicode normalisation,
// whoever writes it (the unique index on lower(normalize(username, NFC))).
func TestUsernamesUniqueInDatabase(t *testing.T) {
	a := newTestAPI(t)
	insert := func(u string) error {
		_, err := a.db.ExecContext(t.Context(), "INSERT INTO accounts (username, type) VALUES (?, 'user')", u)
		return err
	}
	for _, u := range []string{"ADMIN", "Acme", "FLEETCO"} {
		if err := insert(u); err == nil || !strings.Contains(err.Error(), "accounts_username_folded_key") {
			t.Errorf("%q: %v, want the folded unique index to refuse it", u, err)
		}
	}
	if err := insert("e\u0301mile"); err != nil { // decomposed é
		t.Fatal(err)
	}
	for _, u := range []string{"\u00e9mile", "\u00c9MILE"} { // composed é, É
		if err := insert(u); err == nil {
			t.Errorf("%q beside its decomposed spelling: stored", u)
		}
	}
}
