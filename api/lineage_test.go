package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/api"
	"github.com/fleetapi/fleetapi/api/ratelimit"
	"github.com/fleetapi/fleetapi/tenancy"
)

// minted is a token created through POST /tokens.
type minted struct {
	id     int64
	secret string
	parent any // parent_token_id as the response shows it
}

// mint creates a token through POST /tokens with the caller's secret.
func (a *testAPI) mint(t *testing.T, caller string, body map[string]any) minted {
	t.Helper()
	b, _ := json.Marshal(body)
	r := a.send(http.MethodPost, "/api/v2/tokens", caller, string(b))
	if r.status != http.StatusCreated {
		t.Fatalf("POST /tokens %s: %d %s", b, r.status, r.raw)
	}
	d := r.data(t)
	return minted{id: int64(d["id"].(float64)), secret: d["secret"].(string), parent: d["parent_token_id"]}
}

// tokenIDOf returns the id of the token with that secret.
func (a *testAPI) tokenIDOf(t *testing.T, secret string) int64 {
	t.Helper()
	hash, err := tenancy.HashToken(secret)
	if err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := a.db.NewRaw("SELECT id FROM tokens WHERE hash = ?", hash[:]).Scan(context.Background(), &id); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestTokenLineage (docs/design.md §9, issue 19 item 9): a token minted through
// POST /tokens records its minting token (parent_token_id, in the answer
// and in GET /tokens); revoking a token revokes every token minted from
// it, transitively, in the same transaction, one token.revoke audit event
// each, whoever revokes it (the API, the command line, SQL); the minting
// token and tokens minted beside it are untouched; a token cannot be
// minted from a revoked one.
func TestTokenLineage(t *testing.T) {
	a := newTestAPI(t)
	root := demoToken(t, "acme-all")
	rootID := a.tokenIDOf(t, root)
	acme, night := a.accountID(t, "acme"), a.accountID(t, "acme-night")
	child := a.mint(t, root, map[string]any{"name": "child", "permissions": []string{"*"}})
	grand := a.mint(t, child.secret, map[string]any{"name": "grand", "account_id": night, "permissions": []string{"GET *", "POST /tokens"}})
	great := a.mint(t, grand.secret, map[string]any{"name": "great", "account_id": night, "permissions": []string{"GET *"}})
	sibling := a.mint(t, root, map[string]any{"name": "sibling", "permissions": []string{"GET *"}})
	if child.parent != float64(rootID) || grand.parent != float64(child.id) || great.parent != float64(grand.id) {
		t.Fatalf("parent_token_id in the answers: %v %v %v, want %d %d %d", child.parent, grand.parent, great.parent, rootID, child.id, grand.id)
	}
	// GET /tokens shows the lineage, and filters on it
	r := a.get(fmt.Sprintf("/api/v2/tokens?parent_token_id=%d&sort=name", rootID), root)
	if r.status != http.StatusOK {
		t.Fatalf("GET /tokens: %d %s", r.status, r.raw)
	}
	var names []string
	for _, it := range r.body["data"].([]any) {
		tok := it.(map[string]any)
		names = append(names, tok["name"].(string))
		if tok["parent_token_id"] != float64(rootID) {
			t.Errorf("GET /tokens: %v", tok)
		}
	}
	if !slices.Equal(names, []string{"child", "sibling"}) {
		t.Errorf("tokens minted by the root: %v", names)
	}
	if r := a.get("/api/v2/tokens?name=acme-all", root); r.body["data"].([]any)[0].(map[string]any)["parent_token_id"] != nil {
		t.Errorf("a token made by the import shows a parent: %s", r.raw)
	}

	// revoking the child revokes its heirs, each audited, in one request
	audits := a.auditCount(t)
	if r := a.send(http.MethodDelete, fmt.Sprintf("/api/v2/tokens/%d", child.id), root, ""); r.status != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", r.status, r.raw)
	}
	for _, tok := range []minted{child, grand, great} {
		if r := a.get("/api/v2/me", tok.secret); r.status != http.StatusUnauthorized {
			t.Errorf("token %d after its lineage was revoked: %d %s", tok.id, r.status, r.raw)
		}
	}
	for _, s := range []string{root, sibling.secret} {
		if r := a.get("/api/v2/me", s); r.status != http.StatusOK {
			t.Errorf("a token outside the revoked lineage: %d %s", r.status, r.raw)
		}
	}
	if n := a.auditCount(t) - audits; n != 3 {
		t.Errorf("%d audit events, want 3 (the token and its two heirs)", n)
	}
	var events []struct {
		TargetID        int64  `bun:"target_id"`
		TargetAccountID int64  `bun:"target_account_id"`
		ActorTokenID    int64  `bun:"actor_token_id"`
		RequestID       string `bun:"request_id"`
		Changes         string `bun:"changes"`
	}
	if err := a.db.NewRaw(`SELECT target_id, target_account_id, actor_token_id, request_id, changes::text AS changes
		FROM audit_events WHERE action = 'token.revoke' ORDER BY target_id`).Scan(context.Background(), &events); err != nil {
		t.Fatal(err)
	}
	if len(events) != 3 {
		t.Fatalf("revoke events %+v", events)
	}
	wantTargets := [][2]int64{{child.id, acme}, {grand.id, night}, {great.id, night}}
	for i, ev := range events {
		if ev.TargetID != wantTargets[i][0] || ev.TargetAccountID != wantTargets[i][1] || ev.ActorTokenID != rootID ||
			ev.RequestID != events[0].RequestID || ev.RequestID == "" {
			t.Errorf("event %d: %+v, want target %v by token %d in one request", i, ev, wantTargets[i], rootID)
		}
	}
	// a token cannot be minted from a revoked one (the database refuses it,
	// whoever writes)
	if _, err := a.db.ExecContext(context.Background(), `INSERT INTO tokens (account_id, name, hash, parent_token_id)
		VALUES (?, 'orphan', decode(repeat('ab', 32), 'hex'), ?)`, acme, child.id); err == nil {
		t.Error("a token was stored with a revoked parent")
	}

	// the command line's revoke and a revoke in SQL revoke the heirs too
	for _, how := range []string{"cli", "sql"} {
		p := a.mint(t, root, map[string]any{"name": "p-" + how, "permissions": []string{"*"}})
		c := a.mint(t, p.secret, map[string]any{"name": "c-" + how, "permissions": []string{"*"}})
		g := a.mint(t, c.secret, map[string]any{"name": "g-" + how, "permissions": []string{"GET *"}})
		if how == "cli" {
			if err := a.store.RevokeToken(context.Background(), p.id); err != nil {
				t.Fatal(err)
			}
		} else {
			a.exec(t, "UPDATE tokens SET revoked_at = now() WHERE id = ?", p.id)
		}
		for _, tok := range []minted{p, c, g} {
			if r := a.get("/api/v2/me", tok.secret); r.status != http.StatusUnauthorized {
				t.Errorf("%s revoke: token %d: %d %s", how, tok.id, r.status, r.raw)
			}
		}
	}
}

