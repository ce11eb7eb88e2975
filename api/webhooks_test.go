package api_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/api"
)

const webhooksPath = "/api/v2/webhooks"

// createWebhook registers a webhook with token and returns its data.
func (a *testAPI) createWebhook(t *testing.T, token, body string, headers ...string) map[string]any {
	t.Helper()
	r := a.send("POST", webhooksPath, token, body, headers...)
	if r.status != http.StatusCreated {
		t.Fatalf("POST /webhooks: %d %s", r.status, r.raw)
	}
	return r.data(t)
}

// idOf is the id of a data object.
func idOf(t *testing.T, d map[string]any) int64 {
	t.Helper()
	id, ok := d["id"].(float64)
	if !ok || id < 1 {
		t.Fatalf("no id in %v", d)
	}
	return int64(id)
}

var secretForm = regexp.MustCompile(`^whsec_[A-Za-z0-9+/]{32,}={0,2}$`)

// TestWebhookLifecycle: a user registers a webhook (201, the secret once,
// no-store), lists and reads it without the secret, changes it,
// re-activates a disabled one (disabled_reason and failing_since cleared),
// rotates the secret (the old one kept sealed for 24 h), queues a test
// delivery (202), lists its deliveries with their attempts, retries one and
// deletes the webhook (204, then 404); each write is audited.
func TestWebhookLifecycle(t *testing.T) {
	a := newTestAPI(t)
	ctx := context.Background()
	tok := demoToken(t, "acme-all")
	acme := a.accountID(t, "acme")
	audits := a.auditCount(t)

	r := a.send("POST", webhooksPath, tok, `{"url":"https://hooks.acme.example/fleet","description":"board","types":["overspeed","sos"]}`)
	if r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.raw)
	}
	if cc := r.header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control %q, want no-store", cc)
	}
	w := r.data(t)
	secret, _ := w["secret"].(string)
	if !secretForm.MatchString(secret) {
		t.Fatalf("secret %q is not whsec_ and base64", secret)
	}
	id := idOf(t, w)
	if w["account_id"] != float64(acme) || w["active"] != true || w["disabled_reason"] != nil || w["description"] != "board" {
		t.Errorf("created %v", w)
	}
	one := fmt.Sprintf("%s/%d", webhooksPath, id)

	for _, path := range []string{webhooksPath, webhooksPath + "?active=true", one} {
		g := a.get(path, tok)
		// No secret, sealed or not (a demo webhook's disabled_reason
		// names the rotate-secret route: the word alone is no leak).
		if g.status != 200 || strings.Contains(string(g.raw), `"secret"`) || strings.Contains(string(g.raw), "old_secret") ||
			strings.Contains(string(g.raw), "whsec_") {
			t.Fatalf("GET %s: %d %s", path, g.status, g.raw)
		}
	}

	// PATCH: a change, then re-activation of a webhook the server disabled.
	if p := a.send("PATCH", one, tok, `{"description":"night board","types":[]}`); p.status != 200 || p.data(t)["description"] != "night board" {
		t.Fatalf("PATCH: %d %s", p.status, p.raw)
	}
	a.exec(t, `UPDATE webhooks SET active = false, disabled_reason = 'failing for 5 days', failing_since = now() - interval '6 days' WHERE id = ?`, id)
	if g := a.get(one, tok).data(t); g["active"] != false || g["disabled_reason"] != "failing for 5 days" {
		t.Fatalf("disabled: %v", g)
	}
	p := a.send("PATCH", one, tok, `{"active":true}`)
	if p.status != 200 || p.data(t)["active"] != true || p.data(t)["disabled_reason"] != nil {
		t.Fatalf("re-activate: %d %s", p.status, p.raw)
	}
	var failing *time.Time
	if err := a.db.NewRaw("SELECT failing_since FROM webhooks WHERE id = ?", id).Scan(ctx, &failing); err != nil || failing != nil {
		t.Fatalf("failing_since after re-activation: %v %v", failing, err)
	}

	// Rotation: a new secret once; the old one sealed beside it for 24 h.
	var sealedBefore []byte
	if err := a.db.NewRaw("SELECT secret FROM webhooks WHERE id = ?", id).Scan(ctx, &sealedBefore); err != nil {
		t.Fatal(err)
	}
	rot := a.send("POST", one+"/rotate-secret", tok, "")
	if rot.status != 200 {
		t.Fatalf("rotate: %d %s", rot.status, rot.raw)
	}
	rd := rot.data(t)
	if s2, _ := rd["secret"].(string); !secretForm.MatchString(s2) || s2 == secret {
		t.Fatalf("rotated secret %q (first %q)", s2, secret)
	}
	var old []byte
	var until time.Time
	if err := a.db.NewRaw("SELECT old_secret, old_secret_until FROM webhooks WHERE id = ?", id).Scan(ctx, &old, &until); err != nil {
		t.Fatal(err)
	}
	if string(old) != string(sealedBefore) {
		t.Error("old_secret is not the secret the rotation replaced")
	}
	if d := time.Until(until); d < 23*time.Hour || d > 25*time.Hour {
		t.Errorf("old_secret_until in %v, want about 24h", d)
	}

	// A test delivery, its attempts, a retry.
	td := a.send("POST", one+"/test", tok, "")
	if td.status != http.StatusAccepted {
		t.Fatalf("test: %d %s", td.status, td.raw)
	}
	del := td.data(t)
	if del["type"] != "webhook.test" || del["state"] != "pending" || del["notification_id"] != nil || del["webhook_id"] != float64(id) {
		t.Fatalf("test delivery %v", del)
	}
	did := idOf(t, del)
	// one test delivery pending at a time: a second is 409 CONFLICT and
	// queues nothing, until the first is no longer pending
	if again := a.send("POST", one+"/test", tok, ""); again.status != http.StatusConflict || again.errorCode(t) != "CONFLICT" {
		t.Fatalf("a second test while one is pending: %d %s", again.status, again.raw)
	}
	var tests int
	if err := a.db.NewRaw("SELECT count(*) FROM webhook_deliveries WHERE webhook_id = ?", id).Scan(ctx, &tests); err != nil || tests != 1 {
		t.Fatalf("%d deliveries after a refused second test (%v), want 1", tests, err)
	}
	for i := range 25 {
		a.exec(t, `INSERT INTO webhook_attempts (delivery_id, time, status, duration_ms, error) VALUES (?, now() + ? * interval '1 second', 500, 12, 'status 500')`, did, i)
	}
	a.exec(t, `UPDATE webhook_deliveries SET state = 'failed', attempts = 25, last_status = 500, last_error = 'status 500' WHERE id = ?`, did)
	list := a.get(one+"/deliveries?state=failed", tok)
	if list.status != 200 {
		t.Fatalf("deliveries: %d %s", list.status, list.raw)
	}
	items, _ := list.body["data"].([]any)
	if len(items) != 1 {
		t.Fatalf("deliveries: %s", list.raw)
	}
	log, _ := items[0].(map[string]any)["attempts_log"].([]any)
	if len(log) != 20 {
		t.Fatalf("attempts_log holds %d attempts, want the last 20", len(log))
	}
	if e := a.get(one+"/deliveries?state=pending", tok); len(e.body["data"].([]any)) != 0 {
		t.Errorf("state=pending: %s", e.raw)
	}
	re := a.send("POST", fmt.Sprintf("%s/deliveries/%d/retry", one, did), tok, "")
	if re.status != 200 || re.data(t)["state"] != "pending" || re.data(t)["attempts"] != float64(25) {
		t.Fatalf("retry: %d %s", re.status, re.raw)
	}

	if d := a.send("DELETE", one, tok, ""); d.status != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", d.status, d.raw)
	}
	if g := a.get(one, tok); g.status != 404 || g.errorCode(t) != "NOT_FOUND" {
		t.Fatalf("GET after DELETE: %d %s", g.status, g.raw)
	}
	var actions []string
	if err := a.db.NewRaw("SELECT action FROM audit_events WHERE target_id = ? AND action LIKE 'webhook.%' ORDER BY id", id).Scan(ctx, &actions); err != nil {
		t.Fatal(err)
	}
	want := "webhook.create webhook.update webhook.update webhook.rotate webhook.test webhook.retry webhook.delete"
	if strings.Join(actions, " ") != want {
		t.Errorf("audited %v, want %s", actions, want)
	}
	if got := a.auditCount(t); got != audits+7 {
		t.Errorf("%d audit rows added, want 7", got-audits)
	}
}

