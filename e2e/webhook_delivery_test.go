package e2e_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/storage/demodata"
	"github.com/fleetapi/fleetapi/storage/importfile"
	"github.com/fleetapi/fleetapi/storage/storagetest"
)

// truck7 is the demo data's Truck 7 of the user acme (acmeToken), with the
// rule "Truck 7 overspeed" (above 90 km/h), as in docs/live.md's
// walkthrough.
const truck7 = "356938035643809"

// apiJSON sends one request to the server's API with acme's token and
// returns the status, the headers and the body.
func apiJSON(t *testing.T, origin, method, path string, body any) (int, http.Header, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, origin+"/api/v2"+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+acmeToken)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// fireOverspeed posts Truck 7's readings at 72 then 104 km/h (the second
// after at): the rule re-arms on the first and fires on the second.
func fireOverspeed(t *testing.T, origin string, at time.Time) {
	t.Helper()
	for i, speed := range []int{72, 104} {
		r := map[string]any{"imei": truck7, "time": at.Add(time.Duration(i) * time.Second).UTC().Format(time.RFC3339), "lat": 52.52, "lon": 13.405, "speed": speed, "ignition": true}
		status, _, b := apiJSON(t, origin, "POST", "/readings", map[string]any{"readings": []any{r}})
		if status != http.StatusOK || !strings.Contains(string(b), `"accepted":1`) {
			t.Fatalf("POST /readings (%d km/h): %d %s", speed, status, b)
		}
	}
}

// jsonKeys are the keys of a JSON object and of its "data" object.
func jsonKeys(t *testing.T, what string, b []byte) (top, data []string) {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v: %s", what, err, b)
	}
	var d map[string]json.RawMessage
	if err := json.Unmarshal(m["data"], &d); err != nil {
		t.Fatalf("%s: data: %v: %s", what, err, b)
	}
	return slices.Sorted(maps.Keys(m)), slices.Sorted(maps.Keys(d))
}

// docsPayload is the example body of docs/webhooks.md ("What arrives").
func docsPayload(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "docs", "webhooks.md"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	i := strings.Index(page, "```json\n{\"type\":\"notification.created\"")
	if i < 0 {
		t.Fatal("docs/webhooks.md has no example notification.created body")
	}
	rest := page[i+len("```json\n"):]
	return []byte(rest[:strings.Index(rest, "\n")])
}

