package storage_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/demodata"
	"github.com/fleetapi/fleetapi/storage/storagetest"
	"github.com/fleetapi/fleetapi/tenancy"
)

func TestTranslate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := newStore(t)
	importJSON(t, db, []byte(`{"accounts": [{"username": "acme", "type": "user"}]}`))

	tests := []struct {
		name string
		run  func() error
		want error
	}{
		{"unique_violation_is_conflict", func() error {
			_, err := db.NewInsert().Model(&storage.Account{Username: "acme", Type: "user"}).Exec(ctx)
			return err
		}, storage.ErrConflict},
		{"foreign_key_violation_is_invalid", func() error {
			_, err := db.NewInsert().Model(&storage.Object{IMEI: "1", AccountID: 424242}).Exec(ctx)
			return err
		}, storage.ErrInvalid},
		{"check_violation_is_invalid", func() error {
			_, err := db.NewInsert().Model(&storage.Account{Username: "sub", Type: "subaccount"}).Exec(ctx)
			return err
		}, storage.ErrInvalid},
		{"no_rows_is_not_found", func() error {
			return db.NewSelect().Model(new(storage.Account)).Where("id = ?", -1).Scan(ctx)
		}, storage.ErrNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := storage.Translate(tc.run())
			if !errors.Is(err, tc.want) {
				t.Fatalf("Translate: %v, want %v", err, tc.want)
			}
			if again := storage.Translate(err); again.Error() != err.Error() {
				t.Fatalf("Translate is not idempotent: %q then %q", err, again)
			}
		})
	}
	t.Run("nil_is_nil", func(t *testing.T) {
		if storage.Translate(nil) != nil {
			t.Fatal("Translate(nil) != nil")
		}
	})
}

func TestUnavailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("unreachable_server", func(t *testing.T) {
		db := storage.Open("postgres://postgres@127.0.0.1:1/x?sslmode=disable", storage.Options{DialTimeout: time.Second})
		t.Cleanup(func() { db.Close() })
		if err := storage.NewStore(db).Ping(ctx); !errors.Is(err, storage.ErrUnavailable) {
			t.Fatalf("Ping: %v, want ErrUnavailable", err)
		}
		_, err := storage.NewStore(db).AccountByUsername(ctx, "acme")
		if !errors.Is(err, storage.ErrUnavailable) {
			t.Fatalf("AccountByUsername: %v, want ErrUnavailable", err)
		}
	})
	t.Run("closed_pool", func(t *testing.T) {
		s, db := newStore(t)
		if err := s.Ping(ctx); err != nil {
			t.Fatalf("Ping on an open database: %v", err)
		}
		db.Close()
		if err := s.Ping(ctx); !errors.Is(err, storage.ErrUnavailable) {
			t.Fatalf("Ping: %v, want ErrUnavailable", err)
		}
	})
}

// sqlstates reads the error SQLSTATEs of PostgreSQL from testdata.
func sqlstates(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("testdata/sqlstates.txt")
	if err != nil {
		t.Fatal(err)
	}
	var codes []string
	for line := range strings.Lines(string(b)) {
		if f := strings.Fields(line); len(f) > 0 && !strings.HasPrefix(f[0], "#") {
			codes = append(codes, f[0])
		}
	}
	if len(codes) < 200 {
		t.Fatalf("only %d SQLSTATEs in testdata/sqlstates.txt", len(codes))
	}
	return codes
}

// wantClass is the classification of docs/design.md §4 and docs/decisions.md by
// SQLSTATE class: the sentinel, or nil for an error that stays unclassified
// (a 500). clientValues says whether the statement carried the client's
// values (Translate) or only the server's own (translateOwn).
func wantClass(code string, clientValues bool) error {
	switch class := code[:2]; {
	case code == "23505":
		return storage.ErrConflict
	case class == "23":
		return storage.ErrInvalid
	case class == "22" && clientValues:
		return storage.ErrInvalid
	case class == "08", class == "40", class == "53", class == "57", class == "58", code == "25006":
		return storage.ErrUnavailable
	}
	return nil
}