// TestWebhookScopes: who sees which webhook. Another tenant's webhook id
// and delivery id answer exactly as an unknown id (404, the same error);
// a subaccount needs event_notifications for every route and owns its
// webhooks; its user and a manager see the webhooks of the accounts they
// manage directly; read-only accounts write nothing.
func TestWebhookScopes(t *testing.T) {
	a := newTestAPI(t)
	acme := demoToken(t, "acme-all")
	w := a.createWebhook(t, acme, `{"url":"https://hooks.acme.example/a"}`)
	id := idOf(t, w)
	did := idOf(t, a.send("POST", fmt.Sprintf("%s/%d/test", webhooksPath, id), acme, "").data(t))

	other := demoToken(t, "tailspin-all")
	for _, c := range []struct{ method, mine, unknown string }{
		{"GET", fmt.Sprintf("%s/%d", webhooksPath, id), webhooksPath + "/999999999"},
		{"PATCH", fmt.Sprintf("%s/%d", webhooksPath, id), webhooksPath + "/999999999"},
		{"DELETE", fmt.Sprintf("%s/%d", webhooksPath, id), webhooksPath + "/999999999"},
		{"POST", fmt.Sprintf("%s/%d/rotate-secret", webhooksPath, id), webhooksPath + "/999999999/rotate-secret"},
		{"POST", fmt.Sprintf("%s/%d/test", webhooksPath, id), webhooksPath + "/999999999/test"},
		{"GET", fmt.Sprintf("%s/%d/deliveries", webhooksPath, id), webhooksPath + "/999999999/deliveries"},
		{"POST", fmt.Sprintf("%s/%d/deliveries/%d/retry", webhooksPath, id, did), fmt.Sprintf("%s/999999999/deliveries/%d/retry", webhooksPath, did)},
	} {
		body := ""
		if c.method == "PATCH" {
			body = `{"active":false}`
		}
		got := a.send(c.method, c.mine, other, body)
		unknown := a.send(c.method, c.unknown, other, body)
		if got.status != 404 || unknown.status != 404 || !sameError(got, unknown) {
			t.Errorf("%s %s by another tenant: %d %s; unknown id: %d %s", c.method, c.mine, got.status, got.raw, unknown.status, unknown.raw)
		}
	}
	// A delivery of another webhook, even one of the same account, is 404
	// like an unknown delivery.
	w2 := idOf(t, a.createWebhook(t, acme, `{"url":"https://hooks.acme.example/b"}`))
	cross := a.send("POST", fmt.Sprintf("%s/%d/deliveries/%d/retry", webhooksPath, w2, did), acme, "")
	unknownDelivery := a.send("POST", fmt.Sprintf("%s/%d/deliveries/999999999/retry", webhooksPath, w2), acme, "")
	if cross.status != 404 || !sameError(cross, unknownDelivery) {
		t.Errorf("another webhook's delivery: %d %s; unknown: %s", cross.status, cross.raw, unknownDelivery.raw)
	}
	if l := a.get(webhooksPath, other); l.status != 200 || len(l.body["data"].([]any)) != 0 {
		t.Errorf("another tenant's list: %s", l.raw)
	}

	// Subaccounts: without event_notifications nothing; with it their own.
	night := demoToken(t, "acme-night-all")
	for _, r := range []response{a.get(webhooksPath, night), a.send("POST", webhooksPath, night, `{"url":"https://x.example/"}`),
		a.get(fmt.Sprintf("%s/%d", webhooksPath, id), night)} {
		if r.status != 403 || r.errorCode(t) != "PRIVILEGE_REQUIRED" {
			t.Errorf("subaccount without event_notifications: %d %s", r.status, r.raw)
		}
	}
	day := demoToken(t, "globex-day-all")
	sub := a.createWebhook(t, day, `{"url":"https://hooks.globex.example/day"}`)
	if sub["account_id"] != float64(a.accountID(t, "globex-day")) {
		t.Errorf("a subaccount's webhook belongs to %v, want the subaccount", sub["account_id"])
	}
	subPath := fmt.Sprintf("%s/%d", webhooksPath, idOf(t, sub))
	if g := a.get(subPath, demoToken(t, "globex-read")); g.status != 200 {
		t.Errorf("the subaccount's user reads its webhook: %d %s", g.status, g.raw)
	}
	if g := a.get(fmt.Sprintf("%s/%d", webhooksPath, id), day); g.status != 404 {
		t.Errorf("a subaccount reads its parent's sibling's webhook: %d %s", g.status, g.raw)
	}
	if g := a.get(fmt.Sprintf("%s/%d", webhooksPath, id), demoToken(t, "fleetco-all")); g.status != 200 {
		t.Errorf("acme's manager reads acme's webhook: %d %s", g.status, g.raw)
	}
	if g := a.get(fmt.Sprintf("%s/%d", webhooksPath, id), demoToken(t, "northwind-all")); g.status != 404 {
		t.Errorf("the other tenant's manager reads acme's webhook: %d %s", g.status, g.raw)
	}
	// Read-only and GET-only callers write nothing.
	if r := a.send("POST", webhooksPath, demoToken(t, "umbrella-all"), `{"url":"https://x.example/"}`); r.status != 403 || r.errorCode(t) != "READ_ONLY_ACCOUNT" {
		t.Errorf("read-only create: %d %s", r.status, r.raw)
	}
	if r := a.send("POST", subPath+"/rotate-secret", demoToken(t, "globex-read"), ""); r.status != 403 || r.errorCode(t) != "TOKEN_PERMISSION_DENIED" {
		t.Errorf("GET-only rotate: %d %s", r.status, r.raw)
	}
}

