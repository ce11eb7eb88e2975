package webhook

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// KeySize is the size of a sealing key (AES-256).
const KeySize = 32

// sealVersion is the first byte of every sealed secret; a new format gets a
// new version and Open keeps reading the old one.
const sealVersion = 1

const (
	keyIDSize  = 4
	nonceSize  = 12
	headerSize = 1 + keyIDSize + nonceSize
)

// Sentinel errors of KeyRing.Open and the key parsers (wrapped).
var (
	// ErrUnknownKey: the sealed value names a key that is not in the ring
	// (the operator removed it from FLEET_WEBHOOK_KEY too early).
	ErrUnknownKey = errors.New("webhook: sealed with a key not in FLEET_WEBHOOK_KEY")
	// ErrOpen: the sealed value is malformed, was tampered with, or belongs
	// to another row (its associated data differs).
	ErrOpen = errors.New("webhook: sealed secret does not open")
	// ErrKey: a key is malformed (never with the key in the message).
	ErrKey = errors.New("webhook: invalid FLEET_WEBHOOK_KEY")
)

// KeyRing seals webhook secrets at rest with AES-256-GCM. The first key
// seals; every key opens, so an operator rotates by putting a new key first
// and keeping the old one until every secret was sealed again.
//
// A sealed value is: a version byte (1), a 4-byte key id (the first bytes of
// SHA-256 of the key), the 12-byte random nonce, then the ciphertext with its
// tag. The header is authenticated with the caller's associated data, so a
// value copied to another row (another aad) or with its header edited does not
// open.
type KeyRing struct {
	keys []ringKey
}

type ringKey struct {
	id   [keyIDSize]byte
	aead cipher.AEAD
}

// NewKeyRing returns a ring of the given 32-byte keys, the first sealing. It
// wraps ErrKey when there is no key, a key has the wrong size, or two keys are
// equal.
func NewKeyRing(keys ...[]byte) (*KeyRing, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: no key", ErrKey)
	}
	r := &KeyRing{}
	seen := map[[sha256.Size]byte]bool{}
	for i, k := range keys {
		if len(k) != KeySize {
			return nil, fmt.Errorf("%w: key %d has %d bytes, want %d", ErrKey, i+1, len(k), KeySize)
		}
		sum := sha256.Sum256(k)
		if seen[sum] {
			return nil, fmt.Errorf("%w: key %d is listed twice", ErrKey, i+1)
		}
		seen[sum] = true
		block, err := aes.NewCipher(k)
		if err != nil {
			return nil, fmt.Errorf("%w: key %d: %v", ErrKey, i+1, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("%w: key %d: %v", ErrKey, i+1, err)
		}
		var rk ringKey
		copy(rk.id[:], sum[:keyIDSize])
		rk.aead = aead
		r.keys = append(r.keys, rk)
	}
	return r, nil
}

// ParseKeyRing reads FLEET_WEBHOOK_KEY: one or more keys, each standard
// base64 of 32 bytes (`head -c 32 /dev/urandom | base64`), comma-separated,
// the sealing key first. Errors wrap ErrKey, name the key by its position and
// never contain key material.
func ParseKeyRing(s string) (*KeyRing, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("%w: empty (generate one with: head -c 32 /dev/urandom | base64)", ErrKey)
	}
	parts := strings.Split(s, ",")
	keys := make([][]byte, 0, len(parts))
	for i, p := range parts {
		p = strings.TrimSpace(p)
		k, err := base64.StdEncoding.Strict().DecodeString(p)
		if err != nil || strings.ContainsAny(p, "\r\n") { // the decoder skips line breaks
			return nil, fmt.Errorf("%w: key %d of %d is not standard base64", ErrKey, i+1, len(parts))
		}
		keys = append(keys, k)
	}
	return NewKeyRing(keys...)
}

// Seal encrypts plain with the ring's first key, binding aad (callers pass
// the webhook's id) to the result.
func (k *KeyRing) Seal(plain, aad []byte) ([]byte, error) {
	key := k.keys[0]
	out := make([]byte, headerSize, headerSize+len(plain)+key.aead.Overhead())
	out[0] = sealVersion
	copy(out[1:], key.id[:])
	if _, err := rand.Read(out[1+keyIDSize : headerSize]); err != nil {
		return nil, fmt.Errorf("webhook: seal: %w", err)
	}
	return key.aead.Seal(out, out[1+keyIDSize:headerSize], plain, additional(out[:headerSize], aad)), nil
}

// Open decrypts what Seal made with any key of the ring. It wraps
// ErrUnknownKey when no key of the ring has the value's key id, and ErrOpen
// when the value is malformed, tampered with or aad differs.
func (k *KeyRing) Open(sealed, aad []byte) ([]byte, error) {
	if len(sealed) < headerSize || sealed[0] != sealVersion {
		return nil, fmt.Errorf("%w: malformed", ErrOpen)
	}
	id := sealed[1 : 1+keyIDSize]
	nonce := sealed[1+keyIDSize : headerSize]
	found := false
	for _, key := range k.keys {
		if !bytes.Equal(key.id[:], id) {
			continue
		}
		found = true // two keys may share an id prefix: try each
		if plain, err := key.aead.Open(nil, nonce, sealed[headerSize:], additional(sealed[:headerSize], aad)); err == nil {
			return plain, nil
		}
	}
	if !found {
		return nil, ErrUnknownKey
	}
	return nil, ErrOpen
}

// additional is GCM's associated data: the header, then the caller's aad.
func additional(header, aad []byte) []byte {
	return append(append(make([]byte, 0, len(header)+len(aad)), header...), aad...)
}