// TestTranslateEverySQLSTATE has the server raise every error SQLSTATE
// PostgreSQL defines and checks that Translate classifies it by its class:
// 08, 40, 53, 57, 58 (and 25006, a read-only server) unavailable; 22 and 23
// invalid, 23505 a conflict; everything else unclassified. For statements
// of the server's own values, a data exception (22) is a server defect
// and stays unclassified.
func TestTranslateEverySQLSTATE(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := newStore(t)
	sentinels := []error{storage.ErrNotFound, storage.ErrConflict, storage.ErrInvalid, storage.ErrUnavailable}
	for _, code := range sqlstates(t) {
		_, raw := db.ExecContext(ctx, fmt.Sprintf(`DO $$ BEGIN RAISE EXCEPTION 'raised %[1]s' USING ERRCODE = '%[1]s'; END $$`, code))
		if raw == nil || !strings.Contains(raw.Error(), "SQLSTATE="+code) {
			t.Fatalf("raising %s: %v", code, raw)
		}
		for _, tr := range []struct {
			name         string
			translate    func(error) error
			clientValues bool
		}{{"Translate", storage.Translate, true}, {"translateOwn", storage.TranslateOwn, false}} {
			got := tr.translate(raw)
			want := wantClass(code, tr.clientValues)
			for _, s := range sentinels {
				if errors.Is(got, s) != (s == want) {
					t.Errorf("%s(SQLSTATE %s): %v; want sentinel %v", tr.name, code, got, want)
				}
			}
			var pgErr pgdriver.Error
			if !errors.As(got, &pgErr) || pgErr.Field('C') != code {
				t.Errorf("%s(SQLSTATE %s) lost the driver's error: %v", tr.name, code, got)
			}
			if again := tr.translate(got); again.Error() != got.Error() {
				t.Errorf("%s(SQLSTATE %s) is not idempotent", tr.name, code)
			}
		}
	}
}

// TestTranslateConnectionStates enumerates the ways a connection dies as
// the driver and database/sql report them: each is ErrUnavailable,
// however it is wrapped. A client that went away (context.Canceled) and
// errors that are not about the connection are not.
func TestTranslateConnectionStates(t *testing.T) {
	t.Parallel()
	closedPool := storage.Open("postgres://postgres@127.0.0.1:1/x?sslmode=disable", storage.Options{})
	closedPool.Close()
	_, closedErr := closedPool.ExecContext(context.Background(), "SELECT 1")
	opErr := func(op string, errno syscall.Errno) error {
		return &net.OpError{Op: op, Net: "tcp", Err: os.NewSyscallError(op, errno)}
	}
	unavailable := []struct {
		name string
		err  error
	}{
		{"eof", io.EOF},
		{"wrapped_eof", fmt.Errorf("read message: %w", io.EOF)},
		{"unexpected_eof", io.ErrUnexpectedEOF},
		{"epipe", opErr("write", syscall.EPIPE)},
		{"bare_epipe", syscall.EPIPE},
		{"econnreset", opErr("read", syscall.ECONNRESET)},
		{"econnaborted", opErr("read", syscall.ECONNABORTED)},
		{"econnrefused", opErr("dial", syscall.ECONNREFUSED)},
		{"net_err_closed", fmt.Errorf("write: %w", net.ErrClosed)},
		{"read_timeout", &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}},
		{"dns", &net.DNSError{Err: "no such host", Name: "db.invalid", IsNotFound: true}},
		{"bad_conn", driver.ErrBadConn},
		{"wrapped_bad_conn", fmt.Errorf("begin: %w", driver.ErrBadConn)},
		{"conn_done", sql.ErrConnDone},
		{"closed_pool", closedErr},
		{"wrapped_closed_pool", fmt.Errorf("query: %w", closedErr)},
		{"deadline", context.DeadlineExceeded},
		{"wrapped_deadline", fmt.Errorf("scan: %w", context.DeadlineExceeded)},
	}
	for _, tc := range unavailable {
		t.Run(tc.name, func(t *testing.T) {
			got := storage.Translate(tc.err)
			if !errors.Is(got, storage.ErrUnavailable) || !errors.Is(got, tc.err) {
				t.Fatalf("Translate(%v) = %v, want ErrUnavailable wrapping it", tc.err, got)
			}
			if !errors.Is(storage.TranslateOwn(tc.err), storage.ErrUnavailable) {
				t.Fatalf("translateOwn(%v) is not ErrUnavailable", tc.err)
			}
		})
	}
	for _, err := range []error{context.Canceled, fmt.Errorf("query: %w", context.Canceled), sql.ErrTxDone, errors.New("pgdriver: unexpected message")} {
		if got := storage.Translate(err); got != err {
			t.Errorf("Translate(%v) = %v, want it unchanged", err, got)
		}
	}
}

