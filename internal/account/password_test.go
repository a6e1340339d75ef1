package account

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// testParams are cheap argon2id parameters; the production defaults are
// covered by BenchmarkHash and by TestHashDefaultParameters.
var testParams = Argon2Params{MemoryKiB: 1024, Iterations: 1, Parallelism: 1}

func TestArgon2RoundTrip(t *testing.T) {
	ctx := t.Context()
	h := NewHasher(testParams, Admission{})
	hash, err := h.Hash(ctx, "correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(hash, "$argon2id$v=19$m=1024,t=1,p=1$") {
		t.Fatalf("hash %q is not a PHC argon2id string with the configured parameters", hash)
	}
	again, _ := h.Hash(ctx, "correct horse battery")
	if again == hash {
		t.Fatal("two hashes of one password are equal: salt is not random")
	}
	for _, tt := range []struct {
		password string
		ok       bool
	}{
		{"correct horse battery", true},
		{"correct horse batterY", false},
		{"", false},
	} {
		ok, stale, err := h.Verify(ctx, hash, tt.password)
		if err != nil || ok != tt.ok || stale {
			t.Errorf("Verify(%q) = ok %v stale %v err %v, want ok %v stale false", tt.password, ok, stale, err, tt.ok)
		}
	}
	// Another cost setting still verifies the old hash but marks it stale.
	h2 := NewHasher(Argon2Params{MemoryKiB: 2048, Iterations: 1, Parallelism: 1}, Admission{})
	ok, stale, err := h2.Verify(ctx, hash, "correct horse battery")
	if err != nil || !ok || !stale {
		t.Fatalf("Verify with new parameters = ok %v stale %v err %v, want ok and stale", ok, stale, err)
	}
}

func TestHashDefaultParameters(t *testing.T) {
	ctx := t.Context()
	h := NewHasher(Argon2Params{MemoryKiB: 19456, Iterations: 2, Parallelism: 1}, Admission{})
	hash, err := h.Hash(ctx, "pässwörd")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(hash, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Fatalf("hash = %q", hash)
	}
	// NFKC: the decomposed spelling of the same password matches.
	if ok, _, _ := h.Verify(ctx, hash, "pa\u0308sswo\u0308rd"); !ok {
		t.Fatal("NFKC-equivalent password rejected")
	}
}

func TestVerifyBetterAuthScrypt(t *testing.T) {
	raw, err := os.ReadFile("testdata/better-auth-scrypt.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Vectors []struct{ Password, Hash string }
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	h := NewHasher(testParams, Admission{})
	for _, v := range file.Vectors {
		ok, stale, err := h.Verify(ctx, v.Hash, v.Password)
		if err != nil || !ok || !stale {
			t.Errorf("Verify(%q) = ok %v stale %v err %v, want ok and stale", v.Password, ok, stale, err)
		}
		if ok, _, _ := h.Verify(ctx, v.Hash, v.Password+"x"); ok {
			t.Errorf("wrong password accepted for %q", v.Password)
		}
	}
	// The second vector was hashed from "ﬁnance-Ⅻ-pässwörd"; better-auth
	// normalises to NFKC, so the plain spelling matches too.
	if ok, _, _ := h.Verify(ctx, file.Vectors[1].Hash, "finance-XII-pässwörd"); !ok {
		t.Error("NFKC-equivalent password rejected for a scrypt hash")
	}
}

func TestVerifyMalformedHashes(t *testing.T) {
	ctx := t.Context()
	h := NewHasher(testParams, Admission{})
	for _, bad := range []string{
		"",
		"plain",
		"$argon2id$v=19$m=1024,t=1,p=1$c2FsdA$",
		"$argon2id$v=18$m=1024,t=1,p=1$c2FsdHNhbHQ$a2V5a2V5a2V5a2V5a2V5",
		"$argon2id$v=19$m=99999999,t=1,p=1$c2FsdHNhbHQ$a2V5a2V5a2V5a2V5a2V5",
		"$argon2id$v=19$m=1024,t=0,p=1$c2FsdHNhbHQ$a2V5a2V5a2V5a2V5a2V5",
		"$argon2id$v=19$m=1024,t=1,p=1,x=2$c2FsdHNhbHQ$a2V5a2V5a2V5a2V5a2V5",
		"abcd:zz",
		"abcd:" + strings.Repeat("ab", 10),
	} {
		if ok, _, err := h.Verify(ctx, bad, "password"); err == nil || ok {
			t.Errorf("Verify(%q) = ok %v err %v, want an error", bad, ok, err)
		}
	}
}

func TestHashHonoursCancellation(t *testing.T) {
	h := NewHasher(testParams, Admission{})
	// Occupy every slot, then ask with a cancelled context.
	for range cap(h.slots) {
		h.slots <- struct{}{}
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := h.Hash(ctx, "password"); err == nil {
		t.Fatal("Hash with every slot busy and a cancelled context returned no error")
	}
}

func BenchmarkHashDefault(b *testing.B) {
	ctx := b.Context()
	h := NewHasher(Argon2Params{MemoryKiB: 19456, Iterations: 2, Parallelism: 1}, Admission{})
	for b.Loop() {
		if _, err := h.Hash(ctx, "correct horse battery"); err != nil {
			b.Fatal(err)
		}
	}
}
