package api_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/storage"
)

// TestPurgeDeadTokens is issue 34 item 10: tokens revoked or expired for
// longer than the retention are purged, and nothing else. A lineage minted
// through the API and revoked by its root goes whole (children first);
// a token revoked within the retention stays; a dead token that minted a
// token still kept stays, so that no kept token loses its parent; the
// stored response of a purged token's keyed create goes with it (a replay
// is a new request); the audit trail keeps every event of the purged
// tokens (GET /audit-events still lists them); the accounts' active token
// counts do not move. A second purge finds nothing.
func TestPurgeDeadTokens(t *testing.T) {
	a := newTestAPI(t)
	ctx := context.Background()
	mgr := demoToken(t, "fleetco-all")
	acme := a.accountID(t, "acme")
	mint := func(caller, name string, headers ...string) minted {
		t.Helper()
		r := a.send(http.MethodPost, "/api/v2/tokens", caller, fmt.Sprintf(`{"account_id":%d,"name":%q,"permissions":["GET *","POST /tokens"]}`, acme, name), headers...)
		if r.status != http.StatusCreated {
			t.Fatalf("mint %s: %d %s", name, r.status, r.raw)
		}
		if r.header.Get("Idempotent-Replayed") == "true" {
			t.Fatalf("mint %s: replayed %s", name, r.raw)
		}
		d := r.data(t)
		return minted{id: int64(d["id"].(float64)), secret: d["secret"].(string), parent: d["parent_token_id"]}
	}
	revoke := func(id int64) {
		t.Helper()
		if r := a.send(http.MethodDelete, fmt.Sprint("/api/v2/tokens/", id), mgr, ""); r.status != http.StatusNoContent {
			t.Fatalf("revoke %d: %d %s", id, r.status, r.raw)
		}
	}
	const retention = 30 * 24 * time.Hour
	dead := func(column string, id int64, ago time.Duration) {
		t.Helper()
		a.exec(t, fmt.Sprintf("UPDATE tokens SET %s = now() - ? * interval '1 hour' WHERE id = ?", column), int(ago.Hours()), id)
	}
	// A lineage root → child → grandchild, revoked by its root 31 days ago.
	root := mint(mgr, "purge-root")
	child := mint(root.secret, "purge-child")
	grand := mint(child.secret, "purge-grand")
	revoke(root.id)
	for _, id := range []int64{root.id, child.id, grand.id} {
		dead("revoked_at", id, retention+24*time.Hour)
	}
	// A keyed create, revoked 31 days ago; one revoked yesterday.
	keyed := mint(mgr, "purge-keyed", "Idempotency-Key", "purge-keyed")
	revoke(keyed.id)
	dead("revoked_at", keyed.id, retention+24*time.Hour)
	recent := mint(mgr, "purge-recent")
	revoke(recent.id)
	dead("revoked_at", recent.id, 24*time.Hour)
	// Expired 31 days ago; and expired 31 days ago with a live heir.
	expired := mint(mgr, "purge-expired")
	dead("expires_at", expired.id, retention+24*time.Hour)
	minter := mint(mgr, "purge-minter")
	heir := mint(minter.secret, "purge-heir")
	dead("expires_at", minter.id, retention+24*time.Hour)

	var auditsBefore int
	if err := a.db.NewRaw("SELECT count(*) FROM audit_events").Scan(ctx, &auditsBefore); err != nil {
		t.Fatal(err)
	}
	// The demo data's own long-dead tokens (acme-expired) go too.
	var demoDead int
	if err := a.db.NewRaw("SELECT count(*) FROM tokens WHERE name NOT LIKE 'purge-%' AND LEAST(revoked_at, expires_at) < now() - ? * interval '1 hour'",
		int(retention.Hours())).Scan(ctx, &demoDead); err != nil {
		t.Fatal(err)
	}
	activeBefore := a.get(fmt.Sprint("/api/v2/accounts/", acme), mgr).data(t)["usage"].(map[string]any)["tokens"]

	purged, err := a.store.Purge(ctx, retention)
	if err != nil {
		t.Fatal(err)
	}
	gone := []int64{root.id, child.id, grand.id, keyed.id, expired.id}
	if purged.Tokens != int64(len(gone)+demoDead) || purged.IdempotencyKeys != 1 {
		t.Errorf("purged %+v, want %d tokens (%d of the demo data's) and the keyed create's stored response", purged, len(gone)+demoDead, demoDead)
	}
	var left []int64
	if err := a.db.NewRaw("SELECT id FROM tokens WHERE name LIKE 'purge-%' ORDER BY id").Scan(ctx, &left); err != nil {
		t.Fatal(err)
	}
	if want := []int64{recent.id, minter.id, heir.id}; !slices.Equal(left, want) {
		t.Errorf("tokens left %v, want %v (recent, minter, heir)", left, want)
	}
	var parent *int64
	if err := a.db.NewRaw("SELECT parent_token_id FROM tokens WHERE id = ?", heir.id).Scan(ctx, &parent); err != nil || parent == nil || *parent != minter.id {
		t.Errorf("the heir's parent after the purge: %v (%v), want %d", parent, err, minter.id)
	}
	var auditsAfter int
	if err := a.db.NewRaw("SELECT count(*) FROM audit_events").Scan(ctx, &auditsAfter); err != nil || auditsAfter != auditsBefore {
		t.Errorf("audit events %d after the purge, %d before (%v)", auditsAfter, auditsBefore, err)
	}
	events, _ := a.list(t, "/api/v2/audit-events?action=token.revoke&per_page=500", mgr)
	for _, id := range []int64{root.id, child.id, grand.id} {
		if !slices.ContainsFunc(events, func(e map[string]any) bool { return e["target_id"] == float64(id) }) {
			t.Errorf("the revocation of purged token %d is no longer in GET /audit-events", id)
		}
	}
	if after := a.get(fmt.Sprint("/api/v2/accounts/", acme), mgr).data(t)["usage"].(map[string]any)["tokens"]; after != activeBefore {
		t.Errorf("active tokens %v after the purge, %v before", after, activeBefore)
	}
	tokens, _ := a.list(t, fmt.Sprintf("/api/v2/tokens?account_id=%d&per_page=500", acme), mgr)
	for _, tok := range tokens {
		if slices.Contains(gone, int64(tok["id"].(float64))) {
			t.Errorf("GET /tokens still lists purged token %v", tok["id"])
		}
	}
	// The purged keyed create, retried: a new request (a new token).
	if again := mint(mgr, "purge-keyed", "Idempotency-Key", "purge-keyed"); again.id == keyed.id {
		t.Errorf("the keyed create of a purged token answered its id")
	}
	if n, err := a.store.Purge(ctx, retention); err != nil || n != (storage.Purged{}) {
		t.Errorf("a second purge: %+v, %v", n, err)
	}
}