// sameError reports whether two error answers are the same but for their
// request ids.
func sameError(a, b response) bool {
	strip := regexp.MustCompile(`"request_id":"[^"]*"`)
	return a.status == b.status && strip.ReplaceAllString(string(a.raw), "") == strip.ReplaceAllString(string(b.raw), "")
}

// TestWebhookBadInput: every malformed body, field, URL form, id and
// parameter is a 4xx in the error envelope with a stable code, and writes
// nothing.
func TestWebhookBadInput(t *testing.T) {
	a := newTestAPI(t)
	tok := demoToken(t, "acme-all")
	id := idOf(t, a.createWebhook(t, tok, `{"url":"https://hooks.acme.example/ok"}`))
	one := fmt.Sprintf("%s/%d", webhooksPath, id)
	long := strings.Repeat("a", 8192)
	cases := []struct {
		name, method, path, body, code, field string
	}{
		{"unknown field", "POST", webhooksPath, `{"url":"https://x.example/","secret":"whsec_x"}`, "INVALID_BODY", ""},
		{"url missing", "POST", webhooksPath, `{}`, "VALIDATION_FAILED", "url"},
		{"url null", "POST", webhooksPath, `{"url":null}`, "VALIDATION_FAILED", "url"},
		{"url number", "POST", webhooksPath, `{"url":5}`, "INVALID_BODY", ""},
		{"url http", "POST", webhooksPath, `{"url":"http://hooks.acme.example/"}`, "VALIDATION_FAILED", "url"},
		{"url loopback", "POST", webhooksPath, `{"url":"https://127.0.0.1/"}`, "VALIDATION_FAILED", "url"},
		{"url metadata", "POST", webhooksPath, `{"url":"https://169.254.169.254/latest"}`, "VALIDATION_FAILED", "url"},
		{"url userinfo", "POST", webhooksPath, `{"url":"https://user:pw@hooks.acme.example/"}`, "VALIDATION_FAILED", "url"},
		{"url 8 KiB", "POST", webhooksPath, `{"url":"https://hooks.acme.example/` + long + `"}`, "VALIDATION_FAILED", "url"},
		{"url file", "POST", webhooksPath, `{"url":"file:///etc/passwd"}`, "VALIDATION_FAILED", "url"},
		{"url empty", "POST", webhooksPath, `{"url":""}`, "VALIDATION_FAILED", "url"},
		{"url NUL", "POST", webhooksPath, `{"url":"https://x.example/\u0000"}`, "VALIDATION_FAILED", "url"},
		{"description long", "POST", webhooksPath, `{"url":"https://x.example/","description":"` + strings.Repeat("é", 501) + `"}`, "VALIDATION_FAILED", "description"},
		{"description number", "POST", webhooksPath, `{"url":"https://x.example/","description":1}`, "INVALID_BODY", ""},
		{"types unknown", "POST", webhooksPath, `{"url":"https://x.example/","types":["overspeed","teleport"]}`, "VALIDATION_FAILED", "types"},
		{"types twice", "POST", webhooksPath, `{"url":"https://x.example/","types":["sos","sos"]}`, "VALIDATION_FAILED", "types"},
		{"types not a list", "POST", webhooksPath, `{"url":"https://x.example/","types":"sos"}`, "INVALID_BODY", ""},
		{"types of numbers", "POST", webhooksPath, `{"url":"https://x.example/","types":[1]}`, "INVALID_BODY", ""},
		{"types test type", "POST", webhooksPath, `{"url":"https://x.example/","types":["webhook.test"]}`, "VALIDATION_FAILED", "types"},
		{"active string", "POST", webhooksPath, `{"url":"https://x.example/","active":"yes"}`, "INVALID_BODY", ""},
		{"repeated key", "POST", webhooksPath, `{"url":"https://x.example/","url":"https://y.example/"}`, "INVALID_BODY", ""},
		{"not an object", "POST", webhooksPath, `["https://x.example/"]`, "INVALID_BODY", ""},
		{"query parameter", "POST", webhooksPath + "?x=1", `{"url":"https://x.example/"}`, "INVALID_PARAMETER", ""},
		{"patch empty", "PATCH", one, `{}`, "VALIDATION_FAILED", "body"},
		{"patch null", "PATCH", one, `{"active":null}`, "VALIDATION_FAILED", "active"},
		{"patch types null", "PATCH", one, `{"types":null}`, "INVALID_BODY", ""},
		{"types null", "POST", webhooksPath, `{"url":"https://x.example/","types":null}`, "INVALID_BODY", ""},
		{"patch url private", "PATCH", one, `{"url":"https://10.0.0.5/"}`, "VALIDATION_FAILED", "url"},
		{"patch unknown", "PATCH", one, `{"account_id":3}`, "INVALID_BODY", ""},
		{"id overflow", "GET", webhooksPath + "/9223372036854775808", "", "INVALID_PARAMETER", ""},
		{"id zero", "GET", webhooksPath + "/0", "", "INVALID_PARAMETER", ""},
		{"id text", "DELETE", webhooksPath + "/abc", "", "INVALID_PARAMETER", ""},
		{"delivery id overflow", "POST", one + "/deliveries/99999999999999999999/retry", "", "INVALID_PARAMETER", ""},
		{"rotate with a body", "POST", one + "/rotate-secret", `{"x":1}`, "INVALID_BODY", ""},
		{"deliveries bad state", "GET", one + "/deliveries?state=lost", "", "INVALID_PARAMETER", ""},
		{"deliveries unknown parameter", "GET", one + "/deliveries?sort=id", "", "INVALID_PARAMETER", ""},
		{"deliveries per_page", "GET", one + "/deliveries?per_page=0", "", "INVALID_PARAMETER", ""},
		{"list unknown filter", "GET", webhooksPath + "?url=x", "", "INVALID_PARAMETER", ""},
		{"list active not a bool", "GET", webhooksPath + "?active=maybe", "", "INVALID_PARAMETER", ""},
	}
	var before int
	if err := a.db.NewRaw("SELECT count(*) FROM webhooks").Scan(context.Background(), &before); err != nil {
		t.Fatal(err)
	}
	audits := a.auditCount(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := a.send(c.method, c.path, tok, c.body)
			if r.status != 400 {
				t.Fatalf("%d %s, want 400 %s", r.status, r.raw, c.code)
			}
			if got := r.errorCode(t); got != c.code {
				t.Fatalf("code %s, want %s: %s", got, c.code, r.raw)
			}
			if c.field != "" {
				fields, _ := r.body["error"].(map[string]any)["details"].(map[string]any)["fields"].(map[string]any)
				if _, ok := fields[c.field]; !ok {
					t.Fatalf("no reason for field %s: %s", c.field, r.raw)
				}
			}
		})
	}
	var after int
	if err := a.db.NewRaw("SELECT count(*) FROM webhooks").Scan(context.Background(), &after); err != nil {
		t.Fatal(err)
	}
	if after != before || a.auditCount(t) != audits {
		t.Errorf("bad input wrote: webhooks %d → %d, audit rows %d → %d", before, after, audits, a.auditCount(t))
	}
}

