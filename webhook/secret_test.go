package webhook_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/fleetapi/fleetapi/webhook"
)

func TestNewSecretRoundTrip(t *testing.T) {
	wire, raw, err := webhook.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(wire, "whsec_") || len(raw) != webhook.SecretSize {
		t.Fatalf("NewSecret = %q, %d bytes", wire, len(raw))
	}
	back, err := webhook.ParseSecret(wire)
	if err != nil || !bytes.Equal(back, raw) {
		t.Fatalf("ParseSecret(NewSecret) = %x, %v; want %x", back, err, raw)
	}
	wire2, _, _ := webhook.NewSecret()
	if wire2 == wire {
		t.Fatal("two NewSecret calls gave the same secret")
	}
}

func TestParseSecret(t *testing.T) {
	b64 := func(n int) string { return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, n)) }
	for _, ok := range []string{"whsec_" + b64(24), "whsec_" + b64(32), "whsec_" + b64(64), "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"} {
		if _, err := webhook.ParseSecret(ok); err != nil {
			t.Errorf("ParseSecret(%q) = %v", ok, err)
		}
	}
	for name, bad := range map[string]string{
		"empty":       "",
		"no_prefix":   b64(32),
		"upper":       "WHSEC_" + b64(32),
		"short":       "whsec_" + b64(23),
		"long":        "whsec_" + b64(65),
		"raw_url_b64": "whsec_" + base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{0xfb}, 32)),
		"unpadded":    "whsec_" + base64.RawStdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32)),
		"space":       "whsec_ " + b64(32),
		"newline":     "whsec_" + b64(32) + "\n",
		"prefix_only": "whsec_",
	} {
		_, err := webhook.ParseSecret(bad)
		if !errors.Is(err, webhook.ErrSecret) {
			t.Errorf("%s: ParseSecret = %v, want ErrSecret", name, err)
		}
		if err != nil && len(bad) > 12 && strings.Contains(err.Error(), bad[6:]) {
			t.Errorf("%s: error %q echoes the secret", name, err)
		}
	}
}
