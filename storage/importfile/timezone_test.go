package importfile_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/fleetapi/fleetapi/storage/importfile"
)

// TestLoadTimezone: an account's timezone is validated at import (the
// error names the record and the field, nothing is stored), and omitted it
// is UTC.
func TestLoadTimezone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := newStore(t)
	for _, tz := range []string{"Local", "../../etc/passwd", `UTC\u0000`, "Nowhere/Special", "posix/UTC", " UTC"} {
		file := `{"accounts":[{"username":"tz-ok","type":"user"},{"username":"tz-bad","type":"user","timezone":"` + tz + `"}]}`
		_, err := importfile.Load(ctx, db.DB, bytes.NewReader([]byte(file)))
		if err == nil || !strings.Contains(err.Error(), "timezone") || !strings.Contains(err.Error(), "tz-bad") {
			t.Fatalf("timezone %q: %v, want an error naming the record and timezone", tz, err)
		}
	}
	var n int
	if err := db.NewRaw("SELECT count(*) FROM accounts").Scan(ctx, &n); err != nil || n != 0 {
		t.Fatalf("%d accounts after refused files (%v)", n, err)
	}
	importJSON(t, db, []byte(`{"accounts":[{"username":"tz-default","type":"user"},{"username":"tz-tokyo","type":"user","timezone":"Asia/Tokyo"}]}`))
	var got []string
	if err := db.NewRaw("SELECT username || '=' || timezone FROM accounts ORDER BY username").Scan(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != "tz-default=UTC,tz-tokyo=Asia/Tokyo" {
		t.Fatalf("imported %v", got)
	}
}

// TestExportTimezoneRoundTrip: tenant export writes each account's
// timezone and an import of the file restores it (TestExportRoundTrip
// compares every column too, this one alone).
func TestExportTimezoneRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, src := newStore(t)
	importJSON(t, src, []byte(`{"accounts":[{"username":"tz-root","type":"user","timezone":"Pacific/Auckland"},
		{"username":"tz-sub","type":"subaccount","manager":"tz-root"}]}`))
	var file bytes.Buffer
	if _, err := importfile.Export(ctx, src.DB, "tz-root", &file); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(file.String(), `"timezone":"Pacific/Auckland"`) || !strings.Contains(file.String(), `"timezone":"UTC"`) {
		t.Fatalf("the export does not carry the time zones:\n%s", file.String())
	}
	_, dst := newStore(t)
	importJSON(t, dst, file.Bytes())
	var got []string
	if err := dst.NewRaw("SELECT username || '=' || timezone FROM accounts ORDER BY username").Scan(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != "tz-root=Pacific/Auckland,tz-sub=UTC" {
		t.Fatalf("after the round trip: %v", got)
	}
}
