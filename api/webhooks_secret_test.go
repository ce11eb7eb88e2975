package api_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/fleetapi/fleetapi/api"
	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/importfile"
	"github.com/fleetapi/fleetapi/tenancy"
	"github.com/fleetapi/fleetapi/webhook"
)

// TestWebhookSecretsNeverStored creates a webhook with an Idempotency-Key
// (and replays it), rotates its secret twice, and then looks for every
// secret shown, whole and its base64 part, in the audit trail, the stored
// idempotent responses, the decision log and a tenant export: none is
// there. The replay shows no secret; the sealed columns never hold the
// raw secret and open only with the key and the webhook's id.
func TestWebhookSecretsNeverStored(t *testing.T) {
	log := &lockedBuffer{}
	keys := testWebhookKeys(t)
	a := newTestAPIWith(t, func(c *api.Config) {})
	engine, err := policy.New(t.Context(), policy.Options{DecisionLog: log, Schema: storage.Schema()})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := api.New(api.Config{Auth: &tenancy.Authenticator{Store: a.store}, Policy: engine, Store: a.store, Ready: a.store, WebhookKeys: keys})
	if err != nil {
		t.Fatal(err)
	}
	a.handler = srv.Handler()
	ctx := context.Background()
	tok := demoToken(t, "acme-all")

	body := `{"url":"https://hooks.acme.example/secret-probe","types":["sos"]}`
	first := a.createWebhook(t, tok, body, "Idempotency-Key", "probe-1")
	id := idOf(t, first)
	replay := a.send("POST", webhooksPath, tok, body, "Idempotency-Key", "probe-1")
	if _, shown := replay.data(t)["secret"]; replay.status != 201 || replay.header.Get("Idempotent-Replayed") != "true" || shown {
		t.Fatalf("replay: %d %s", replay.status, replay.raw)
	}
	secrets := []string{first["secret"].(string)}
	for range 2 {
		r := a.send("POST", fmt.Sprintf("%s/%d/rotate-secret", webhooksPath, id), tok, "")
		if r.status != 200 {
			t.Fatalf("rotate: %d %s", r.status, r.raw)
		}
		secrets = append(secrets, r.data(t)["secret"].(string))
	}
	a.send("PATCH", fmt.Sprintf("%s/%d", webhooksPath, id), tok, `{"description":"after rotation"}`)

	var haystacks = map[string]string{"decision log": log.String()}
	for name, q := range map[string]string{
		"audit_events":     "SELECT coalesce(string_agg(t::text, E'\\n'), '') FROM audit_events AS t",
		"idempotency_keys": "SELECT coalesce(string_agg(t::text, E'\\n'), '') FROM idempotency_keys AS t",
	} {
		var s string
		if err := a.db.NewRaw(q).Scan(ctx, &s); err != nil {
			t.Fatal(err)
		}
		haystacks[name] = s
	}
	var export bytes.Buffer
	if _, err := importfile.Export(ctx, a.db.DB, "acme", &export); err != nil {
		t.Fatal(err)
	}
	haystacks["export"] = export.String()
	if !strings.Contains(export.String(), "secret-probe") {
		t.Fatalf("the export does not hold the webhook: %s", export.String())
	}
	for _, s := range secrets {
		raw, err := webhook.ParseSecret(s)
		if err != nil {
			t.Fatal(err)
		}
		needles := []string{s, strings.TrimPrefix(s, webhook.SecretPrefix), base64.RawStdEncoding.EncodeToString(raw),
			base64.URLEncoding.EncodeToString(raw), fmt.Sprintf("%x", raw)}
		for where, text := range haystacks {
			for _, n := range needles {
				if strings.Contains(text, n) {
					t.Errorf("a webhook secret is in the %s", where)
				}
			}
		}
	}
	// The sealed columns hold neither raw secret, and open with the key
	// and the webhook's id only.
	var sealed, old []byte
	if err := a.db.QueryRowContext(ctx, "SELECT secret, old_secret FROM webhooks WHERE id = ?", id).Scan(&sealed, &old); err != nil {
		t.Fatal(err)
	}
	current, _ := webhook.ParseSecret(secrets[2])
	previous, _ := webhook.ParseSecret(secrets[1])
	for _, s := range secrets {
		raw, _ := webhook.ParseSecret(s)
		if bytes.Contains(sealed, raw) || bytes.Contains(old, raw) {
			t.Error("a sealed column holds a raw secret")
		}
	}
	aad := []byte(strconv.FormatInt(id, 10))
	if got, err := keys.Open(sealed, aad); err != nil || !bytes.Equal(got, current) {
		t.Errorf("secret does not open to the current secret: %v", err)
	}
	if got, err := keys.Open(old, aad); err != nil || !bytes.Equal(got, previous) {
		t.Errorf("old_secret does not open to the previous secret (the oldest is dropped): %v", err)
	}
	if _, err := keys.Open(sealed, []byte(strconv.FormatInt(id+1, 10))); err == nil {
		t.Error("the sealed secret opens for another webhook id")
	}
}
