package auth

import (
	"testing"
	"time"
)

// The per-request cost of a session: every authenticated request verifies
// the cookie's HMAC and hashes the token to look it up, and every sign-in
// draws and hashes a new one. scripts/bench.sh reports these.

func BenchmarkNewToken(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := NewToken(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkHashToken(b *testing.B) {
	token, _, err := NewToken()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		HashToken(token)
	}
}

func BenchmarkCookieVerify(b *testing.B) {
	c := NewCookies(CookieOptions{Secret: "bench-secret-0123456789abcdef0123456789abcdef", Secure: false, PlayerPrefix: "better-auth", AdminPrefix: "platform-admin", TTL: time.Hour})
	token, _, err := NewToken()
	if err != nil {
		b.Fatal(err)
	}
	signed := c.Sign(token)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := c.Verify(signed); !ok {
			b.Fatal("signature did not verify")
		}
	}
}
