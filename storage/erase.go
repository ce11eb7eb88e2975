package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/tenancy"
)

// Erasing a tenant (docs/design.md §12, docs/tenants.md): the account and its
// subtree (the accounts below it, at most three levels) lose every row in
// one transaction, their tokens stop working on every replica before the
// answer (the delete triggers announce each token and account to the
// authentication caches, and the write waits for their acknowledgements,
// AwaitAuthAcks), and one account.erase audit event records the counts.
// Earlier audit events about the erased accounts stay (the operator's
// record) without their personal data: the username and e-mail in their
// changes read "[erased]".

// eraseStep is one table an erase empties of the subtree's rows: where
// selects them, each ? the subtree's account ids. The steps run in this
// order (rows before what they reference).
type eraseStep struct {
	table, where string
}

// eraseSteps lists the tables an erase deletes the subtree's rows from, in
// order; TestEraseLeavesNoRow fails when a table holding account data is
// neither here nor kept on purpose (the audit trail).
var eraseSteps = []eraseStep{
	{"idempotency_keys", "account_id = ANY(?)"},
	{"object_grants", "subaccount_id = ANY(?) OR imei IN (SELECT imei FROM objects WHERE account_id = ANY(?))"},
	{"services", "account_id = ANY(?)"},
	{"reports", "account_id = ANY(?)"},
	{"events", "account_id = ANY(?)"},
	{"passengers", "account_id = ANY(?)"},
	{"tokens", "account_id = ANY(?)"},
	{"objects", "account_id = ANY(?)"},
	// the usage the metering flushed (its FK cascades too; deleted here to be counted)
	{"usage_daily", "account_id = ANY(?)"},
	{"accounts", "id = ANY(?)"},
	// the row counters the deletes above left at zero, per stripe
	{"account_row_counts", "account_id = ANY(?)"},
}

// EraseTables returns the tables an erase deletes the subtree's rows from,
// in the order it does.
func EraseTables() []string {
	out := make([]string, len(eraseSteps))
	for i, s := range eraseSteps {
		out[i] = s.table
	}
	return out
}

// ErasedMark replaces the personal data of erased accounts in the audit
// trail.
const ErasedMark = "[erased]"

// OperatorRequestID is the request id of the audit events the command
// line writes (fleetapi tenant erase): their actor is the operator,
// account and token 0.
const OperatorRequestID = "fleetapi tenant erase"

// Erased is what an erase removed, or would remove.
type Erased struct {
	// Account is the erased account (the subtree's root).
	Account Account `json:"account"`
	// Accounts are the ids of the subtree, the root first.
	Accounts []int64 `json:"accounts"`
	// Rows counts the rows of each table of EraseTables but the row
	// counters, and "audit_events": the earlier events whose personal
	// data was removed.
	Rows map[string]int64 `json:"rows"`
}

// subtree returns root and the accounts below it, level by level, each
// level's rows locked FOR UPDATE (root is locked by the caller): once
// every account of the subtree is locked, nothing can be created under or
// for them (a create locks its account, a foreign key takes KEY SHARE),
// and each level is read after the one above is locked, so a child
// committed meanwhile is found.
//
// Without lock (a dry run) nothing is locked.
func subtree(ctx context.Context, db bun.IDB, root int64, lock bool) ([]int64, error) {
	query := "SELECT id FROM accounts WHERE manager_id = ANY(?) ORDER BY id"
	if lock {
		query += " FOR UPDATE"
	}
	ids := []int64{root}
	for level := []int64{root}; len(level) > 0; {
		var below []int64
		if err := db.NewRaw(query, pgdialect.Array(level)).Scan(ctx, &below); err != nil {
			return nil, err
		}
		if len(ids)+len(below) > 1_000_000 {
			return nil, errors.New("erase: the subtree is not a tree")
		}
		ids = append(ids, below...)
		level = below
	}
	return ids, nil
}

// lockCounters locks the subtree's row counters FOR UPDATE, after its
// accounts and before any delete: the fold of the counters' stripes
// (fold_row_counts) takes the rows no writer holds and then bumps
// count_generation, which the erase's deletes of accounts and counters
// bump too; holding the counters first, the erase never waits for a
// fold that waits for it (docs/locking.md). No other writer touches them
// while the subtree's accounts are locked.
func lockCounters(ctx context.Context, db bun.IDB, ids []int64) error {
	_, err := db.NewRaw(`SELECT 1 FROM account_row_counts WHERE account_id = ANY(?)
		ORDER BY resource, account_id, slot FOR UPDATE`, pgdialect.Array(ids)).Exec(ctx)
	return err
}

// args repeats the subtree's ids for each ? of a step's where.
func (e eraseStep) args(ids []int64) []any {
	out := make([]any, strings.Count(e.where, "?"))
	for i := range out {
		out[i] = pgdialect.Array(ids)
	}
	return out
}

