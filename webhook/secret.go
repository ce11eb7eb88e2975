package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// SecretPrefix starts every secret's wire form (Standard Webhooks 1.0).
const SecretPrefix = "whsec_"

// The sizes a decoded secret may have: NewSecret makes SecretSize bytes;
// ParseSecret accepts MinSecretSize to MaxSecretSize (the Standard Webhooks
// test vector's secret has 24 bytes).
const (
	SecretSize    = 32
	MinSecretSize = 24
	MaxSecretSize = 64
)

// ErrSecret is what ParseSecret returns (wrapped) for a malformed secret. Its
// messages never contain the secret.
var ErrSecret = errors.New("webhook: invalid secret")

// NewSecret returns a fresh secret: its wire form ("whsec_" + standard padded
// base64 of SecretSize random bytes), shown once to the integrator, and the
// raw bytes that sign.
func NewSecret() (wire string, raw []byte, err error) {
	raw = make([]byte, SecretSize)
	if _, err := rand.Read(raw); err != nil {
		return "", nil, fmt.Errorf("webhook: new secret: %w", err)
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(raw), raw, nil
}

// ParseSecret decodes a secret's wire form. It accepts only "whsec_" followed
// by standard padded base64 of MinSecretSize to MaxSecretSize bytes, and
// returns an error wrapping ErrSecret otherwise.
func ParseSecret(wire string) ([]byte, error) {
	enc, ok := strings.CutPrefix(wire, SecretPrefix)
	if !ok {
		return nil, fmt.Errorf("%w: it does not start with %q", ErrSecret, SecretPrefix)
	}
	raw, err := base64.StdEncoding.Strict().DecodeString(enc)
	if err != nil || strings.ContainsAny(enc, "\r\n") { // the decoder skips line breaks
		return nil, fmt.Errorf("%w: not standard base64", ErrSecret)
	}
	if len(raw) < MinSecretSize || len(raw) > MaxSecretSize {
		return nil, fmt.Errorf("%w: %d bytes, want %d to %d", ErrSecret, len(raw), MinSecretSize, MaxSecretSize)
	}
	return raw, nil
}

// Sign returns the webhook-signature header value for one message: for each
// secret, "v1," + base64 of HMAC-SHA256(secret, msgID + "." + Unix seconds +
// "." + body), space-separated, in the order given (during a rotation the new
// secret first, then the old one). The timestamp is truncated to seconds, as
// in the webhook-timestamp header.
func Sign(msgID string, ts time.Time, body []byte, secrets ...[]byte) string {
	var b strings.Builder
	unix := strconv.FormatInt(ts.Unix(), 10)
	for i, secret := range secrets {
		mac := hmac.New(sha256.New, secret)
		mac.Write([]byte(msgID))
		mac.Write([]byte{'.'})
		mac.Write([]byte(unix))
		mac.Write([]byte{'.'})
		mac.Write(body)
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("v1,")
		b.WriteString(base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	}
	return b.String()
}
