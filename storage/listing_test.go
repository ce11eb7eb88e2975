package storage_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/storagetest"
)

// TestListingKindsMatchColumns checks every field of every listing against
// its column in the migrated schema: the kind is the column's type, and an
// integer field's range (Field.IntRange) is the column's type range from
// 0, which a CHECK (column >= 0) constraint makes the column's domain, or
// a foreign key to an identity column from 1 (account_id).
func TestListingKindsMatchColumns(t *testing.T) {
	db := storagetest.New(t)
	ctx := context.Background()
	types := map[storage.FieldKind]string{
		storage.KindInt: "bigint", storage.KindInt32: "integer", storage.KindText: "text", storage.KindBool: "boolean",
		storage.KindDate: "date", storage.KindTime: "timestamp with time zone", storage.KindTextList: "ARRAY/_text",
		storage.KindObject: "jsonb",
	}
	// the exception below, checked on columns of the schema
	if got := identityReference(t, db, "services", "account_id"); got != "accounts.id" {
		t.Fatalf("services.account_id references %q, want accounts.id", got)
	}
	if got := identityReference(t, db, "services", "odo_interval"); got != "" {
		t.Fatalf("services.odo_interval references %q", got)
	}
	for _, l := range storage.Descriptors() {
		var checks []string
		if err := db.NewRaw(`SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = ?::regclass AND contype = 'c'`,
			l.Table()).Scan(ctx, &checks); err != nil {
			t.Fatal(err)
		}
		for _, f := range l.Fields() {
			t.Run(l.Table()+"."+f.Name, func(t *testing.T) {
				var dataType, udt string
				if err := db.NewRaw(`SELECT data_type, udt_name FROM information_schema.columns WHERE table_name = ? AND column_name = ?`,
					l.Table(), f.Name).Scan(ctx, &dataType, &udt); err != nil {
					t.Fatalf("column: %v", err)
				}
				got := dataType
				if dataType == "ARRAY" {
					got += "/" + udt
				}
				if want := types[f.Kind]; got != want {
					t.Fatalf("column type %s, kind %d wants %s", got, f.Kind, want)
				}
				if f.Kind != storage.KindInt && f.Kind != storage.KindInt32 {
					return
				}
				if lo, _ := f.IntRange(); lo != 0 {
					t.Fatalf("IntRange from %d", lo)
				}
				want := fmt.Sprintf("CHECK ((%s >= 0))", f.Name)
				for _, c := range checks {
					if c == want {
						return
					}
				}
				if ref := identityReference(t, db, l.Table(), f.Name); ref != "" {
					return // its values are ids the identity made: from 1
				}
				t.Fatalf("no %s among %q, and not a reference to an identity column from 1", want, checks)
			})
		}
	}
}

// TestParseDate enumerates the malformed and out-of-range dates, and checks
// that PostgreSQL reads every accepted one as the same day.
func TestParseDate(t *testing.T) {
	for _, s := range []string{
		"0000-01-01", "0000-12-31", "-0001-01-01", "10000-01-01", "+2024-01-01", "2024-13-01", "2024-00-01", "2024-01-32",
		"2024-01-00", "2023-02-29", "2024-02-30", "2024-04-31", "2024-1-01", "2024-01-1", "24-01-01", "2024/01/01",
		"20240101", "2024-01-01T00:00:00Z", "2024-01-01 ", " 2024-01-01", "２024-01-01", "infinity", "epoch", "",
	} {
		if d, err := storage.ParseDate(s); err == nil {
			t.Errorf("ParseDate(%q) = %v, want an error", s, d)
		}
	}
	db := storagetest.New(t)
	for _, s := range []string{"0001-01-01", "9999-12-31", "2024-02-29", "1970-01-01", "2000-02-29"} {
		d, err := storage.ParseDate(s)
		if err != nil {
			t.Fatalf("ParseDate(%q): %v", s, err)
		}
		var back string
		if err := db.NewRaw(`SELECT ?::date::text`, d).Scan(context.Background(), &back); err != nil || back != s {
			t.Fatalf("PostgreSQL read %q as %q (%v)", s, back, err)
		}
	}
}

// TestParseTimestamp enumerates the timestamp forms outside the accepted
// RFC 3339 profile, and checks that PostgreSQL reads every accepted one,
// as bun sends it, as the instant the text names.
func TestParseTimestamp(t *testing.T) {
	for _, s := range []string{
		"0000-01-01T00:00:00Z", "0001-01-01T00:00:00+00:01", "9999-12-31T23:59:59-00:01", "10000-01-01T00:00:00Z",
		"-0001-01-01T00:00:00Z", "2024-13-01T00:00:00Z", "2024-02-30T00:00:00Z", "2024-01-32T00:00:00Z",
		"2024-01-01T24:00:00Z", "2024-01-01T23:60:00Z", "2024-12-31T23:59:60Z", "2024-01-01T0:00:00Z",
		"2024-01-01T00:00Z", "2024-01-01T00:00:00.1234567Z", "2024-01-01T00:00:00.123456789Z", "2024-01-01T00:00:00,5Z",
		"2024-01-01T00:00:00.Z", "2024-01-01T00:00:00", "2024-01-01T00:00:00+0100", "2024-01-01T00:00:00+01",
		"2024-01-01T00:00:00+24:00", "2024-01-01T00:00:00-24:00", "2024-01-01T00:00:00+16:00", "2024-01-01T00:00:00-23:59", "2024-01-01T00:00:00+01:60", "2024-01-01T00:00:00+01:00:00",
		"2024-01-01T00:00:00 +01:00", "2024-01-01T00:00:00UTC", "2024-01-01T00:00:00z", "2024-01-01t00:00:00Z",
		"2024-01-01 00:00:00Z", "2024-01-01", "2024-01-01T00:00:00Z ", "２024-01-01T00:00:00Z", "infinity", "",
	} {
		if ts, err := storage.ParseTimestamp(s); err == nil {
			t.Errorf("ParseTimestamp(%q) = %v, want an error", s, ts)
		}
	}
	db := storagetest.New(t)
	for _, s := range []string{
		"0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999999Z", "0001-01-01T01:00:00+01:00", "9999-12-31T22:59:59-01:00",
		"2026-01-05T08:00:00+01:00", "2026-01-05T07:00:00-00:00", "2026-01-05T07:00:00.5Z", "2024-01-01T00:00:00+15:59",
		"2024-01-01T00:00:00-15:59", "2024-01-01T00:00:00+14:00", "2024-02-29T12:34:56.000001+05:30",
	} {
		ts, err := storage.ParseTimestamp(s)
		if err != nil {
			t.Fatalf("ParseTimestamp(%q): %v", s, err)
		}
		var same bool
		if err := db.NewRaw(`SELECT ?::timestamptz = ?::text::timestamptz`, ts, s).Scan(context.Background(), &same); err != nil || !same {
			t.Fatalf("%q: bun's %v is not PostgreSQL's reading of the text (%v)", s, ts.UTC(), err)
		}
	}
}

