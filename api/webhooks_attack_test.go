package api_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/fleetapi/fleetapi/api"
)

// TestWebhookHostileInput: a hostile tenant's ids, bodies, URLs, filters
// and headers on every /webhooks route are each a 4xx in the error
// envelope with a code, never a 5xx, never a write.
func TestWebhookHostileInput(t *testing.T) {
	a := newTestAPI(t)
	tok := demoToken(t, "acme-all")
	id := idOf(t, a.createWebhook(t, tok, `{"url":"https://hooks.acme.example/ok"}`))
	did := idOf(t, a.send("POST", fmt.Sprintf("%s/%d/test", webhooksPath, id), tok, "").data(t))
	one := fmt.Sprintf("%s/%d", webhooksPath, id)
	huge := strings.Repeat("9", 70000)
	var paths []string
	for _, bad := range []string{"0", "-1", "9223372036854775808", "18446744073709551616", "abc", "1e3", "+1", "01x", "0x10", huge, "1.0", "%00"} {
		paths = append(paths, webhooksPath+"/"+bad, webhooksPath+"/"+bad+"/deliveries", webhooksPath+"/"+bad+"/test",
			webhooksPath+"/"+bad+"/rotate-secret", fmt.Sprintf("%s/%s/deliveries/%d/retry", webhooksPath, bad, did),
			fmt.Sprintf("%s/deliveries/%s/retry", one, bad))
	}
	type tc struct{ method, path, body string }
	var cases []tc
	for _, p := range paths {
		for _, m := range []string{"GET", "PATCH", "DELETE", "POST"} {
			body := ""
			if m == "PATCH" {
				body = `{"active":false}`
			}
			cases = append(cases, tc{m, p, body})
		}
	}
	urls := []string{
		"https://[::1]/", "https://[::ffff:127.0.0.1]/", "https://[::ffff:7f00:1]/", "https://[::127.0.0.1]/", "https://[0:0:0:0:0:ffff:a00:1]/",
		"https://[64:ff9b::a9fe:a9fe]/", "https://[2002:7f00:1::]/", "https://[fe80::1%25eth0]/", "https://[fe80::1]/", "https://[fd00::1]/",
		"https://[::]/", "https://0.0.0.0/", "https://0/", "https://127.1/", "https://2130706433/", "https://0x7f000001/", "https://0177.0.0.1/",
		"https://0x7f.0.0.1/", "https://127.0.0.1./", "https://127.000.000.001/", "https://localhost/", "https://LOCALHOST/", "https://localhost./",
		"https://a.localhost/", "https://a.b.LocalHost./", "https://metadata.google.internal/", "https://printer.local/", "https://box/",
		"https://169.254.169.254/", "https://100.64.0.1/", "https://255.255.255.255/", "https://224.0.0.1/", "https://[ff02::1]/",
		"https://user@x.example/", "https://:pw@x.example/", "https://x.example@127.0.0.1/", "https://x.example%2f@127.0.0.1/",
		"https://127.0.0.1%2f.x.example/", "https://x.example:0/", "https://x.example:65536/", "https://x.example:99999999999999999999/",
		"https://x.example:-1/", "https://x.example:+443/", "https://x.example:/", "https://x.example:443:443/", "https://[::1]:443/",
		"https:x.example/", "https:/x.example/", "https:///x.example/", "//x.example/", "x.example", "ftp://x.example/", "gopher://x.example/",
		"javascript:alert(1)", "data:text/plain,x", "ws://x.example/", "HTTP://x.example/", "https://x.example/" + strings.Repeat("a", 8192),
		"https://" + strings.Repeat("a", 64) + ".example/", "https://" + strings.Repeat("a.", 130) + "example/", "https://x_y.example/",
		"https://-x.example/", "https://x.example\\@127.0.0.1/", "https://x.example\t/", "https://xn--.example/", "https://[1::]/",
		"https://[2001:db8::1]/", "https://[::ffff:8.8.8.8]/", "https://1.1.1.1.nip.io.1/", "https://x.example/#frag", "https://éx.example/",
		"https://x.example/\u2028", "https://[::1%2525]/", "https://[v1.x]/", "https:// x.example/", "https://%31%32%37.0.0.1/",
	}
	for _, u := range urls {
		cases = append(cases, tc{"POST", webhooksPath, fmt.Sprintf(`{"url":%q}`, u)}, tc{"PATCH", one, fmt.Sprintf(`{"url":%q}`, u)})
	}
	many := make([]string, 10000)
	for i := range many {
		many[i] = fmt.Sprintf("%q", fmt.Sprintf("t%d", i))
	}
	same := strings.TrimSuffix(strings.Repeat(`"sos",`, 10000), ",")
	for _, b := range []string{
		`{"url":"https://x.example/","types":[` + strings.Join(many, ",") + `]}`,
		`{"url":"https://x.example/","types":[` + same + `]}`,
		`{"url":"https://x.example/","types":[null]}`, `{"url":"https://x.example/","types":[[]]}`, `{"url":"https://x.example/","types":[""]}`,
		`{"url":"https://x.example/","types":{}}`, `{"url":"https://x.example/","description":null,"active":"null"}`,
		`{"url":"https://x.example/","description":"` + strings.Repeat("x", 1<<20) + `"}`,
		`{"url":"https://x.example/","description":"\ud800"}`, `{"url":"https://x.example/","description":"a\u0000b"}`,
		`{"URL":"https://x.example/"}`, `{"Url":"https://x.example/","url":"https://y.example/"}`, `{"url":"https://x.example/","ACTIVE":true}`,
		`{"url":"https://x.example/","active":1}`, `{"url":"https://x.example/","active":"true"}`, `{"url":"https://x.example/","id":5}`,
		`{"url":"https://x.example/","account_id":1}`, `{"url":"https://x.example/","secret":"whsec_AAAA"}`, `{"url":["https://x.example/"]}`,
		`{"url":{"$gt":""}}`, `{"url":"https://x.example/"}{"url":"https://y.example/"}`, `{"url":"https://x.example/"} x`,
		`{"url":"https://x.example/"`, ``, `null`, `"x"`, `[]`, `1`, `{"url":"https://x.example/","types":["sos"],"types":["sos"]}`,
		strings.Repeat("[", 100000), `{"url":"https://x.example/","description":` + strings.Repeat("[", 10000) + `}`,
	} {
		cases = append(cases, tc{"POST", webhooksPath, b})
		if b != `` {
			cases = append(cases, tc{"PATCH", one, strings.Replace(b, `"url":"https://x.example/",`, ``, 1)})
		}
	}
	for _, q := range []string{"state=", "state=pending&state=failed", "page=0", "page=-1", "page=99999999999999999999", "per_page=100000",
		"page=1e3", "state=PENDING", "state=%00", "cursor=x", "state=" + strings.Repeat("x", 70000)} {
		cases = append(cases, tc{"GET", one + "/deliveries?" + q, ""})
	}
	for _, q := range []string{"active=", "active=1x", "types=x", "page=0", "per_page=-5", "sort=url", "q=" + strings.Repeat("z", 70000)} {
		cases = append(cases, tc{"GET", webhooksPath + "?" + q, ""})
	}
	for _, p := range []string{"/test", "/rotate-secret", fmt.Sprintf("/deliveries/%d/retry", did)} {
		cases = append(cases, tc{"POST", one + p + "?x=1", ""}, tc{"POST", one + p, `{"x":1}`}, tc{"POST", one + p, `null`})
	}
	ctx := context.Background()
	count := func() (n int) {
		if err := a.db.NewRaw("SELECT (SELECT count(*) FROM webhooks) + (SELECT count(*) FROM webhook_deliveries) + (SELECT count(*) FROM webhooks WHERE url <> 'https://hooks.acme.example/ok' AND id = ?)", id).Scan(ctx, &n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before, audits := count(), a.auditCount(t)
	for _, c := range cases {
		r := a.send(c.method, c.path, tok, c.body)
		name := c.body
		if len(name) > 120 {
			name = name[:120] + "…"
		}
		p := c.path
		if len(p) > 120 {
			p = p[:120] + "…"
		}
		if r.status < 400 || r.status > 499 {
			t.Errorf("%s %s %s: %d %.300s", c.method, p, name, r.status, r.raw)
			continue
		}
		if code, _ := r.body["error"].(map[string]any)["code"].(string); code == "" {
			t.Errorf("%s %s %s: %d without a code: %.300s", c.method, p, name, r.status, r.raw)
		}
	}
	if after := count(); after != before || a.auditCount(t) != audits {
		t.Errorf("hostile input wrote: rows %d → %d, audit rows %d → %d", before, after, audits, a.auditCount(t))
	}
}

// TestWebhookSecretsNotInLogsOrTraces: the secrets a create and two
// rotations show are in no request log line (debug level) and in no span,
// span attribute or event of their requests.
func TestWebhookSecretsNotInLogsOrTraces(t *testing.T) {
	var logs lockedBuffer
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	a := newTestAPIWith(t, func(c *api.Config) {
		c.TracerProvider = tp
		c.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	tok := demoToken(t, "acme-all")
	w := a.createWebhook(t, tok, `{"url":"https://hooks.acme.example/trace-probe"}`, "Idempotency-Key", "trace-1")
	secrets := []string{w["secret"].(string)}
	id := idOf(t, w)
	for range 2 {
		r := a.send("POST", fmt.Sprintf("%s/%d/rotate-secret", webhooksPath, id), tok, "")
		if r.status != 200 {
			t.Fatalf("rotate: %d %s", r.status, r.raw)
		}
		secrets = append(secrets, r.data(t)["secret"].(string))
	}
	a.send("POST", webhooksPath, tok, `{"url":"https://hooks.acme.example/trace-probe"}`, "Idempotency-Key", "trace-1")
	var spans strings.Builder
	for _, s := range rec.Ended() {
		fmt.Fprintf(&spans, "%s %v %v %v\n", s.Name(), s.Attributes(), s.Events(), s.Status())
	}
	if rec.Ended() == nil || logs.String() == "" {
		t.Fatalf("no spans or no log lines recorded")
	}
	for _, s := range secrets {
		needle := strings.TrimPrefix(s, "whsec_")
		if strings.Contains(logs.String(), needle) {
			t.Error("a webhook secret is in the log")
		}
		if strings.Contains(spans.String(), needle) {
			t.Error("a webhook secret is in a span")
		}
	}
}

// TestWebhookIdempotencyKeyReuse: an Idempotency-Key reused with another
// body, the same body spelled differently, or on another route is a 4xx
// with a code or a replay, never a second webhook and never a secret again.
func TestWebhookIdempotencyKeyReuse(t *testing.T) {
	a := newTestAPI(t)
	tok := demoToken(t, "acme-all")
	first := a.createWebhook(t, tok, `{"url":"https://hooks.acme.example/idem","types":["sos"]}`, "Idempotency-Key", "k1")
	ctx := context.Background()
	count := func() (n int) {
		if err := a.db.NewRaw("SELECT count(*) FROM webhooks").Scan(ctx, &n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := count()
	for _, c := range []struct{ name, method, path, body, key string }{
		{"other url", "POST", webhooksPath, `{"url":"https://hooks.acme.example/other","types":["sos"]}`, "k1"},
		{"other types", "POST", webhooksPath, `{"url":"https://hooks.acme.example/idem","types":["overspeed"]}`, "k1"},
		{"other active", "POST", webhooksPath, `{"url":"https://hooks.acme.example/idem","types":["sos"],"active":false}`, "k1"},
		{"bad body", "POST", webhooksPath, `{"url":"https://127.0.0.1/","types":["sos"]}`, "k1"},
		{"other route", "POST", "/api/v2/passengers", `{"passenger_name":"Idem"}`, "k1"},
		{"huge key", "POST", webhooksPath, `{"url":"https://hooks.acme.example/k"}`, strings.Repeat("k", 10000)},
		{"control key", "POST", webhooksPath, `{"url":"https://hooks.acme.example/k"}`, "a\x01b"},
	} {
		r := a.send(c.method, c.path, tok, c.body, "Idempotency-Key", c.key)
		if r.status == 201 && c.name != "other route" {
			if _, shown := r.data(t)["secret"]; shown || r.data(t)["id"] != first["id"] {
				t.Errorf("%s: a new webhook or a secret again: %s", c.name, r.raw)
			}
			continue
		}
		if r.status < 400 || r.status > 499 {
			t.Errorf("%s: %d %.300s", c.name, r.status, r.raw)
			continue
		}
		if code, _ := r.body["error"].(map[string]any)["code"].(string); code == "" {
			t.Errorf("%s: no code: %s", c.name, r.raw)
		}
	}
	if after := count(); after != before {
		t.Errorf("webhooks %d → %d", before, after)
	}
}

// TestWebhookPrivilegeLost: a subaccount whose event_notifications was
// taken away after it registered a webhook can neither read nor change it
// on any route (403 PRIVILEGE_REQUIRED, nothing written), and its parent's
// user still reads it.
func TestWebhookPrivilegeLost(t *testing.T) {
	a := newTestAPI(t)
	day := demoToken(t, "globex-day-all")
	id := idOf(t, a.createWebhook(t, day, `{"url":"https://hooks.globex.example/lost"}`))
	one := fmt.Sprintf("%s/%d", webhooksPath, id)
	did := idOf(t, a.send("POST", one+"/test", day, "").data(t))
	r := a.send("PATCH", fmt.Sprintf("/api/v2/accounts/%d", a.accountID(t, "globex-day")), demoToken(t, "fleetco-all"), `{"privileges":["reports"]}`)
	if r.status != 200 {
		t.Fatalf("take the privilege away: %d %s", r.status, r.raw)
	}
	audits := a.auditCount(t)
	for _, c := range []struct{ method, path, body string }{
		{"GET", webhooksPath, ""}, {"GET", one, ""}, {"PATCH", one, `{"active":false}`}, {"DELETE", one, ""},
		{"POST", one + "/rotate-secret", ""}, {"POST", one + "/test", ""}, {"GET", one + "/deliveries", ""},
		{"POST", fmt.Sprintf("%s/deliveries/%d/retry", one, did), ""}, {"POST", webhooksPath, `{"url":"https://hooks.globex.example/x"}`},
	} {
		r := a.send(c.method, c.path, day, c.body)
		if r.status != 403 || r.errorCode(t) != "PRIVILEGE_REQUIRED" {
			t.Errorf("%s %s without event_notifications: %d %s", c.method, c.path, r.status, r.raw)
		}
	}
	if a.auditCount(t) != audits {
		t.Errorf("audit rows %d → %d", audits, a.auditCount(t))
	}
	if g := a.get(one, demoToken(t, "globex-read")); g.status != 200 {
		t.Errorf("the parent's user reads the webhook: %d %s", g.status, g.raw)
	}
}

// TestWebhookForeignCallers: every caller that may not touch acme's webhook
// (another tenant, a read-only account, a GET-only or narrow token, a
// subaccount without event_notifications, an expired token, an inactive or
// expired account) gets a 4xx with a code on every route, never acme's data,
// and writes nothing.
func TestWebhookForeignCallers(t *testing.T) {
	a := newTestAPI(t)
	acme := demoToken(t, "acme-all")
	id := idOf(t, a.createWebhook(t, acme, `{"url":"https://hooks.acme.example/foreign-probe"}`))
	one := fmt.Sprintf("%s/%d", webhooksPath, id)
	did := idOf(t, a.send("POST", one+"/test", acme, "").data(t))
	ctx := context.Background()
	count := func() (n int) {
		if err := a.db.NewRaw("SELECT (SELECT count(*) FROM webhooks) + (SELECT count(*) FROM webhook_deliveries) + (SELECT count(*) FROM audit_events)").Scan(ctx, &n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := count()
	routes := []struct{ method, path, body string }{
		{"GET", one, ""}, {"PATCH", one, `{"url":"https://evil.example/"}`}, {"DELETE", one, ""},
		{"POST", one + "/rotate-secret", ""}, {"POST", one + "/test", ""}, {"GET", one + "/deliveries", ""},
		{"POST", fmt.Sprintf("%s/deliveries/%d/retry", one, did), ""},
	}
	for _, caller := range []string{"tailspin-all", "northwind-all", "umbrella-all", "globex-read", "globex-day-all", "acme-night-all",
		"acme-services-only", "acme-expired", "hooli-all", "soylent-all"} {
		tok := demoToken(t, caller)
		for _, r := range routes {
			res := a.send(r.method, r.path, tok, r.body)
			if res.status < 400 || res.status > 499 {
				t.Errorf("%s: %s %s: %d %.300s", caller, r.method, r.path, res.status, res.raw)
				continue
			}
			if code, _ := res.body["error"].(map[string]any)["code"].(string); code == "" || strings.Contains(string(res.raw), "foreign-probe") {
				t.Errorf("%s: %s %s: %s", caller, r.method, r.path, res.raw)
			}
		}
	}
	if after := count(); after != before {
		t.Errorf("foreign callers wrote: rows %d → %d", before, after)
	}
}

// TestWebhookRetryRace: retries of one delivery racing each other, a test,
// a deactivation and the DELETE of their webhook answer 200, 202, 204, 404
// or 409, never a 5xx; afterwards nothing of the webhook remains.
func TestWebhookRetryRace(t *testing.T) {
	a := newTestAPI(t)
	tok := demoToken(t, "acme-all")
	for round := range 3 {
		id := idOf(t, a.createWebhook(t, tok, `{"url":"https://hooks.acme.example/race"}`))
		one := fmt.Sprintf("%s/%d", webhooksPath, id)
		did := idOf(t, a.send("POST", one+"/test", tok, "").data(t))
		retry := fmt.Sprintf("%s/deliveries/%d/retry", one, did)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var bad []string
		for i := range 16 {
			wg.Go(func() {
				var r response
				switch {
				case i == 15:
					r = a.send("DELETE", one, tok, "")
				case i == 7:
					r = a.send("PATCH", one, tok, `{"active":false}`)
				case i%5 == 0:
					r = a.send("POST", one+"/test", tok, "")
				default:
					r = a.send("POST", retry, tok, "")
				}
				switch r.status {
				case 200, 202, 204, 404, 409:
				default:
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
		var left int
		if err := a.db.NewRaw("SELECT count(*) FROM webhook_deliveries WHERE webhook_id = ?", id).Scan(context.Background(), &left); err != nil {
			t.Fatal(err)
		}
		if left != 0 {
			t.Errorf("round %d: %d deliveries of the deleted webhook remain", round, left)
		}
	}
}
