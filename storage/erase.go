package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage/audit"
	"github.com/fleetapi/fleetapi/tenancy"
)

// Erasing a tenant (docs/design.md §12, docs/tenants.md): the account and its
// subtree (the accounts below it, at most three levels) lose every row in
// one transaction, their tokens stop working on every replica before the
// answer (the delete triggers announce each token and account to the
// authentication caches, and the write waits for their acknowledgements,
// authsync.AwaitAcks), and one account.erase audit event records the counts.
//
// Nothing that names the subtree is left in any table, whoever wrote it:
// the stored responses of keyed creates (idempotency_keys) that name an
// erased row are deleted, whichever account made the request; earlier
// audit events stay (the operator's record) with every value that names
// an erased row replaced by "[erased]" (a username, an e-mail, a device's
// name and IMEI, a token's name, the request ids the erased accounts
// chose); other accounts' report definitions and event rules lose the
// erased devices (one that named only erased devices goes). What stays
// on purpose: the usage the subtree was served (usage_daily, billing
// data: ids and routes only) and the audit trail's ids.

// eraseStep is one table an erase deletes the subtree's rows from: where
// selects them, ?0 the subtree's account ids. The steps run in this
// order (rows before what they reference), after eraseScrubs. key, when
// set, is the table's one-column key: a stored response can name one of
// its rows (idempotency_keys.subject), and the erase deletes it.
type eraseStep struct {
	table, where, key string
}

// erasedIMEIs are the IMEIs of the subtree's devices, as SQL (while the
// devices exist).
const erasedIMEIs = "ARRAY(SELECT eo.imei FROM objects AS eo WHERE eo.account_id = ANY(?0))"

// namesOnlyErasedDevices selects the report definitions and event rules
// (of any account) whose devices are all erased: they go with them (an
// empty list would mean "every device" to an event rule).
const namesOnlyErasedDevices = "(account_id = ANY(?0) OR (cardinality(imei) > 0 AND imei <@ " + erasedIMEIs + "))"

// eraseSteps lists the tables an erase deletes the subtree's rows from, in
// order; TestEraseLeavesNoRow fails when a table holding account data is
// neither here nor kept on purpose (the audit trail, the usage), and
// TestEraseLeavesNothing when any text or JSON value of any table still
// names the subtree. The declared resources (declare: services, reports,
// events, passengers, and any resource added) have no line here:
// withDeclaredResources derives their steps, and their scrubs, from
// their descriptors when the package initialises.
var eraseSteps = []eraseStep{
	// the stored responses of the subtree's requests, and of anyone's
	// request that created a row erased below (eraseKeysWhere)
	{table: "idempotency_keys", where: "account_id = ANY(?0)"},
	{table: "object_grants", where: "subaccount_id = ANY(?0) OR imei IN (SELECT imei FROM objects WHERE account_id = ANY(?0))"},
	// the live data of docs/design.md §14 (no foreign key cascades to
	// positions; notifications reference the account): the subtree's, and
	// any other account's rows of the subtree's devices
	// webhooks' queued deliveries (and, by cascade, their attempts) before
	// the notifications they name and the webhooks they go to: a sender
	// holds a delivery's row lock while it sends, so the erase waits for a
	// send in flight and nothing is sent for the subtree after its answer
	// (docs/design.md §14).
	{table: "webhook_deliveries", where: "account_id = ANY(?0) OR notification_id IN (SELECT id FROM notifications WHERE account_id = ANY(?0) OR object_id IN (SELECT id FROM objects WHERE account_id = ANY(?0)))"},
	{table: "webhooks", where: "account_id = ANY(?0)", key: "id"},
	{table: "positions", where: "account_id = ANY(?0) OR object_id IN (SELECT id FROM objects WHERE account_id = ANY(?0))"},
	{table: "notifications", where: "account_id = ANY(?0) OR object_id IN (SELECT id FROM objects WHERE account_id = ANY(?0))"},
	{table: "service_states", where: "account_id = ANY(?0) OR service_id IN (SELECT service_id FROM services WHERE account_id = ANY(?0))"},
	// the declared resources' steps go here (withDeclaredResources)
	// the subtree's open notification streams: a stream whose slot is gone ends
	{table: "notification_streams", where: "account_id = ANY(?0)"},
	{table: "tokens", where: "account_id = ANY(?0)", key: "id"},
	{table: "objects", where: "account_id = ANY(?0)", key: "id"},
	{table: "accounts", where: "id = ANY(?0)", key: "id"},
	// the row counters the deletes above left at zero, per stripe
	{table: "account_row_counts", where: "account_id = ANY(?0)"},
}

// whereOf is the condition of step s: for the stored responses, also
// those naming a row that a later step deletes.
func (s eraseStep) whereOf() string {
	if s.table != "idempotency_keys" {
		return s.where
	}
	w := s.where
	for _, t := range eraseSteps {
		if t.key != "" {
			w += fmt.Sprintf(" OR (subject = '%s' AND subject_id IN (SELECT %s FROM %s WHERE %s))", t.table, t.key, t.table, t.where)
		}
	}
	return w
}

