package bench

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/tenancy"
)

// The row-level-security variant: the mixed lists served the way a
// PostgREST-style service serves them. The scope is not in the query but
// in policies on the table that read per-transaction settings; each
// request is one transaction that switches to the account type's role and
// sets the account, then asks for the page and the count with no WHERE
// clause of its own but the search.

// rlsSuffix names the RLS variant of a mixed list family.
const rlsSuffix = "_rls"

// rlsFamilies are the list families with an RLS variant.
var rlsFamilies = []string{"user_list", "subaccount_list", "manager_list", "user_search", "admin_search"}

// rlsNames are the RLS variants, in order.
func rlsNames() []string {
	out := make([]string, len(rlsFamilies))
	for i, f := range rlsFamilies {
		out[i] = f + rlsSuffix
	}
	return out
}

// rlsRole is the database role of an account type in the RLS variant.
func rlsRole(t tenancy.AccountType) string { return "fleet_bench_rls_" + string(t) }

// rlsSetup is the RLS variant's setup, idempotent (run by --rls): one
// role per account type, each with one permissive SELECT policy on
// services that reads fleet.account_id (and, for a subaccount,
// fleet.parent_id) set with set_config(..., true) in the transaction. The
// policies are the same predicates as the compiled scopes of the embedded
// policy set (docs/performance.md, EXPLAIN). The server connects as the
// tables' owner and is not subject to them. It is not a migration: it
// exists only in a benchmark database.
const rlsSetup = `
DO $$
DECLARE r text;
BEGIN
	FOREACH r IN ARRAY ARRAY['fleet_bench_rls_admin', 'fleet_bench_rls_manager', 'fleet_bench_rls_user', 'fleet_bench_rls_subaccount'] LOOP
		IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = r) THEN
			EXECUTE format('CREATE ROLE %I NOLOGIN', r);
		END IF;
		EXECUTE format('GRANT SELECT ON services, accounts, object_grants TO %I', r);
	END LOOP;
END $$;
ALTER TABLE services ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS fleet_bench_rls_admin ON services;
CREATE POLICY fleet_bench_rls_admin ON services FOR SELECT TO fleet_bench_rls_admin USING (true);
DROP POLICY IF EXISTS fleet_bench_rls_manager ON services;
CREATE POLICY fleet_bench_rls_manager ON services FOR SELECT TO fleet_bench_rls_manager USING (
	account_id IN (SELECT a.id FROM accounts a
		WHERE a.id = current_setting('fleet.account_id')::bigint OR a.manager_id = current_setting('fleet.account_id')::bigint));
DROP POLICY IF EXISTS fleet_bench_rls_user ON services;
CREATE POLICY fleet_bench_rls_user ON services FOR SELECT TO fleet_bench_rls_user USING (
	account_id = current_setting('fleet.account_id')::bigint);
DROP POLICY IF EXISTS fleet_bench_rls_subaccount ON services;
CREATE POLICY fleet_bench_rls_subaccount ON services FOR SELECT TO fleet_bench_rls_subaccount USING (
	account_id = current_setting('fleet.parent_id')::bigint
	AND EXISTS (SELECT 1 FROM object_grants g
		WHERE g.subaccount_id = current_setting('fleet.account_id')::bigint AND g.imei = services.imei));
`

// setupRLS runs rlsSetup in one transaction.
func (h *harness) setupRLS(ctx context.Context) error {
	tx, err := h.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("rls setup: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if _, err := tx.ExecContext(ctx, rlsSetup); err != nil {
		return fmt.Errorf("rls setup: %w", err)
	}
	return tx.Commit()
}

// rlsScenario is the RLS variant of a mixed list family: the same draws,
// answered by a transaction under the role of the drawn account's type;
// the check compares its totals with fleetapi's floor.
func (h *harness) rlsScenario(ctx context.Context, family string) (scenario, error) {
	if !h.cfg.RLS {
		return scenario{}, fmt.Errorf("%s%s: run with --rls (it sets up the policies and roles)", family, rlsSuffix)
	}
	l, err := h.newMixedList(ctx, family)
	if err != nil {
		return scenario{}, err
	}
	sc := l.scenario()
	sc.name = family + rlsSuffix
	sc.request = "RLS: BEGIN; set_config(role, fleet.account_id); page; count(*); COMMIT — " + l.request()
	sc.api, sc.answer = nil, nil
	sc.reference = l.floor
	sc.floor = func(ctx context.Context, c call) (int64, error) { return h.rlsList(ctx, l.draw(c.k)) }
	return sc, nil
}

// rlsList answers a drawn list under RLS: the page, then the exact count
// (always: RLS leaves no scope to reason about a short page with).
func (h *harness) rlsList(ctx context.Context, d listDraw) (int64, error) {
	a := d.m.principal.Account
	tx, err := h.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	parent := a.ManagerID
	if _, err := tx.ExecContext(ctx, "SELECT set_config('role', ?, true), set_config('fleet.account_id', ?, true), set_config('fleet.parent_id', ?, true)",
		rlsRole(a.Type), strconv.FormatInt(a.ID, 10), strconv.FormatInt(parent, 10)); err != nil {
		return 0, err
	}
	var rows []storage.Service
	q := tx.NewSelect().Model(&rows).OrderExpr("service_id ASC").
		Limit(int64(d.req.PerPage)).Offset(int64((d.req.Page - 1) * d.req.PerPage))
	cq := tx.NewSelect().Model((*storage.Service)(nil))
	if d.req.Search != "" {
		pattern := "%" + storage.EscapeLike(strings.TrimSpace(d.req.Search)) + "%"
		where := `(name ILIKE ? ESCAPE '\' OR imei ILIKE ? ESCAPE '\')`
		q, cq = q.Where(where, pattern, pattern), cq.Where(where, pattern, pattern)
	}
	if err := q.Scan(ctx); err != nil {
		return 0, err
	}
	n, err := cq.Count(ctx)
	if err != nil {
		return 0, err
	}
	return int64(n), tx.Commit()
}
