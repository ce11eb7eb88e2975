package storage

import (
	"context"
	"fmt"
	"slices"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
)

// The lock order of every write (docs/locking.md, the table of every write
// path). A write transaction locks, in this order and never back:
//
//  1. accounts, all at once, in the order of the tree: by type (admin,
//     manager, user, subaccount: the enum's order, which is the tree's,
//     since a child's type always comes after its parent's), then by id;
//     each with the strength its write needs (rowLock);
//  2. its Idempotency-Key (the insert of the key's row, whose foreign key
//     takes KEY SHARE on the caller's account, already held);
//  3. devices (objects) by id, tokens by id (a revocation's lineage), then
//     the rows it inserts, updates and deletes, whose foreign keys take
//     KEY SHARE on parents it already holds.
//
// Every row a write changes in step 3 belongs to an account it holds in a
// strength that conflicts with every other write of that row, so two
// writes that meet on a row met first on an account, where they queue in
// one order: no cycle of waits is possible, and PostgreSQL never has to
// break one (a deadlock is a 503 for one tenant and a held pool for all).

// The erase gate. PostgreSQL queues a row lock's waiters fairly only
// among requests that conflict with the current holders: a request that
// conflicts with none of them (a KEY SHARE or SHARE lock while only
// KEY SHARE or SHARE locks are held) takes the row at once, past a
// waiting erase. A stream of such lockers (keyed creates of one caller,
// each holding its account KEY SHARE; passenger creates on the shared
// quota path) keeps the row locked forever and starves the erase's
// FOR UPDATE until its statement times out (503, the erase rolled back).
// So every account lock in a shared strength, and the erase's FOR UPDATE,
// first passes an advisory lock keyed by the account's id (the gate):
// shared for the shared strengths, exclusive for the erase. Advisory locks
// are heavyweight locks, whose queue is fair: a shared request that
// conflicts with a waiting exclusive one waits behind it, so once an erase
// waits at an account's gate no new shared locker passes, and the erase
// has the row when those already in commit. FOR NO KEY UPDATE needs no
// gate: it conflicts with itself and with SHARE, so its requests queue
// through PostgreSQL's own tuple lock behind the erase. The gate and the
// row lock are taken account by account in the one order (gate, then row,
// then the next account), so the gate adds no cycle of waits. A bare
// bigint advisory key of the application's database is an account id;
// nothing else of fleetapi takes one.

// rowLock is a row lock strength of PostgreSQL, weakest first: each
// conflicts with the strengths at and above the mirror of its own place
// (KEY SHARE only with UPDATE; SHARE with NO KEY UPDATE and UPDATE; NO KEY
// UPDATE with SHARE, NO KEY UPDATE and UPDATE; UPDATE with all).
type rowLock int

const (
	// forKeyShare: the account is only referenced (a foreign key's own
	// lock, taken before the insert that needs it): it conflicts only
	// with an erase.
	forKeyShare rowLock = iota + 1
	// forShare: the account's quota is checked on the shared path of a
	// hot create (checkQuotaShared): creates share it, a change of the
	// account or an exclusive check waits.
	forShare
	// forNoKeyUpdate: the write changes the account or what belongs to
	// it (its row, its devices, tokens, grants, children, quotas) and
	// deletes nothing: it does not conflict with the KEY SHARE that a
	// foreign key's insert takes, so it never waits for a create that
	// merely references the account.
	forNoKeyUpdate
	// forUpdate: the account is deleted (an erase).
	forUpdate
)

// sql is the strength as a locking clause names it.
func (l rowLock) sql() string {
	switch l {
	case forKeyShare:
		return "KEY SHARE"
	case forShare:
		return "SHARE"
	case forNoKeyUpdate:
		return "NO KEY UPDATE"
	case forUpdate:
		return "UPDATE"
	}
	panic(fmt.Sprintf("storage: no row lock %d", l))
}

// gate is the advisory lock function an account locked with l passes
// first (the erase gate), or "" for none.
func (l rowLock) gate() string {
	switch l {
	case forKeyShare, forShare:
		return "pg_advisory_xact_lock_shared"
	case forUpdate:
		return "pg_advisory_xact_lock"
	}
	return ""
}

// accountLocks is step 1 of a write: the accounts it locks, each with its
// strength.
type accountLocks map[int64]rowLock

// with returns a copy of p that also locks ids with l, or with what p
// already holds for them when that is stronger.
func (p accountLocks) with(l rowLock, ids ...int64) accountLocks {
	out := make(accountLocks, len(p)+len(ids))
	for id, have := range p {
		out[id] = have
	}
	for _, id := range ids {
		out[id] = max(out[id], l)
	}
	return out
}

// lock takes p's locks in the one order (lockAccounts) and returns
// ErrNotFound when one of the accounts does not exist: erased by a write
// that held it first, or never there.
func (p accountLocks) lock(ctx context.Context, db bun.IDB) error {
	found, err := lockAccounts(ctx, db, p)
	if err != nil {
		return err
	}
	if len(found) != len(p) {
		for id := range p {
			if !slices.Contains(found, id) {
				return &accountGoneError{id}
			}
		}
	}
	return nil
}

// accountGoneError is the ErrNotFound of an account a write was to lock
// that does not exist: erased by a write that held it first, or never
// there.
type accountGoneError struct{ id int64 }

func (e *accountGoneError) Error() string {
	return fmt.Sprintf("%v: account %d does not exist (erased meanwhile?)", ErrNotFound, e.id)
}

// Is makes an *accountGoneError an ErrNotFound.
func (e *accountGoneError) Is(target error) bool { return target == ErrNotFound }

// lockAccounts locks the accounts of p, by type then id, and returns those
// that exist, in that order. With one strength and no gate it is one
// statement; otherwise the order is read first and each account locked in
// turn, behind its gate when its strength has one (the order does not
// change: no write changes an account's type or manager, and the trigger
// of the fixed levels ties a type to its place).
func lockAccounts(ctx context.Context, db bun.IDB, p accountLocks) ([]int64, error) {
	if len(p) == 0 {
		return nil, nil
	}
	ids := make([]int64, 0, len(p))
	strengths := map[rowLock]bool{}
	for id, l := range p {
		ids = append(ids, id)
		strengths[l] = true
	}
	const ordered = "SELECT id FROM accounts WHERE id = ANY(?) ORDER BY type, id"
	var found []int64
	if len(strengths) == 1 && p[ids[0]].gate() == "" {
		err := db.NewRaw(ordered+" FOR "+p[ids[0]].sql(), pgdialect.Array(ids)).Scan(ctx, &found)
		return found, err
	}
	var order []int64
	if err := db.NewRaw(ordered, pgdialect.Array(ids)).Scan(ctx, &order); err != nil {
		return nil, err
	}
	for _, id := range order {
		if gate := p[id].gate(); gate != "" {
			if _, err := db.NewRaw("SELECT "+gate+"(?)", id).Exec(ctx); err != nil {
				return nil, err
			}
		}
		var got []int64
		if err := db.NewRaw("SELECT id FROM accounts WHERE id = ? FOR "+p[id].sql(), id).Scan(ctx, &got); err != nil {
			return nil, err
		}
		found = append(found, got...)
	}
	return found, nil
}
