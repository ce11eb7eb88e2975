package storage

import (
	"context"
	"errors"
	"strconv"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/storage/internal/paging"
	"github.com/fleetapi/fleetapi/storage/limits"
	"github.com/fleetapi/fleetapi/tenancy"
)

// Store is fleetapi's data access over one database handle, the primary,
// and optionally a set of read replicas (WithReplicas). Its methods
// return errors passed through Translate, so that callers test them with
// errors.Is against ErrNotFound, ErrConflict, ErrInvalid and ErrUnavailable.
//
// Only the reads of the client API (the lists of the tenant resources,
// EventByID, DueServices) may run on a replica, through Store.read; every
// write, every read inside a write transaction, idempotency look-ups,
// authentication, the management routes' reads and the CLI's run on the
// primary (entrypoints_test.go enumerates them).
type Store struct {
	db bun.IDB
	// replicas, when not nil, take the reads of the client API.
	replicas *Replicas
	// scopes are the row scopes translated into SQL (scopeCache), shared
	// with the Stores made from this one (on).
	scopes *scopeCache
	// quotas are the platform default quotas (WithQuotas).
	quotas limits.Quotas
	// totals are the kept totals of filtered and searched lists
	// (paging.Cache), shared like scopes.
	totals *paging.Cache
	// estimates are the tables' estimated sizes (tableRows), shared like
	// scopes.
	estimates *tableEstimates
	// server names the server db reads from for the kept totals' keys:
	// empty for the primary, "replica N" for replica N (onReplica). A
	// total is of one server (its version holds the server's start), so
	// replicas read in turn keep one entry each instead of replacing each
	// other's.
	server string
	// off names the paging shapes switched off (WithShapesOff), for the
	// A/B of what each buys; none in production.
	off paging.Off
}

// NewStore returns a Store over db: a *bun.DB, or a bun.Tx to run its
// methods inside a caller's transaction.
func NewStore(db bun.IDB) *Store {
	return &Store{db: db, scopes: newScopeCache(), totals: paging.NewCache(), estimates: newTableEstimates()}
}

// WithReplicas returns a Store over the same primary that sends the reads
// of the client API to the replica set r (nil: every read on the primary).
func (s *Store) WithReplicas(r *Replicas) *Store {
	return &Store{db: s.db, replicas: r, scopes: s.scopes, quotas: s.quotas, totals: s.totals, estimates: s.estimates, off: s.off}
}

// WithShapesOff returns a Store over the same database whose lists never
// choose the paging shapes names lists, comma-separated ("deferred",
// "kept_ids", "kept_totals": paging.ParseOff), for the paired A/B of what
// each buys (FLEET_PAGING_OFF; docs/architecture.md, "Paging"). It fails
// for an unknown name.
func (s *Store) WithShapesOff(names string) (*Store, error) {
	off, err := paging.ParseOff(names)
	if err != nil {
		return nil, err
	}
	r := *s
	r.off = off
	return &r, nil
}

// on returns a Store over db (a transaction, a replica's pool) that shares
// s's translated scopes.
func (s *Store) on(db bun.IDB) *Store {
	return &Store{db: db, scopes: s.scopes, quotas: s.quotas, totals: s.totals, estimates: s.estimates, server: s.server, off: s.off}
}

// onReplica returns a Store over replica i's pool db that shares s's
// translated scopes and kept totals, the latter under keys of its own.
func (s *Store) onReplica(db bun.IDB, i int) *Store {
	r := s.on(db)
	r.server = "replica " + strconv.Itoa(i)
	return r
}

// read runs body, a read of the client API that writes nothing, on a
// usable replica when the Store has replicas, and on the primary
// otherwise (Replicas.read: the fallback and the retry). body must do all
// its queries on the Store and with the context it is given.
func (s *Store) read(ctx context.Context, body func(context.Context, *Store) error) error {
	if s.replicas == nil {
		return body(ctx, s)
	}
	return s.replicas.read(ctx, s, body)
}

// readPrimaryFirst runs body, a read that needs the primary's freshness
// (authentication), on the primary; only when the primary cannot be
// reached (ErrUnavailable: it died or froze and no standby is promoted
// yet) and the Store has replicas is it run again on a usable replica
// (Replicas.fallback), so that the reads a standby can serve keep working
// through a fail-over (docs/design.md §13). body must do all its queries on the
// Store it is given, and write nothing.
func (s *Store) readPrimaryFirst(ctx context.Context, body func(context.Context, *Store) error) error {
	err := body(ctx, s)
	if err == nil || s.replicas == nil || !errors.Is(err, ErrUnavailable) || ctx.Err() != nil {
		return err
	}
	return s.replicas.fallback(ctx, s, err, body)
}

var _ tenancy.TokenStore = (*Store)(nil)

// Ping checks that the database answers. It returns ErrUnavailable when it
// cannot be reached.
func (s *Store) Ping(ctx context.Context) error {
	_, err := s.db.ExecContext(ctx, "SELECT 1")
	return translateOwn(err)
}

// AccountByUsername returns the account with that username. It returns
// ErrNotFound (`account "x" not found`) when there is none and
// ErrUnavailable when the database cannot be reached.
func (s *Store) AccountByUsername(ctx context.Context, username string) (tenancy.Account, error) {
	a, err := s.accountByUsername(ctx, s.db, username)
	if err != nil {
		return tenancy.Account{}, err
	}
	return a.Tenancy(), nil
}

func (s *Store) accountByUsername(ctx context.Context, db bun.IDB, username string) (*Account, error) {
	a := new(Account)
	if err := db.NewSelect().Model(a).Where("a.username = ?", username).Scan(ctx); err != nil {
		if err = Translate(err); errors.Is(err, ErrNotFound) {
			return nil, worded(ErrNotFound, err, "account %q not found", username)
		}
		return nil, err
	}
	return a, nil
}