// TestWebhookWithoutKey: a server without FLEET_WEBHOOK_KEY answers
// creates and rotations 503 with the reason, and still reads.
func TestWebhookWithoutKey(t *testing.T) {
	a := newTestAPIWith(t, func(c *api.Config) { c.WebhookKeys = nil })
	tok := demoToken(t, "acme-all")
	r := a.send("POST", webhooksPath, tok, `{"url":"https://hooks.acme.example/"}`)
	if r.status != 503 || r.errorCode(t) != "SERVICE_UNAVAILABLE" || !strings.Contains(string(r.raw), "webhook_key_unset") {
		t.Fatalf("create without a key: %d %s", r.status, r.raw)
	}
	if g := a.get(webhooksPath, tok); g.status != 200 {
		t.Fatalf("list without a key: %d %s", g.status, g.raw)
	}
}

// TestWebhookQuotaRace: creates racing for the last places of the webhooks
// quota never exceed it; the others are 403 QUOTA_EXCEEDED, none 5xx; the
// quota shows in GET /accounts/{id}.
func TestWebhookQuotaRace(t *testing.T) {
	a := newTestAPI(t)
	tok := demoToken(t, "acme-all")
	acme := a.accountID(t, "acme")
	count := func() int {
		t.Helper()
		var n int
		if err := a.db.NewRaw("SELECT count(*) FROM webhooks WHERE account_id = ?", acme).Scan(context.Background(), &n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// The quota leaves 3 places beside acme's demo webhooks: one taken
	// first, the last 2 raced for.
	quota := count() + 3
	a.exec(t, "UPDATE accounts SET quota_webhooks = ? WHERE id = ?", quota, acme)
	a.createWebhook(t, tok, `{"url":"https://hooks.acme.example/first"}`)
	const racers = 8
	statuses := make([]int, racers)
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() {
			statuses[i] = a.send("POST", webhooksPath, tok, fmt.Sprintf(`{"url":"https://hooks.acme.example/%d"}`, i)).status
		})
	}
	wg.Wait()
	created := 0
	for _, st := range statuses {
		switch st {
		case 201:
			created++
		case 403:
		default:
			t.Errorf("status %d in the race", st)
		}
	}
	if n := count(); created != 2 || n != quota {
		t.Errorf("%d created in the race, %d stored; want 2 and %d (the quota)", created, n, quota)
	}
	r := a.send("POST", webhooksPath, tok, `{"url":"https://hooks.acme.example/over"}`)
	if r.status != 403 || r.errorCode(t) != "QUOTA_EXCEEDED" {
		t.Fatalf("over the quota: %d %s", r.status, r.raw)
	}
	g := a.get(fmt.Sprintf("/api/v2/accounts/%d", acme), demoToken(t, "fleetco-all")).data(t)
	if q := g["quotas"].(map[string]any)["webhooks"]; q != float64(quota) {
		t.Errorf("quotas.webhooks %v, want %d", q, quota)
	}
	if u := g["usage"].(map[string]any)["webhooks"]; u != float64(quota) {
		t.Errorf("usage.webhooks %v, want %d", u, quota)
	}
}

