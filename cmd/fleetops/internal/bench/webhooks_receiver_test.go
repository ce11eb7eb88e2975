package bench

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/webhook"
)

// TestWebhooksReceiver: the webhooks workload's receiver, sent to by
// package webhook's client over loopback, verifies signatures with each
// endpoint's secret, reads the notification's id and created_at from the
// body, holds a dead endpoint's request until the sender's timeout,
// refuses connections when down and accepts them again on the same
// address when up; tally counts a repeated webhook-id once (a duplicate).
func TestWebhooksReceiver(t *testing.T) {
	recv, err := startReceiver()
	if err != nil {
		t.Fatal(err)
	}
	defer recv.close()
	_, key, _ := webhook.NewSecret()
	_, other, _ := webhook.NewSecret()
	recv.reset(map[int][][]byte{0: {key}, 1: {key}, 2: {key}}, map[int]bool{2: true})
	client := webhook.NewClient(webhook.Config{AllowHTTP: true, AllowNets: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, Timeout: 300 * time.Millisecond})
	created := time.Now().Add(-time.Second).UTC().Truncate(time.Microsecond)
	body := []byte(`{"type":"notification.created","timestamp":"x","data":{"id":42,"created_at":"` + created.Format(time.RFC3339Nano) + `"}}`)
	send := func(endpoint int, id string, secret []byte) webhook.Result {
		return client.Send(context.Background(), webhook.Message{URL: recv.url(endpoint), ID: id, Timestamp: time.Now(), Body: body, Secrets: [][]byte{secret}})
	}
	for _, c := range []struct {
		endpoint int
		id       string
		secret   []byte
	}{{0, "msg_a", key}, {0, "msg_a", key}, {1, "msg_a", key}, {1, "msg_b", other}} {
		if r := send(c.endpoint, c.id, c.secret); !r.OK {
			t.Fatalf("send to %d: %+v", c.endpoint, r)
		}
	}
	start := time.Now()
	if r := send(2, "msg_dead", key); r.OK || time.Since(start) < 300*time.Millisecond {
		t.Fatalf("a dead endpoint answered: %+v after %s", r, time.Since(start))
	}
	got := recv.snapshot()
	if len(got) != 4 {
		t.Fatalf("%d arrivals, want 4 (the dead endpoint's is not one): %+v", len(got), got)
	}
	for i, a := range got {
		if a.valid != (i < 3) || a.notificationID != 42 || !a.createdAt.Equal(created) {
			t.Errorf("arrival %d: %+v (valid should be %v, notification 42 created %s)", i, a, i < 3, created)
		}
	}
	var res whResult
	tally(&res, got, 0, start.Add(-time.Minute))
	if res.delivered != 3 || res.duplicates != 1 || res.invalid != 1 || res.latency.P50 < time.Second {
		t.Fatalf("tally: %d delivered, %d duplicates, %d invalid, p50 %s; want 3, 1, 1, ≥ 1 s", res.delivered, res.duplicates, res.invalid, res.latency.P50)
	}

	recv.down()
	if r := send(0, "msg_down", key); r.OK || !strings.Contains(r.Err, "refused") {
		t.Fatalf("a down receiver: %+v, want a refused connection", r)
	}
	if err := recv.up(); err != nil {
		t.Fatal(err)
	}
	if r := send(0, "msg_up", key); !r.OK {
		t.Fatalf("the receiver up again: %+v", r)
	}
}

// TestWebhooksConfig: the webhooks workload's flags and their bounds.
func TestWebhooksConfig(t *testing.T) {
	env := func(string) string { return "" }
	base := []string{"--tokens", "t.jsonl", "--workload", "webhooks"}
	c, err := parseConfig(base, env, &strings.Builder{})
	if err != nil || c.WebhookModes != "rate,dead,backlog" || c.WebhookBacklog != 100_000 || c.WebhookWide != 100 || c.WebhookDead != 10 || c.Scenarios != "" {
		t.Fatalf("defaults: %+v, %v", c, err)
	}
	for _, bad := range [][]string{
		{"--webhook-modes", "rate,fast"}, {"--webhook-modes", ""}, {"--webhook-dead", "100"}, {"--webhook-rate", "0"},
		{"--webhook-endpoints", "0"}, {"--webhook-backlog", "0"}, {"--webhook-devices", "0"}, {"--webhook-duration", "0s"},
		{"--webhook-drain-timeout", "2h"},
	} {
		if _, err := parseConfig(append(append([]string{}, base...), bad...), env, &strings.Builder{}); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