// TestReferenceVerifierRealDelivery (issue 37): a real `fleetapi serve`
// (allowed to deliver to loopback over http) delivers to
// web/webhook-receiver.mjs, which judges every request with the Standard
// Webhooks library nobody here wrote. acme creates a webhook through the
// API (the secret shown once, not cached) and hands its secret to the
// receiver; a test delivery and then a real one (Truck 7's reading fires
// its overspeed rule) verify, the real body has the shape of
// docs/webhooks.md's example; after POST .../rotate-secret the next real
// delivery verifies with the old AND with the new secret; the delivery
// log shows every delivery succeeded.
func TestReferenceVerifierRealDelivery(t *testing.T) {
	db := storagetest.New(t)
	if _, err := importfile.Load(context.Background(), db.DB, bytes.NewReader(demodata.File())); err != nil {
		t.Fatalf("demo data: %v", err)
	}
	secrets := filepath.Join(t.TempDir(), "secrets")
	recv := startReceiverArgs(t, "--secrets-file", secrets, "--log-bodies")
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	origin := serve(t, db.URL, "FLEET_WEBHOOK_ALLOW_HTTP=true", "FLEET_WEBHOOK_ALLOW_NETS=127.0.0.0/8",
		"FLEET_WEBHOOK_KEY="+base64.StdEncoding.EncodeToString(key))

	status, h, b := apiJSON(t, origin, "POST", "/webhooks", map[string]any{
		"url": recv.URL, "description": "reference verifier", "types": []string{"overspeed"}, "active": true})
	if status != http.StatusCreated {
		t.Fatalf("POST /webhooks: %d %s", status, b)
	}
	if !strings.Contains(h.Get("Cache-Control"), "no-store") {
		t.Errorf("POST /webhooks: Cache-Control %q, want no-store (the secret is shown once)", h.Get("Cache-Control"))
	}
	var created struct {
		Data struct {
			ID     int64  `json:"id"`
			Secret string `json:"secret"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &created); err != nil || !strings.HasPrefix(created.Data.Secret, "whsec_") {
		t.Fatalf("POST /webhooks answer: %v %s", err, b)
	}
	oldSecret, id := created.Data.Secret, created.Data.ID
	if err := os.WriteFile(secrets, []byte(oldSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	// A test delivery.
	if status, _, b := apiJSON(t, origin, "POST", fmt.Sprintf("/webhooks/%d/test", id), nil); status != http.StatusAccepted {
		t.Fatalf("POST /webhooks/%d/test: %d %s", id, status, b)
	}
	got := recv.waitFor(t, 30*time.Second, "webhook.test delivery", func(l receiverLine) bool { return l.Type == "webhook.test" })
	if !got.Valid || !slices.Equal(got.Verified, []bool{true}) {
		t.Fatalf("the test delivery: %+v", got)
	}

	// A real one.
	fireOverspeed(t, origin, time.Now().Add(-3*time.Second))
	first := recv.waitFor(t, 30*time.Second, "notification.created delivery", func(l receiverLine) bool { return l.Type == "notification.created" })
	if !first.Valid || !slices.Equal(first.Verified, []bool{true}) || first.DataID == nil || !strings.HasPrefix(first.ID, "msg_") {
		t.Fatalf("the real delivery: %+v", first)
	}
	realTop, realData := jsonKeys(t, "the delivered body", []byte(first.Body))
	docTop, docData := jsonKeys(t, "docs/webhooks.md's example", docsPayload(t))
	if !slices.Equal(realTop, docTop) || !slices.Equal(realData, docData) {
		t.Errorf("docs/webhooks.md's example has keys %v / data %v, a real delivery %v / data %v", docTop, docData, realTop, realData)
	}

	// Rotation: the next delivery verifies with both secrets.
	status, h, b = apiJSON(t, origin, "POST", fmt.Sprintf("/webhooks/%d/rotate-secret", id), nil)
	if status/100 != 2 || !strings.Contains(h.Get("Cache-Control"), "no-store") {
		t.Fatalf("POST /webhooks/%d/rotate-secret: %d (Cache-Control %q) %s", id, status, h.Get("Cache-Control"), b)
	}
	var rotated struct {
		Data struct {
			Secret string `json:"secret"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &rotated); err != nil || !strings.HasPrefix(rotated.Data.Secret, "whsec_") || rotated.Data.Secret == oldSecret {
		t.Fatalf("rotate-secret answer: %v %s", err, b)
	}
	if err := os.WriteFile(secrets, []byte(oldSecret+"\n"+rotated.Data.Secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fireOverspeed(t, origin, time.Now().Add(-1*time.Second))
	second := recv.waitFor(t, 30*time.Second, "a delivery after the rotation", func(l receiverLine) bool {
		return l.Type == "notification.created" && l.ID != first.ID
	})
	if !second.Valid || !slices.Equal(second.Verified, []bool{true, true}) {
		t.Fatalf("the delivery after the rotation, verified by [old, new] = %v, want both: %+v", second.Verified, second)
	}
	for _, l := range recv.lines() {
		if !l.Valid {
			t.Errorf("the library refused a delivery: %+v", l)
		}
	}

	// The delivery log: three deliveries, each succeeded (the sender
	// records an attempt after the receiver answered: poll a moment).
	var states map[string]string
	for deadline := time.Now().Add(15 * time.Second); ; {
		status, _, b = apiJSON(t, origin, "GET", fmt.Sprintf("/webhooks/%d/deliveries", id), nil)
		if status != http.StatusOK {
			t.Fatalf("GET /webhooks/%d/deliveries: %d %s", id, status, b)
		}
		var log struct {
			Data []struct {
				MsgID string `json:"msg_id"`
				State string `json:"state"`
			} `json:"data"`
		}
		if err := json.Unmarshal(b, &log); err != nil {
			t.Fatal(err)
		}
		states = map[string]string{}
		for _, d := range log.Data {
			states[d.MsgID] = d.State
		}
		done := len(states) == 3
		for _, l := range []receiverLine{got, first, second} {
			done = done && states[l.ID] == "succeeded"
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the delivery log after 15 s, want the 3 deliveries received each succeeded: %s", b)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
