package storagetest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/pgserver"
)

// Replicated is a fresh migrated database on a private primary, with the
// same database on a streaming standby of that primary (docs/design.md §11). The
// primary and the standby are private clusters on unix sockets in a
// temporary folder, started once per test binary (a few seconds) and
// stopped by Main; the tests that use them run one at a time, since they
// pause, stop and start the standby.
type Replicated struct {
	// DB is the test's database on the primary.
	*DB
	// Standby is the same database on the standby; StandbyURL connects to
	// it.
	Standby    *bun.DB
	StandbyURL string
	pair       *pair
}

// pair is the primary and the standby of one test binary.
type pair struct {
	dir     string
	primary *pgserver.Server
	standby *pgserver.Standby
	// admin connects to the "postgres" database of each.
	primaryAdmin, standbyAdmin *bun.DB
	// stopped is set while a test has the standby stopped, frozen while
	// its processes are stopped with SIGSTOP.
	stopped, frozen bool
}

// pairState is the test binary's pair, started on first use; pairMu lets
// one test use it at a time.
var (
	pairOnce sync.Once
	thePair  *pair
	pairErr  error
	pairMu   sync.Mutex
	// mainRuns is set by Main: only then is the pair stopped at the end.
	mainRuns bool
)

// NewReplicated returns a new migrated database on the private primary
// and its replica on the standby, once the standby has replayed its
// creation. The database is dropped when the test ends; the standby is
// then running and replaying again. With CI=true, missing PostgreSQL
// binaries fail the test instead of skipping it.
func NewReplicated(t testing.TB) *Replicated {
	t.Helper()
	if !mainRuns {
		t.Fatal("storagetest: NewReplicated needs TestMain to call storagetest.Main, which stops the clusters at the end")
	}
	pairOnce.Do(func() { thePair, pairErr = startPair() })
	if pairErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("storagetest: no private primary and standby (CI=true, so this fails instead of skipping): %v", pairErr)
		}
		t.Skipf("storagetest: no private primary and standby: %v", pairErr)
	}
	p := thePair
	pairMu.Lock()
	ctx := context.Background()
	db := newDatabase(t, p.primary.URL)
	r := &Replicated{DB: db, pair: p}
	var err error
	if r.StandbyURL, err = storage.WithDatabase(p.standby.URL, databaseName(t, db.URL)); err != nil {
		t.Fatal(err)
	}
	r.Standby = storage.Open(r.StandbyURL, storage.Options{MaxOpenConns: 8, Target: storage.TargetReplica})
	// Registered after newDatabase's clean-up, so run before it: the
	// standby replays again and its pool is closed before the database is
	// dropped; the next test may use the pair then.
	t.Cleanup(func() {
		defer pairMu.Unlock()
		if p.frozen {
			r.signalStandby(t, syscall.SIGCONT)
		}
		r.Standby.Close()
		if p.stopped {
			if err := p.standby.Start(ctx); err != nil {
				t.Errorf("storagetest: start the standby again: %v", err)
			}
			p.stopped = false
		}
		_, _ = p.standbyAdmin.ExecContext(ctx, "SELECT pg_wal_replay_resume()")
	})
	r.CatchUp(t)
	return r
}

// startPair starts the primary and the standby in a temporary folder.
func startPair() (*pair, error) {
	ctx := context.Background()
	removeAbandonedPairs()
	dir, err := os.MkdirTemp("", "fleetapi-pgpair-")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "owner.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return nil, err
	}
	// The clusters run as the postgres user when we are root.
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	log := &prefixWriter{}
	primary, err := pgserver.StartPrivateCluster(ctx, dir+"/primary", log)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("primary: %w", err)
	}
	standby, err := pgserver.StartStandby(ctx, primary, dir+"/standby", log)
	if err != nil {
		_ = primary.Stop()
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("standby: %w", err)
	}
	return &pair{dir: dir, primary: primary, standby: standby,
		primaryAdmin: adminOf(primary.URL), standbyAdmin: adminOf(standby.URL)}, nil
}

// removeAbandonedPairs stops the clusters of pairs whose test binary is
// gone (killed before Main could stop them) and removes their folders.
func removeAbandonedPairs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "fleetapi-pgpair-*"))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, "owner.pid"))
		if err != nil {
			continue // being created, or not ours
		}
		pid, err := strconv.Atoi(string(b))
		if err != nil || syscall.Kill(pid, 0) != syscall.ESRCH {
			continue // its owner still runs
		}
		stopped := true
		for _, c := range []string{"standby", "primary"} {
			if err := pgserver.StopAbandoned(filepath.Join(dir, c)); err != nil {
				fmt.Fprintln(os.Stderr, "storagetest: stop an abandoned cluster:", err)
				stopped = false
			}
		}
		if stopped {
			_ = os.RemoveAll(dir)
		}
	}
}

