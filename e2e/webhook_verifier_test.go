package e2e_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/webhook"
)

// loopbackClient is a delivery client allowed to reach the test's
// receivers: plain http and 127.0.0.0/8.
func loopbackClient() *webhook.Client {
	return webhook.NewClient(webhook.Config{
		AllowHTTP: true,
		AllowNets: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		Timeout:   10 * time.Second,
	})
}

// TestReferenceVerifierClientSend (issue 37): requests sent by package
// webhook's Client.Send are judged by the Standard Webhooks library nobody
// here wrote (npm standardwebhooks, in web/webhook-receiver.mjs), holding
// the secrets [old, new] of a rotation, each tried on its own: a valid
// delivery verifies (204, the receiver's OK) with exactly the secret that
// signed it; one signed during the rotation (new and old) verifies with
// both; a wrong secret, a timestamp 6 minutes old and a body altered on
// the way (through a relay) are refused (400, a failed Result with that
// status).
func TestReferenceVerifierClientSend(t *testing.T) {
	oldWire, oldKey, err := webhook.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	newWire, newKey, err := webhook.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	_, otherKey, err := webhook.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	recv := startReceiver(t, oldWire, newWire)

	// relay forwards a request to the receiver with its body altered by
	// one byte and its headers (the signature) kept.
	relay := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		body = bytes.Replace(body, []byte(`"value":"104"`), []byte(`"value":"105"`), 1)
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodPost, recv.URL, bytes.NewReader(body))
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
	}))
	t.Cleanup(relay.Close)

	client := loopbackClient()
	body := []byte(`{"type":"notification.created","timestamp":"2026-11-29T13:23:56.565536Z","data":{"id":6,"account_id":3,"event_id":1,"service_id":null,"type":"overspeed","imei":"356938035643809","object_id":1,"time":"2026-11-29T13:23:56Z","created_at":"2026-11-29T13:23:56.565536Z","value":"104","lat":52.5203,"lon":13.4061,"message":"Overspeed"}}`)
	for _, c := range []struct {
		name     string
		url      string
		ts       time.Duration // from now
		secrets  [][]byte
		verified []bool // by [old, new]; nil: refused by both
		error    string // the library's message when refused
	}{
		{name: "old_secret", secrets: [][]byte{oldKey}, verified: []bool{true, false}},
		{name: "new_secret", secrets: [][]byte{newKey}, verified: []bool{false, true}},
		{name: "rotation_both", secrets: [][]byte{newKey, oldKey}, verified: []bool{true, true}},
		{name: "four_minutes_old", ts: -4 * time.Minute, secrets: [][]byte{newKey}, verified: []bool{false, true}},
		{name: "wrong_secret", secrets: [][]byte{otherKey}, error: "No matching signature found"},
		{name: "six_minutes_old", ts: -6 * time.Minute, secrets: [][]byte{newKey, oldKey}, error: "Message timestamp too old"},
		{name: "six_minutes_ahead", ts: 6 * time.Minute, secrets: [][]byte{newKey}, error: "Message timestamp too new"},
		{name: "tampered_body", url: relay.URL + "/hook", secrets: [][]byte{newKey, oldKey}, error: "No matching signature found"},
	} {
		t.Run(c.name, func(t *testing.T) {
			id := "msg_" + c.name
			url := recv.URL
			if c.url != "" {
				url = c.url
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			res := client.Send(ctx, webhook.Message{URL: url, ID: id, Timestamp: time.Now().Add(c.ts), Body: body, Secrets: c.secrets})
			want := http.StatusNoContent
			if c.verified == nil {
				want = http.StatusBadRequest
			}
			if res.Status != want || res.OK != (want == http.StatusNoContent) {
				t.Fatalf("Send: %+v, want status %d", res, want)
			}
			got := recv.waitFor(t, 10*time.Second, "request "+id, func(l receiverLine) bool { return l.ID == id })
			if c.verified == nil {
				if got.Valid || !slices.Equal(got.Verified, []bool{false, false}) || got.Error != c.error {
					t.Fatalf("the library judged %+v, want refused by both secrets with %q", got, c.error)
				}
				return
			}
			if !got.Valid || !slices.Equal(got.Verified, c.verified) || got.Type != "notification.created" || got.DataID == nil || *got.DataID != 6 {
				t.Fatalf("the library judged %+v, want verified by %v, type notification.created, data id 6", got, c.verified)
			}
		})
	}
}
