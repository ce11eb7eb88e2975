package webhook_test

import (
	"strings"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/webhook"
)

// TestSignStandardWebhooksVector checks Sign against the test vector the
// Standard Webhooks specification publishes.
func TestSignStandardWebhooksVector(t *testing.T) {
	secret, err := webhook.ParseSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		t.Fatal(err)
	}
	const want = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	got := webhook.Sign("msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`), secret)
	if got != want {
		t.Fatalf("Sign = %q, want %q", got, want)
	}
	_, other, err := webhook.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	two := webhook.Sign("msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 999e6), []byte(`{"test": 2432232314}`), other, secret)
	entries := strings.Split(two, " ")
	if len(entries) != 2 || entries[1] != want || !strings.HasPrefix(entries[0], "v1,") || entries[0] == want {
		t.Fatalf("two secrets: %q, want the new entry then %q", two, want)
	}
}