// eraseScrub is a table whose rows an erase keeps but rewrites: set
// replaces what names the subtree in the rows where selects (?0 the
// subtree's account ids). The scrubs run before the deletes, while the
// rows they name exist.
type eraseScrub struct {
	table, set, where string
}

// eraseScrubs are the other accounts' rows that name erased devices: their
// report definitions and event rules keep their other devices (those
// that name only erased devices are deleted by eraseSteps). The audit
// trail is scrubbed by scrubAudit.
// Derived (withDeclaredResources): one for every declared resource whose
// imei is a list of devices.
var eraseScrubs []eraseScrub

func init() { eraseSteps, eraseScrubs = withDeclaredResources(eraseSteps, registry) }

// withDeclaredResources returns steps with a step for every declared
// resource (declared: the descriptors, in declaration order) that has
// none, before the tokens' step (after what references their rows, before
// the devices and accounts they reference), and the scrubs of those whose
// imei is a list of devices. A resource's rows are those of the subtree's
// accounts (account_id), and, for a list of devices, the rows of any
// account naming only erased devices (namesOnlyErasedDevices), the other
// accounts' rows that name some losing them (the scrub). Its id is the
// key by which a stored response names a row. A declared resource without
// account_id is a programming error: it panics while the package
// initialises, so every test fails.
func withDeclaredResources(steps []eraseStep, declared []*Descriptor) ([]eraseStep, []eraseScrub) {
	var derived []eraseStep
	var scrubs []eraseScrub
	for _, d := range declared {
		if slices.ContainsFunc(steps, func(s eraseStep) bool { return s.table == d.table }) {
			continue // objects: the devices, deleted after every row naming them
		}
		if _, ok := d.scope["account_id"]; !ok {
			panic(fmt.Sprintf("storage: erase: the declared table %s has no account_id: give it an erase step of its own in eraseSteps", d.table))
		}
		step := eraseStep{table: d.table, where: "account_id = ANY(?0)", key: d.id.Name}
		if d.scope["granted_to"] == kindGrantedArray {
			step.where = namesOnlyErasedDevices
			scrubs = append(scrubs, eraseScrub{table: d.table, set: "imei = ARRAY(SELECT x FROM unnest(imei) AS x WHERE x <> ALL(" + erasedIMEIs + "))",
				where: "account_id <> ALL(?0) AND imei && " + erasedIMEIs + " AND NOT imei <@ " + erasedIMEIs})
		}
		derived = append(derived, step)
	}
	at := slices.IndexFunc(steps, func(s eraseStep) bool { return s.table == "tokens" })
	return slices.Concat(steps[:at], derived, steps[at:]), scrubs
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

// Erased is what an erase removed, or would remove.
type Erased struct {
	// Account is the erased account (the subtree's root).
	Account Account `json:"account"`
	// Accounts are the ids of the subtree, the root first.
	Accounts []int64 `json:"accounts"`
	// Rows counts the rows deleted from each table of EraseTables but the
	// row counters.
	Rows map[string]int64 `json:"rows"`
	// Scrubbed counts the rows kept whose values naming the subtree were
	// replaced or removed: "audit_events" (earlier events), "reports" and
	// "events" (other accounts' definitions that named erased devices).
	Scrubbed map[string]int64 `json:"scrubbed"`
}

// subtree returns root and the accounts below it, level by level, each
// level's rows locked FOR UPDATE behind the erase gate (root is locked by
// the caller): once
// every account of the subtree is locked, nothing can be created under or
// for them (a create locks its account, a foreign key takes KEY SHARE),
// and each level is read after the one above is locked, so a child
// committed meanwhile is found.
//
// Without lock (a dry run) nothing is locked.
func subtree(ctx context.Context, db bun.IDB, root int64, lock bool) ([]int64, error) {
	const query = "SELECT id FROM accounts WHERE manager_id = ANY(?) ORDER BY id"
	ids := []int64{root}
	for level := []int64{root}; len(level) > 0; {
		var below []int64
		if err := db.NewRaw(query, pgdialect.Array(level)).Scan(ctx, &below); err != nil {
			return nil, err
		}
		if lock && len(below) > 0 {
			// Behind the erase gate, account by account (locks.go); an
			// account erased meanwhile by another erase is not found.
			var err error
			if below, err = lockAccounts(ctx, db, accountLocks{}.with(forUpdate, below...)); err != nil {
				return nil, err
			}
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

// eraseRows deletes the subtree's rows and rewrites what names them in
// the rows kept (dry: counts both), one statement per table.
func eraseRows(ctx context.Context, db bun.IDB, ids []int64, dry bool) (rows, scrubbed map[string]int64, err error) {
	subtree := pgdialect.Array(ids)
	scrubbed = map[string]int64{}
	if scrubbed["audit_events"], err = scrubAudit(ctx, db, subtree, dry); err != nil {
		return nil, nil, fmt.Errorf("erase: audit trail: %w", err)
	}
	for _, s := range eraseScrubs {
		var n int64
		if dry {
			n, err = countWhere(ctx, db, s.table, s.where, subtree)
		} else {
			n, err = affected(db.NewUpdate().TableExpr(s.table).Set(s.set, subtree).Where(s.where, subtree).Exec(ctx))
		}
		if err != nil {
			return nil, nil, fmt.Errorf("erase: %s: %w", s.table, err)
		}
		scrubbed[s.table] = n
	}
	rows = map[string]int64{}
	for _, s := range eraseSteps {
		var n int64
		if dry {
			n, err = countWhere(ctx, db, s.table, s.whereOf(), subtree)
		} else {
			n, err = affected(db.NewDelete().TableExpr(s.table).Where(s.whereOf(), subtree).Exec(ctx))
		}
		if err != nil {
			return nil, nil, fmt.Errorf("erase %s: %w", s.table, err)
		}
		if s.table != "account_row_counts" {
			rows[s.table] = n
		}
	}
	return rows, scrubbed, nil
}

// countWhere counts the rows of table that where selects.
func countWhere(ctx context.Context, db bun.IDB, table, where string, args ...any) (int64, error) {
	n, err := db.NewSelect().TableExpr(table).Where(where, args...).Count(ctx)
	return int64(n), err
}

// affected is the number of rows a statement changed.
func affected(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// eraseEvent is the account.erase audit event of e: the target account is
// the erased account's manager, which remains (so that the manager that
// erased one of its accounts sees the event), or the account itself at the
// top; the target id is the erased account; the changes count the rows
// of each table, before and after.
func eraseEvent(e Erased) audit.Event {
	ev := audit.Event{Action: policy.ActionAccountErase, TargetAccountID: e.Account.ID, TargetID: e.Account.ID, Changes: audit.Changes{}}
	if e.Account.ManagerID != nil {
		ev.TargetAccountID = *e.Account.ManagerID
	}
	for table, n := range e.Rows {
		ev.Changes[table] = audit.Change{Before: n, After: 0}
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
	rows, scrubbed, err := eraseRows(ctx, db, ids, dry)
	if err != nil {
		return Erased{}, err
	}
	return Erased{Account: root, Accounts: ids, Rows: rows, Scrubbed: scrubbed}, nil
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
	// the senders stop sending for the subtree now: the erase waits for no
	// receiver (WebhookCancelChannel)
	if _, _, _, err := s.ManagedAccount(ctx, scope, id); err == nil {
		s.cancelSends(ctx, WebhookCancel{AccountID: id})
	}
	_, err := s.ManageInTx(ctx, scope, ManagementWrite{Accounts: []int64{id}, Actor: actor, deletes: true,
		Change: func(ctx context.Context, tx *Store) (audit.Event, error) {
			var root Account
			if err := tx.db.NewSelect().Model(&root).Where(accountsScope.col("id")+" = ?", id).Scan(ctx); err != nil {
				return audit.Event{}, err
			}
			var err error
			if out, err = eraseIn(ctx, tx.db, root, false); err != nil {
				return audit.Event{}, err
			}
			return eraseEvent(out), nil
		}})
	return out, err
}

// EraseAccount erases the subtree of the account username for the
// operator (fleetapi tenant erase), as EraseManagedAccount does, its audit
// event's actor the operator (account and token 0, request id
// audit.OperatorRequestID). With dry it erases nothing and returns what it
// would erase. It returns ErrNotFound (worded) for an unknown username,
// ErrInvalid for an admin account, and ErrUnavailable when the database
// cannot be reached.
func (s *Store) EraseAccount(ctx context.Context, username string, dry bool) (Erased, error) {
	var out Erased
	// The command answers once every replica refuses the tokens.
	err := s.writeInTx(ctx, func(ctx context.Context, tx bun.Tx) (bool, error) {
		var root Account
		err := tx.NewSelect().Model(&root).Where("a.username = ?", username).Scan(ctx)
		if err == nil && !dry {
			// The root behind the erase gate (locks.go); one erased
			// meanwhile is not found.
			err = accountLocks{root.ID: forUpdate}.lock(ctx, tx)
		}
		if err != nil {
			if err = Translate(err); errors.Is(err, ErrNotFound) {
				return false, worded(ErrNotFound, err, "account %q not found", username)
			}
			return false, err
		}
		if !dry {
			// a message, not a write: outside the transaction
			s.cancelSends(ctx, WebhookCancel{AccountID: root.ID})
		}
		if out, err = eraseIn(ctx, tx, root, dry); err != nil || dry {
			return false, err
		}
		ev := eraseEvent(out)
		ev.RequestID = audit.OperatorRequestID
		return true, audit.Write(ctx, tx, &ev)
	})
	if err != nil {
		return Erased{}, err
	}
	return out, nil
}