// TestMintedTokensShareBudget (issue 19 item 7): a token's children and
// grandchildren count against its rate limit as well as their own, so a
// token with rate_limit 5 that mints two children of 5 each is served 5
// requests a minute in all, not 15; a child's own smaller limit still
// holds; the RateLimit headers describe the tightest budget; and a token
// minted tenancy.MaxTokenGeneration times over mints no more.
func TestMintedTokensShareBudget(t *testing.T) {
	// a stopped clock: no budget refills while the test runs, however slow
	stopped := time.Now()
	a := newTestAPIWith(t, func(c *api.Config) {
		l := ratelimit.NewLocal()
		l.Now = func() time.Time { return stopped }
		c.Limiter = l
	})
	parent := a.mintToken(t, "acme", "budget-parent", []string{"*"}, nil, 5)
	c1 := a.mint(t, parent, map[string]any{"name": "c1", "permissions": []string{"*"}, "rate_limit": 5})
	c2 := a.mint(t, parent, map[string]any{"name": "c2", "permissions": []string{"*"}, "rate_limit": 5})
	g := a.mint(t, c1.secret, map[string]any{"name": "g", "permissions": []string{"GET *"}, "rate_limit": 2})
	// three POSTs spent: the parent minted twice, c1 once (5 - 3 = 2 left)
	served := 0
	for _, s := range []string{c1.secret, c2.secret, g.secret, parent, c1.secret, c2.secret, g.secret, parent} {
		r := a.get("/api/v2/me", s)
		switch r.status {
		case http.StatusOK:
			served++
		case http.StatusTooManyRequests:
			if r.errorCode(t) != "RATE_LIMITED" || r.header.Get("Retry-After") == "" {
				t.Fatalf("429 %s", r.raw)
			}
		default:
			t.Fatalf("GET /me: %d %s", r.status, r.raw)
		}
	}
	if served != 2 {
		t.Fatalf("the family of a token with rate_limit 5 was served %d more requests after 3 mints, want 2", served)
	}

	// a child's own smaller limit holds under a roomy parent, and the
	// headers name the tightest budget
	roomy := a.mintToken(t, "acme", "budget-roomy", []string{"*"}, nil, 100)
	small := a.mint(t, roomy, map[string]any{"name": "small", "permissions": []string{"GET *"}, "rate_limit": 2})
	for i := range 3 {
		r := a.get("/api/v2/me", small.secret)
		want := http.StatusOK
		if i == 2 {
			want = http.StatusTooManyRequests
		}
		if r.status != want || r.header.Get("RateLimit-Limit") != "2" {
			t.Fatalf("request %d of a child limited to 2: %d, RateLimit-Limit %q", i, r.status, r.header.Get("RateLimit-Limit"))
		}
	}
	if r := a.get("/api/v2/me", roomy); r.status != http.StatusOK || r.header.Get("RateLimit-Remaining") != "96" {
		t.Fatalf("the parent after 1 mint and 2 of its child's requests: %d, remaining %q, want 96", r.status, r.header.Get("RateLimit-Remaining"))
	}

	// the lineage is bounded: a token minted MaxTokenGeneration times over
	// mints no more (403 exceeds_token, field generation)
	s := a.mintToken(t, "acme", "gen-0", []string{"*"}, nil, 0)
	for i := 1; i <= tenancy.MaxTokenGeneration; i++ {
		s = a.mint(t, s, map[string]any{"name": fmt.Sprintf("gen-%d", i), "permissions": []string{"*"}}).secret
	}
	r := a.send(http.MethodPost, "/api/v2/tokens", s, `{"name":"one-too-many","permissions":["GET *"]}`)
	if reason := managementReason(t, r); reason != "exceeds_token" {
		t.Fatalf("minting from generation %d: %d %s", tenancy.MaxTokenGeneration, r.status, r.raw)
	}
	if d := r.body["error"].(map[string]any)["details"].(map[string]any); d["field"] != "generation" {
		t.Fatalf("details %v", d)
	}
	if r := a.get("/api/v2/me", s); r.status != http.StatusOK {
		t.Fatalf("the deepest token itself works: %d %s", r.status, r.raw)
	}
}
