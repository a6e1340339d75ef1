// Package secretbox encrypts the few values the service must read back —
// TOTP seeds today, provider tokens tomorrow — with keys derived from
// PLATFORM_SECRET, so that a leaked database alone reveals none of them.
//
// A sealed value names the key that sealed it ("sb1.<key id>.<base64url of
// nonce‖ciphertext>"), so when the secret changes the previous secrets
// still open old values while new ones are sealed with the current key,
// and Keyring.Stale tells which values a re-encryption pass should touch.
// The cipher is XChaCha20-Poly1305 (random 24-byte nonces are safe at any
// volume); each value is bound to a purpose and a row (the additional
// data), so a sealed seed copied into another user's row does not open.
package secretbox

import (
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/chacha20poly1305"
)

// prefix marks the format version of a sealed value.
const prefix = "sb1."

// keyIDLen is the length of a key id in hex characters: enough to tell a
// handful of keys apart, far too short to say anything about the key.
const keyIDLen = 8

// ErrUndecryptable: the value is malformed, was sealed by a key the
// keyring no longer holds, or was tampered with or moved to another row.
var ErrUndecryptable = errors.New("secretbox: value cannot be decrypted")

// Keyring seals with its current key and opens with any of its keys.
type Keyring struct {
	current *key
	byID    map[string]*key
}

type key struct {
	id   string
	aead cipher.AEAD
}

// New derives a keyring from the current secret and the previous ones
// still accepted for decryption (newest first; empty entries are
// skipped). It fails on an empty current secret.
func New(current string, previous ...string) (*Keyring, error) {
	if current == "" {
		return nil, errors.New("secretbox: empty secret")
	}
	k := &Keyring{byID: map[string]*key{}}
	for i, s := range append([]string{current}, previous...) {
		if s == "" {
			continue
		}
		kk, err := derive(s)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			k.current = kk
		}
		if _, dup := k.byID[kk.id]; !dup {
			k.byID[kk.id] = kk
		}
	}
	return k, nil
}

// derive turns a secret string into an encryption key with HKDF-SHA256,
// so the key differs from the cookie-signing key made of the same secret.
func derive(secret string) (*key, error) {
	raw, err := hkdf.Key(sha256.New, []byte(secret), nil, "platformctl secretbox v1", chacha20poly1305.KeySize)
	if err != nil {
		return nil, fmt.Errorf("secretbox: derive key: %w", err)
	}
	aead, err := chacha20poly1305.NewX(raw)
	if err != nil {
		return nil, fmt.Errorf("secretbox: cipher: %w", err)
	}
	sum := sha256.Sum256(append([]byte("platformctl secretbox key id\x00"), raw...))
	return &key{id: hex.EncodeToString(sum[:])[:keyIDLen], aead: aead}, nil
}

// Seal encrypts plaintext under the current key, bound to context (say
// "totp:<user id>"), which Open must be given again.
func (k *Keyring) Seal(plaintext []byte, context string) (string, error) {
	nonce := make([]byte, chacha20poly1305.NonceSizeX, chacha20poly1305.NonceSizeX+len(plaintext)+chacha20poly1305.Overhead)
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("secretbox: nonce: %w", err)
	}
	out := k.current.aead.Seal(nonce, nonce, plaintext, []byte(context))
	return prefix + k.current.id + "." + base64.RawURLEncoding.EncodeToString(out), nil
}

// Open decrypts a value Seal made with any key of the keyring and the
// same context; anything else is ErrUndecryptable.
func (k *Keyring) Open(sealed, context string) ([]byte, error) {
	kk, body, ok := k.parse(sealed)
	if !ok {
		return nil, ErrUndecryptable
	}
	raw, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil || len(raw) < chacha20poly1305.NonceSizeX+chacha20poly1305.Overhead {
		return nil, ErrUndecryptable
	}
	plain, err := kk.aead.Open(nil, raw[:chacha20poly1305.NonceSizeX], raw[chacha20poly1305.NonceSizeX:], []byte(context))
	if err != nil {
		return nil, ErrUndecryptable
	}
	return plain, nil
}

// Stale reports whether a sealed value was made with a key other than the
// current one and so should be sealed again.
func (k *Keyring) Stale(sealed string) bool {
	kk, _, ok := k.parse(sealed)
	return !ok || kk != k.current
}

// Reseal opens a value with whichever key made it and seals it again with
// the current key; a value already under the current key is returned as is.
func (k *Keyring) Reseal(sealed, context string) (string, error) {
	if !k.Stale(sealed) {
		return sealed, nil
	}
	plain, err := k.Open(sealed, context)
	if err != nil {
		return "", err
	}
	return k.Seal(plain, context)
}

func (k *Keyring) parse(sealed string) (*key, string, bool) {
	rest, ok := strings.CutPrefix(sealed, prefix)
	if !ok {
		return nil, "", false
	}
	id, body, ok := strings.Cut(rest, ".")
	if !ok {
		return nil, "", false
	}
	kk, ok := k.byID[id]
	return kk, body, ok
}