// TestWebhookConcurrentWrites: PATCH, rotate, test and DELETE of one
// webhook at once answer no 5xx; after the delete, every write is 404.
func TestWebhookConcurrentWrites(t *testing.T) {
	a := newTestAPI(t)
	tok := demoToken(t, "acme-all")
	for round := range 3 {
		one := fmt.Sprintf("%s/%d", webhooksPath, idOf(t, a.createWebhook(t, tok, `{"url":"https://hooks.acme.example/c"}`)))
		var wg sync.WaitGroup
		var mu sync.Mutex
		var bad []string
		for i := range 12 {
			wg.Go(func() {
				var r response
				switch i % 4 {
				case 0:
					r = a.send("PATCH", one, tok, fmt.Sprintf(`{"description":"r%d-%d","active":%t}`, round, i, i%8 == 0))
				case 1:
					r = a.send("POST", one+"/rotate-secret", tok, "")
				case 2:
					r = a.send("POST", one+"/test", tok, "")
				case 3:
					if i == 11 {
						r = a.send("DELETE", one, tok, "")
					} else {
						r = a.get(one+"/deliveries", tok)
					}
				}
				// 409: a second test while one is pending
				if r.status >= 500 || (r.status >= 400 && r.status != 404 && !(i%4 == 2 && r.status == 409)) {
					mu.Lock()
					bad = append(bad, fmt.Sprintf("%d %s", r.status, r.raw))
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(bad) > 0 {
			t.Errorf("round %d: %v", round, bad)
		}
		if g := a.get(one, tok); g.status != 404 {
			t.Errorf("round %d: after the delete %d", round, g.status)
		}
	}
}