// eraseRows deletes the subtree's rows (dry: counts them) and scrubs the
// earlier audit events of the subtree.
func eraseRows(ctx context.Context, db bun.IDB, ids []int64, dry bool) (map[string]int64, error) {
	rows := map[string]int64{}
	for _, s := range eraseSteps {
		var n int64
		if dry {
			if err := db.NewRaw("SELECT count(*) FROM "+s.table+" WHERE "+s.where, s.args(ids)...).Scan(ctx, &n); err != nil {
				return nil, err
			}
		} else {
			res, err := db.NewRaw("DELETE FROM "+s.table+" WHERE "+s.where, s.args(ids)...).Exec(ctx)
			if err != nil {
				return nil, fmt.Errorf("erase %s: %w", s.table, err)
			}
			if n, err = res.RowsAffected(); err != nil {
				return nil, err
			}
		}
		if s.table != "account_row_counts" {
			rows[s.table] = n
		}
	}
	const personal = `target_account_id = ANY(?) AND (changes ? 'username' OR changes ? 'email')`
	var n int64
	if dry {
		if err := db.NewRaw("SELECT count(*) FROM audit_events WHERE "+personal, pgdialect.Array(ids)).Scan(ctx, &n); err != nil {
			return nil, err
		}
	} else {
		// Each username or e-mail change keeps its shape (before null on
		// a create) with the values replaced.
		res, err := db.NewRaw(`UPDATE audit_events SET changes = (
			SELECT jsonb_object_agg(k, CASE WHEN k IN ('username', 'email') THEN jsonb_build_object(
				'before', CASE WHEN v->'before' IS NULL OR v->'before' = 'null'::jsonb THEN 'null'::jsonb ELSE to_jsonb(?::text) END,
				'after', CASE WHEN v->'after' IS NULL OR v->'after' = 'null'::jsonb THEN 'null'::jsonb ELSE to_jsonb(?::text) END)
				ELSE v END)
			FROM jsonb_each(changes) AS e(k, v))
			WHERE `+personal, ErasedMark, ErasedMark, pgdialect.Array(ids)).Exec(ctx)
		if err != nil {
			return nil, fmt.Errorf("erase: audit trail: %w", err)
		}
		if n, err = res.RowsAffected(); err != nil {
			return nil, err
		}
	}
	rows["audit_events"] = n
	return rows, nil
}

// eraseEvent is the account.erase audit event of e: the target account is
// the erased account's manager, which remains (so that the manager that
// erased one of its accounts sees the event), or the account itself at the
// top; the target id is the erased account; the changes count the rows
// of each table, before and after.
func eraseEvent(e Erased) AuditEvent {
	ev := AuditEvent{Action: policy.ActionAccountErase, TargetAccountID: e.Account.ID, TargetID: e.Account.ID, Changes: Changes{}}
	if e.Account.ManagerID != nil {
		ev.TargetAccountID = *e.Account.ManagerID
	}
	for table, n := range e.Rows {
		if table != "audit_events" {
			ev.Changes[table] = Change{Before: n, After: 0}
		}
	}
	return ev
}

// eraseIn erases the subtree of the account root, whose row the caller
// has locked, inside the caller's transaction db.
func eraseIn(ctx context.Context, db bun.IDB, root Account, dry bool) (Erased, error) {
	if root.Type == tenancy.Admin {
		return Erased{}, worded(ErrInvalid, nil, "account %q is an admin: the operator's own accounts are not erased", root.Username)
	}
	ids, err := subtree(ctx, db, root.ID, !dry)
	if err != nil {
		return Erased{}, err
	}
	if !dry {
		if err := lockCounters(ctx, db, ids); err != nil {
			return Erased{}, err
		}
	}
	rows, err := eraseRows(ctx, db, ids, dry)
	if err != nil {
		return Erased{}, err
	}
	return Erased{Account: root, Accounts: ids, Rows: rows}, nil
}

// EraseManagedAccount erases the subtree of the account id, in the
// caller's management scope (DELETE /accounts/{id}; the management
// decision has allowed it), in one transaction with its account.erase
// audit event, and returns once every replica's authentication cache
// refuses the subtree's tokens. It returns ErrNotFound for an account
// outside the scope (or erased meanwhile), ErrInvalid for an admin
// account, and ErrUnavailable when the database cannot be reached.
func (s *Store) EraseManagedAccount(ctx context.Context, scope policy.Scope, actor Actor, id int64) (Erased, error) {
	var out Erased
	_, err := s.ManageInTx(ctx, scope, ManagementWrite{Accounts: []int64{id}, Actor: actor, deletes: true,
		Change: func(ctx context.Context, tx *Store) (AuditEvent, error) {
			var root Account
			if err := tx.db.NewSelect().Model(&root).Where(accountsScope.col("id")+" = ?", id).Scan(ctx); err != nil {
				return AuditEvent{}, err
			}
			var err error
			if out, err = eraseIn(ctx, tx.db, root, false); err != nil {
				return AuditEvent{}, err
			}
			return eraseEvent(out), nil
		}})
	return out, err
}

// EraseAccount erases the subtree of the account username for the
// operator (fleetapi tenant erase), as EraseManagedAccount does, its audit
// event's actor the operator (account and token 0, request id
// OperatorRequestID). With dry it erases nothing and returns what it
// would erase. It returns ErrNotFound (worded) for an unknown username,
// ErrInvalid for an admin account, and ErrUnavailable when the database
// cannot be reached.
func (s *Store) EraseAccount(ctx context.Context, username string, dry bool) (Erased, error) {
	var out Erased
	// The command answers once every replica refuses the tokens.
	err := s.writeInTx(ctx, func(ctx context.Context, tx bun.Tx) (bool, error) {
		var root Account
		q := tx.NewSelect().Model(&root).Where("a.username = ?", username)
		if !dry {
			q = q.For("UPDATE")
		}
		if err := q.Scan(ctx); err != nil {
			if err = Translate(err); errors.Is(err, ErrNotFound) {
				return false, worded(ErrNotFound, err, "account %q not found", username)
			}
			return false, err
		}
		var err error
		if out, err = eraseIn(ctx, tx, root, dry); err != nil || dry {
			return false, err
		}
		ev := eraseEvent(out)
		ev.RequestID = OperatorRequestID
		return true, writeAuditEvent(ctx, tx, &ev)
	})
	if err != nil {
		return Erased{}, err
	}
	return out, nil
}