// TestTranslateDataExceptions runs list requests whose filter values
// PostgreSQL refuses (the api's parsing is the first line of defence; this
// is the second): each is an *InvalidError with a reason for the client.
func TestTranslateDataExceptions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := newStore(t)
	importJSON(t, db, demodata.File())
	e := newEngine(t)
	services := scopeOf(t, e, s, "acme", "services")
	reports := scopeOf(t, e, s, "acme", "reports")
	events := scopeOf(t, e, s, "acme", "events")
	year0 := time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		run   func() error
		state string
	}{
		{"nul_escape_in_json", func() error {
			_, err := storage.List(ctx, s, events, storage.Events, storage.ListRequest{Page: 1, PerPage: 10, Sort: field(storage.Events, "event_id"), Filters: []storage.Filter{{Field: field(storage.Events, "day_time"), Value: map[string]any{"mon": "a\x00b"}}}})
			return err
		}, "22P05"},
		{"number_overflow_in_json", func() error {
			_, err := storage.List(ctx, s, events, storage.Events, storage.ListRequest{Page: 1, PerPage: 10, Sort: field(storage.Events, "event_id"), Filters: []storage.Filter{{Field: field(storage.Events, "day_time"), Value: map[string]any{"mon": json.Number("1e999999")}}}})
			return err
		}, "22003"},
		{"year_zero_date", func() error {
			_, err := storage.List(ctx, s, services, storage.Services, storage.ListRequest{Page: 1, PerPage: 10, Sort: field(storage.Services, "service_id"), Filters: []storage.Filter{{Field: field(storage.Services, "days_last"), Value: storage.Date{Time: year0}}}})
			return err
		}, "22"},
		{"year_zero_timestamp", func() error {
			_, err := storage.List(ctx, s, reports, storage.Reports, storage.ListRequest{Page: 1, PerPage: 10, Sort: field(storage.Reports, "report_id"), Filters: []storage.Filter{{Field: field(storage.Reports, "dt_schedule_d"), Value: year0}}})
			return err
		}, "22"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			var ie *storage.InvalidError
			if !errors.Is(err, storage.ErrInvalid) || !errors.As(err, &ie) {
				t.Fatalf("got %v, want an *InvalidError", err)
			}
			if !strings.HasPrefix(ie.SQLState, tc.state) || ie.Reason == "" {
				t.Fatalf("SQLSTATE %q reason %q", ie.SQLState, ie.Reason)
			}
		})
	}
}