// TestParseJSONObject enumerates the JSON texts that jsonb refuses or that
// would reach PostgreSQL changed, and checks that every accepted object
// reaches jsonb equal to its text.
func TestParseJSONObject(t *testing.T) {
	for _, s := range []string{
		`{"a":"\u0000"}`, `{"\u0000":1}`, `{"a":"x\u0000y"}`, `{"a":["\u0000"]}`, `{"a":{"b":"\u0000"}}`, `{"a":"\\\u0000"}`,
		`{"a":"\ud800"}`, `{"a":"\udc00"}`, `{"a":"\ud800x"}`, `{"a":"\ud800\u0041"}`, `{"a":"\ud800\ud800"}`, `{"\udfff":1}`,
		`{"a":"\uDBFF"}`, `{"a":"\ud800\`, `{"a":1e1000000}`, `{"a":1e-1000000}`, `{"a":1e1001}`, `{"a":-1E+1001}`,
		`{"a":1e-1001}`, `{"a":1` + strings.Repeat("0", 1000) + `}`, `{"a":[0.` + strings.Repeat("0", 1000) + `1]}`,
		`null`, `[]`, `"x"`, `1`, `true`, `{"a":1}x`, `{"a":1}{}`, `{`, `{"a":NaN}`, `{'a':1}`, ``, `{"a":1,}`, `{"a":01}`,
		"{\"a\":\"\x00\"}", "{\"a\":\"\xff\"}", "{\"a\":1}\xff",
	} {
		if o, err := storage.ParseJSONObject(s); err == nil {
			t.Errorf("ParseJSONObject(%q) = %v, want an error", s, o)
		}
	}
	db := storagetest.New(t)
	for _, s := range []string{
		`{}`, ` { } `, `{"a":"\u00e9"}`, `{"a":"\ud83d\ude00"}`, `{"a":"\uD83D\uDE00\ud83d\ude00"}`, `{"a":"\\u0000"}`,
		`{"a":"\\\\u0000"}`, `{"a":"\"\\"}`, `{"a":1e1000}`, `{"a":-1E-1000}`, `{"a":1` + strings.Repeat("0", 999) + `}`,
		`{"a":12345678901234567891}`, `{"a":0.1000000000000000055511151231257827}`, `{"from":"08:00"}`,
		`{"a":[1,{"b":null}],"c":true,"d":"<&>"}`, `{"a":"\u2028"}`,
	} {
		o, err := storage.ParseJSONObject(s)
		if err != nil {
			t.Fatalf("ParseJSONObject(%q): %v", s, err)
		}
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		var same bool
		if err := db.NewRaw(`SELECT ?::jsonb = ?::jsonb`, string(b), s).Scan(context.Background(), &same); err != nil || !same {
			t.Fatalf("%q reaches jsonb as %s (%v)", s, b, err)
		}
	}
}

// fkColumn parses a single-column foreign key as pg_get_constraintdef
// writes it.
var fkColumn = regexp.MustCompile(`^FOREIGN KEY \((\w+)\) REFERENCES (\w+)\((\w+)\)`)

// identityReference returns "table.column" when column of table is a
// foreign key to an identity column whose sequence starts at 1 or more
// (such as account_id, which references accounts.id): its domain is then
// within 0 to the type's maximum without a CHECK. It returns "" otherwise.
func identityReference(t *testing.T, db *storagetest.DB, table, column string) string {
	t.Helper()
	ctx := context.Background()
	var fks []string
	if err := db.NewRaw(`SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = ?::regclass AND contype = 'f'`,
		table).Scan(ctx, &fks); err != nil {
		t.Fatal(err)
	}
	for _, fk := range fks {
		m := fkColumn.FindStringSubmatch(fk)
		if m == nil || m[1] != column {
			continue
		}
		var start []string
		if err := db.NewRaw(`SELECT identity_start FROM information_schema.columns WHERE table_name = ? AND column_name = ? AND is_identity = 'YES'`,
			m[2], m[3]).Scan(ctx, &start); err != nil {
			t.Fatal(err)
		}
		if n, err := strconv.ParseInt(strings.Join(start, ""), 10, 64); err == nil && n >= 1 {
			return m[2] + "." + m[3]
		}
	}
	return ""
}
