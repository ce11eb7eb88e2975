package webhook_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/fleetapi/fleetapi/webhook"
)

func newKey(t *testing.T) []byte {
	t.Helper()
	k := make([]byte, webhook.KeySize)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return k
}

func ring(t *testing.T, keys ...[]byte) *webhook.KeyRing {
	t.Helper()
	r, err := webhook.NewKeyRing(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestKeyRing(t *testing.T) {
	oldKey, newK, otherKey := newKey(t), newKey(t), newKey(t)
	secret := []byte("the webhook secret, 32 bytes....")
	aad := []byte("webhook 42")
	old := ring(t, oldKey)
	sealed, err := old.Seal(secret, aad)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, secret) || sealed[0] != 1 || len(sealed) != 1+4+12+len(secret)+16 {
		t.Fatalf("sealed form %x: want version 1, key id, nonce, ciphertext and tag", sealed)
	}
	again, _ := old.Seal(secret, aad)
	if bytes.Equal(again, sealed) {
		t.Error("two seals of the same secret are equal: the nonce is not random")
	}

	t.Run("round_trip", func(t *testing.T) {
		got, err := old.Open(sealed, aad)
		if err != nil || !bytes.Equal(got, secret) {
			t.Fatalf("Open = %q, %v", got, err)
		}
	})
	t.Run("wrong_aad", func(t *testing.T) {
		for _, a := range [][]byte{[]byte("webhook 43"), nil, append(aad, 0)} {
			if _, err := old.Open(sealed, a); !errors.Is(err, webhook.ErrOpen) {
				t.Errorf("Open with aad %q = %v, want ErrOpen", a, err)
			}
		}
	})
	t.Run("key_not_in_ring", func(t *testing.T) {
		if _, err := ring(t, otherKey).Open(sealed, aad); !errors.Is(err, webhook.ErrUnknownKey) {
			t.Errorf("Open = %v, want ErrUnknownKey", err)
		}
	})
	t.Run("rotation", func(t *testing.T) {
		rotated := ring(t, newK, oldKey)
		got, err := rotated.Open(sealed, aad)
		if err != nil || !bytes.Equal(got, secret) {
			t.Fatalf("[new, old] opens old's seal: %q, %v", got, err)
		}
		resealed, err := rotated.Seal(secret, aad)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := old.Open(resealed, aad); !errors.Is(err, webhook.ErrUnknownKey) {
			t.Errorf("the new key seals: old ring opening it = %v, want ErrUnknownKey", err)
		}
		if got, err := ring(t, newK).Open(resealed, aad); err != nil || !bytes.Equal(got, secret) {
			t.Errorf("new ring opens the resealed secret: %q, %v", got, err)
		}
	})
	t.Run("tampered", func(t *testing.T) {
		for i := range sealed {
			bad := bytes.Clone(sealed)
			bad[i] ^= 0x01
			if _, err := old.Open(bad, aad); err == nil {
				t.Errorf("byte %d flipped: opened", i)
			}
		}
		for _, bad := range [][]byte{nil, sealed[:17], sealed[:len(sealed)-1], append(bytes.Clone(sealed), 0)} {
			if _, err := old.Open(bad, aad); err == nil {
				t.Errorf("truncated or extended to %d bytes: opened", len(bad))
			}
		}
	})
}

func TestNewKeyRingErrors(t *testing.T) {
	k := newKey(t)
	for name, keys := range map[string][][]byte{
		"none":      nil,
		"short":     {k[:16]},
		"long":      {append(bytes.Clone(k), 0)},
		"duplicate": {k, newKey(t), bytes.Clone(k)},
	} {
		if _, err := webhook.NewKeyRing(keys...); !errors.Is(err, webhook.ErrKey) {
			t.Errorf("%s: NewKeyRing = %v, want ErrKey", name, err)
		}
	}
}

func TestParseKeyRing(t *testing.T) {
	k1, k2 := newKey(t), newKey(t)
	e1, e2 := base64.StdEncoding.EncodeToString(k1), base64.StdEncoding.EncodeToString(k2)
	r, err := webhook.ParseKeyRing(" " + e1 + " , " + e2)
	if err != nil {
		t.Fatal(err)
	}
	sealed, _ := r.Seal([]byte("s"), nil)
	if _, err := ring(t, k1).Open(sealed, nil); err != nil {
		t.Errorf("the first key does not seal: %v", err)
	}
	short := base64.StdEncoding.EncodeToString(k1[:31])
	for name, v := range map[string]string{
		"empty":     "",
		"blank":     " ",
		"not_b64":   e1[:10] + "!!" + e1[12:],
		"short":     short,
		"url_b64":   base64.URLEncoding.EncodeToString(bytes.Repeat([]byte{0xff}, 32)),
		"raw":       base64.RawStdEncoding.EncodeToString(k1),
		"trailing":  e1 + ",",
		"duplicate": e1 + "," + e1,
		"second":    e1 + "," + short,
	} {
		_, err := webhook.ParseKeyRing(v)
		if !errors.Is(err, webhook.ErrKey) {
			t.Errorf("%s: ParseKeyRing = %v, want ErrKey", name, err)
			continue
		}
		for _, secret := range []string{e1, e1[:12], short, short[:12]} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("%s: error %q contains key material", name, err)
			}
		}
	}
}
