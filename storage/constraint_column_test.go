package storage_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fleetapi/fleetapi/storage"
)

// TestCheckViolationNamesItsColumn: a column CHECK the database refuses
// (the last line behind the api's validation) names its column, so that
// the api answers 400 naming the field, never a 500: every CHECK of the
// rows the writes of docs/design.md §15 store.
func TestCheckViolationNamesItsColumn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := newStore(t)
	importJSON(t, db, []byte(`{"accounts": [{"username": "acme", "type": "user"}], "objects": [{"imei": "1", "account": "acme"}]}`))
	var acme int64
	if err := db.NewRaw("SELECT id FROM accounts WHERE username = 'acme'").Scan(ctx, &acme); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ column, sql string }{
		{"name", "INSERT INTO events (account_id, name) VALUES (?, '')"},
		{"week_days", "INSERT INTO events (account_id, name, week_days) VALUES (?, 'e', ARRAY['someday'])"},
		{"zone_trigger", "INSERT INTO events (account_id, name, zone_trigger) VALUES (?, 'e', 'both')"},
		{"email_template_id", "INSERT INTO events (account_id, name, email_template_id) VALUES (?, 'e', -1)"},
		{"schedule_period", "INSERT INTO reports (account_id, name, schedule_period) VALUES (?, 'r', 'm')"},
		{"stop_duration", "INSERT INTO reports (account_id, name, stop_duration) VALUES (?, 'r', -1)"},
		{"odo_interval", "INSERT INTO services (account_id, imei, name, odo_interval) VALUES (?, '1', 's', -1)"},
	} {
		t.Run(tc.column, func(t *testing.T) {
			_, err := db.NewRaw(tc.sql, acme).Exec(ctx)
			var ie *storage.InvalidError
			if err = storage.Translate(err); !errors.As(err, &ie) || ie.Column != tc.column {
				t.Fatalf("Translate: %v, want an InvalidError of column %s", err, tc.column)
			}
		})
	}
}