// TestEntryPointsWhenConnectionsDie drops the store's connection in every
// way a connection dies (the server terminating the backend, an orderly
// close without a message, a reset), while it is idle in the pool and
// while a statement is on its way, and calls every entry point of the
// request path: each answers, or fails with ErrUnavailable, never with an
// unclassified error. A create that failed is not stored.
func TestEntryPointsWhenConnectionsDie(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base, db := newStore(t)
	importJSON(t, db, demodata.File())
	e := newEngine(t)
	services := scopeOf(t, e, base, "acme", "services")
	events := scopeOf(t, e, base, "acme", "events")
	passengers := scopeOf(t, e, base, "acme", "passengers")
	acme := principalOf(t, base, "acme").Account.ID
	hash, err := tenancy.HashToken(demodata.Tokens()[0].Secret)
	if err != nil {
		t.Fatal(err)
	}
	proxy := storagetest.NewProxy(t, db.URL)
	pdb := storage.Open(proxy.URL, storage.Options{MaxOpenConns: 1})
	t.Cleanup(func() { pdb.Close() })
	s := storage.NewStore(pdb)

	// The killer connects to PostgreSQL directly (behind a transaction
	// pooler, the PgBouncer mode of storagetest, the server backends are
	// the pooler's, and a killer going through it could find none but its
	// own); it also counts what a failed create stored, on the one
	// connection it never kills.
	killer := storage.Open(db.DirectURL, storage.Options{MaxOpenConns: 1})
	t.Cleanup(func() { killer.Close() })
	n := 0
	entryPoints := []struct {
		name string
		run  func() error
	}{
		{"list", func() error {
			_, err := storage.List(ctx, s, services, storage.Services, storage.ListRequest{Page: 1, PerPage: 1, Sort: field(storage.Services, "service_id")})
			return err
		}},
		{"list_count", func() error {
			_, err := storage.List(ctx, s, events, storage.Events, storage.ListRequest{Page: 2, PerPage: 1, Sort: field(storage.Events, "event_id")})
			return err
		}},
		{"event_by_id", func() error {
			_, err := s.EventByID(ctx, events, 1)
			if errors.Is(err, storage.ErrNotFound) {
				return nil
			}
			return err
		}},
		{"due", func() error { _, err := s.DueServices(ctx, services, demoToday, 500); return err }},
		{"create_passenger", func() error {
			n++
			key := fmt.Sprintf("die-%d", n)
			_, _, err := s.CreatePassenger(ctx, passengers, acme, storage.Passenger{PassengerName: key, PassengerActive: true},
				&storage.IdempotentRequest{AccountID: acme, Key: key, RequestHash: []byte(key)})
			if err != nil {
				var rows int
				if cerr := killer.NewRaw(`SELECT count(*) FROM passengers WHERE passenger_name = ?`, key).Scan(ctx, &rows); cerr != nil || rows != 0 {
					t.Errorf("failed create %s: %d rows stored (%v)", key, rows, cerr)
				}
			}
			return err
		}},
		{"authenticate", func() error { _, _, err := s.PrincipalByTokenHash(ctx, hash); return err }},
		{"touch_token", func() error { return s.TouchToken(ctx, 1, time.Now()) }},
		{"ping", func() error { return s.Ping(ctx) }},
	}
	terminate := func() int {
		var k int
		if err := killer.NewRaw(`SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND application_name = '') AS k`).Scan(ctx, &k); err != nil {
			t.Fatal(err)
		}
		return k
	}
	terminateOnSend := func() int {
		return proxy.OnNextSend(func() { terminate() })
	}
	// Idle deaths happen while the connection sits in the pool: the pool's
	// liveness check discards it. A connection the network closed or reset
	// is dead before the entry point runs, so the entry point must
	// succeed on a new one (issue 34 item 7); a terminated backend closes
	// its end a moment after pg_terminate_backend returns, so the entry
	// point may still meet it. Deaths on send happen between the
	// statement and its answer: the entry point must fail, with
	// ErrUnavailable.
	deaths := []struct {
		name        string
		kill        func() int
		mustDo      bool
		mustSucceed bool
	}{
		{"idle_terminated_backend", terminate, false, false},
		{"idle_closed", func() int { return proxy.CutAll(storagetest.CutClose) }, false, true},
		{"idle_reset", func() int { return proxy.CutAll(storagetest.CutReset) }, false, true},
		// The backend may finish the statement before the signal lands.
		{"terminated_on_send", terminateOnSend, false, false},
		{"closed_on_send", func() int { return proxy.CutOnNextSend(storagetest.CutClose) }, true, false},
		{"reset_on_send", func() int { return proxy.CutOnNextSend(storagetest.CutReset) }, true, false},
	}
	unavailable := 0
	for _, death := range deaths {
		for _, ep := range entryPoints {
			if err := s.Ping(ctx); err != nil {
				t.Fatalf("%s/%s: the database did not come back: %v", death.name, ep.name, err)
			}
			if death.kill() == 0 {
				t.Fatalf("%s/%s: no connection to kill", death.name, ep.name)
			}
			err := ep.run()
			switch {
			case err == nil && !death.mustDo:
			case death.mustSucceed:
				t.Errorf("%s/%s: %v, want success on a new connection", death.name, ep.name, err)
			case errors.Is(err, storage.ErrUnavailable):
				unavailable++
			default:
				t.Errorf("%s/%s: %v, want ErrUnavailable", death.name, ep.name, err)
			}
		}
	}
	if unavailable == 0 {
		t.Fatal("no entry point saw a dead connection: the test proves nothing")
	}
}

// field returns the listed field name of m.
func field[T any](m storage.Model[T], name string) storage.Field {
	f, _ := m.Field(name)
	return f
}