// adminOf opens the "postgres" database of the server at url.
func adminOf(url string) *bun.DB {
	u, err := storage.WithDatabase(url, "postgres")
	if err != nil {
		panic(err) // url is one of pgserver's own
	}
	return storage.Open(u, storage.Options{MaxOpenConns: 2})
}

// Main runs the tests of m and then stops the private primary and standby
// if a test started them; a test binary whose tests use NewReplicated
// calls it from TestMain: os.Exit(storagetest.Main(m)).
func Main(m *testing.M) int {
	mainRuns = true
	code := m.Run()
	if thePair != nil {
		p := thePair
		p.primaryAdmin.Close()
		p.standbyAdmin.Close()
		if err := p.standby.Stop("immediate"); err != nil {
			fmt.Fprintln(os.Stderr, "storagetest:", err)
		}
		if err := p.primary.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "storagetest:", err)
		}
		_ = os.RemoveAll(p.dir)
	}
	return code
}

// CatchUp waits until the standby has replayed everything the primary had
// written when it was called (at most 30 s).
func (r *Replicated) CatchUp(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	var lsn string
	if err := r.pair.primaryAdmin.NewRaw("SELECT pg_current_wal_lsn()::text").Scan(ctx, &lsn); err != nil {
		t.Fatalf("storagetest: primary WAL position: %v", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var done bool
		err := r.pair.standbyAdmin.NewRaw("SELECT pg_last_wal_replay_lsn() >= ?::pg_lsn", lsn).Scan(ctx, &done)
		if err == nil && done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("storagetest: the standby did not replay up to %s within 30 s (%v)", lsn, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// PauseReplay pauses the standby's replay (pg_wal_replay_pause) and waits
// until it is paused: what the primary writes from then on is not on the
// standby until ResumeReplay.
func (r *Replicated) PauseReplay(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	if _, err := r.pair.standbyAdmin.ExecContext(ctx, "SELECT pg_wal_replay_pause()"); err != nil {
		t.Fatalf("storagetest: pg_wal_replay_pause: %v", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var state string
		if err := r.pair.standbyAdmin.NewRaw("SELECT pg_get_wal_replay_pause_state()").Scan(ctx, &state); err != nil {
			t.Fatalf("storagetest: pg_get_wal_replay_pause_state: %v", err)
		}
		if state == "paused" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("storagetest: replay still %q 30 s after pg_wal_replay_pause", state)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// ResumeReplay resumes the standby's replay.
func (r *Replicated) ResumeReplay(t testing.TB) {
	t.Helper()
	if _, err := r.pair.standbyAdmin.ExecContext(context.Background(), "SELECT pg_wal_replay_resume()"); err != nil {
		t.Fatalf("storagetest: pg_wal_replay_resume: %v", err)
	}
}

// StopStandby stops the standby with pg_ctl stop -m immediate (its
// processes quit at once, open connections break).
func (r *Replicated) StopStandby(t testing.TB) {
	t.Helper()
	if err := r.pair.standby.Stop("immediate"); err != nil {
		t.Fatalf("storagetest: %v", err)
	}
	r.pair.stopped = true
}

// StartStandby starts the stopped standby again and waits until it has
// caught up with the primary.
func (r *Replicated) StartStandby(t testing.TB) {
	t.Helper()
	if err := r.pair.standby.Start(context.Background()); err != nil {
		t.Fatalf("storagetest: %v", err)
	}
	r.pair.stopped = false
	r.CatchUp(t)
}

// prefixWriter writes the clusters' progress to stderr, marked as the
// test helper's.
type prefixWriter struct{}

func (prefixWriter) Write(b []byte) (int, error) {
	fmt.Fprintf(os.Stderr, "storagetest: %s", b)
	return len(b), nil
}

// FreezeStandby stops the standby's processes with SIGSTOP: a server that
// hangs instead of refusing (connections open, nothing answers) until
// ThawStandby, or the end of the test.
func (r *Replicated) FreezeStandby(t testing.TB) {
	t.Helper()
	r.signalStandby(t, syscall.SIGSTOP)
}

// ThawStandby resumes the frozen standby (SIGCONT).
func (r *Replicated) ThawStandby(t testing.TB) {
	t.Helper()
	r.signalStandby(t, syscall.SIGCONT)
}

// signalStandby sends sig to the standby's postmaster and its children.
func (r *Replicated) signalStandby(t testing.TB, sig syscall.Signal) {
	t.Helper()
	if err := pgserver.Signal(filepath.Join(r.pair.dir, "standby"), sig); err != nil {
		t.Fatalf("storagetest: %v", err)
	}
	r.pair.frozen = sig == syscall.SIGSTOP
}
