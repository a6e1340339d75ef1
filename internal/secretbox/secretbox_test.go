package secretbox

import (
	"errors"
	"strings"
	"testing"
)

const (
	oldSecret = "an old secret of at least thirty-two bytes"
	newSecret = "a new secret of at least thirty-two bytes!!"
)

func TestSealOpenRotate(t *testing.T) {
	old, err := New(oldSecret)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := old.Seal([]byte("JBSWY3DPEHPK3PXP"), "totp:u1")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(sealed, "JBSWY3DP") {
		t.Fatalf("sealed value %q shows the plaintext", sealed)
	}
	rotated, err := New(newSecret, oldSecret)
	if err != nil {
		t.Fatal(err)
	}
	if !rotated.Stale(sealed) {
		t.Fatal("a value under the previous key is not stale")
	}
	plain, err := rotated.Open(sealed, "totp:u1")
	if err != nil || string(plain) != "JBSWY3DPEHPK3PXP" {
		t.Fatalf("open under the previous key: %q, %v", plain, err)
	}
	resealed, err := rotated.Reseal(sealed, "totp:u1")
	if err != nil {
		t.Fatal(err)
	}
	if rotated.Stale(resealed) {
		t.Fatal("a resealed value is still stale")
	}
	again, err := rotated.Reseal(resealed, "totp:u1")
	if err != nil || again != resealed {
		t.Fatalf("resealing a current value changed it: %v", err)
	}
	onlyNew, err := New(newSecret)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := onlyNew.Open(sealed, "totp:u1"); !errors.Is(err, ErrUndecryptable) {
		t.Fatalf("a dropped key still opens: %v", err)
	}
	if plain, err := onlyNew.Open(resealed, "totp:u1"); err != nil || string(plain) != "JBSWY3DPEHPK3PXP" {
		t.Fatalf("open resealed with the new key alone: %q, %v", plain, err)
	}
}

func TestOpenRefuses(t *testing.T) {
	k, err := New(newSecret)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := k.Seal([]byte("seed"), "totp:u1")
	if err != nil {
		t.Fatal(err)
	}
	flipped := []byte(sealed)
	flipped[len(flipped)-3] ^= 1
	for name, tc := range map[string]struct{ value, context string }{
		"other row":    {sealed, "totp:u2"},
		"tampered":     {string(flipped), "totp:u1"},
		"empty":        {"", "totp:u1"},
		"no prefix":    {"abc", "totp:u1"},
		"unknown key":  {"sb1.00000000.AAAA", "totp:u1"},
		"short":        {sealed[:20], "totp:u1"},
		"not base64":   {sealed[:len(prefix)+keyIDLen+1] + "!!!", "totp:u1"},
		"missing body": {sealed[:len(prefix)+keyIDLen], "totp:u1"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := k.Open(tc.value, tc.context); !errors.Is(err, ErrUndecryptable) {
				t.Fatalf("Open(%q, %q) = %v, want ErrUndecryptable", tc.value, tc.context, err)
			}
		})
	}
	if _, err := New(""); err == nil {
		t.Fatal("an empty secret made a keyring")
	}
}
