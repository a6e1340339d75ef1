package auth_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"testing"
	"time"

	"github.com/descope/virtualwebauthn"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/auth"
)

// benchPasskey registers a passkey of a software authenticator for p and
// returns what signs with it.
func benchPasskey(tb testing.TB, f *fixture, p *auth.Principal) (virtualwebauthn.RelyingParty, virtualwebauthn.Authenticator, *virtualwebauthn.Credential) {
	tb.Helper()
	rp := virtualwebauthn.RelyingParty{Name: "Tower Defence", ID: "localhost", Origin: "http://localhost:8080"}
	authr := virtualwebauthn.NewAuthenticatorWithOptions(virtualwebauthn.AuthenticatorOptions{UserHandle: p.User.ID[:]})
	cred := ec2Credential(tb)
	opts, err := f.svc.BeginPasskeyRegistration(tb.Context(), p)
	if err != nil {
		tb.Fatal(err)
	}
	raw, err := json.Marshal(opts.Options)
	if err != nil {
		tb.Fatal(err)
	}
	parsed, err := virtualwebauthn.ParseAttestationOptions(string(raw))
	if err != nil {
		tb.Fatal(err)
	}
	resp := virtualwebauthn.CreateAttestationResponse(rp, authr, cred, *parsed)
	if _, err := f.svc.FinishPasskeyRegistration(tb.Context(), p, opts.Token, []byte(resp), "bench"); err != nil {
		tb.Fatal(err)
	}
	authr.AddCredential(cred)
	return rp, authr, &authr.Credentials[0]
}

// ec2Credential returns a software authenticator's P-256 credential whose
// public key coordinates both start with a non-zero byte. virtualwebauthn
// encodes a coordinate with big.Int.Bytes, which drops leading zeros, so
// about one key in 64 would reach the server with a short coordinate,
// which a real authenticator never sends and the server rightly refuses.
func ec2Credential(tb testing.TB) virtualwebauthn.Credential {
	tb.Helper()
	for {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			tb.Fatal(err)
		}
		point, err := key.PublicKey.Bytes() // 0x04, X (32 bytes), Y (32 bytes)
		if err != nil {
			tb.Fatal(err)
		}
		if point[1] == 0 || point[33] == 0 {
			continue
		}
		der, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			tb.Fatal(err)
		}
		return virtualwebauthn.NewCredentialWithImportedKey(virtualwebauthn.KeyTypeEC2, der)
	}
}

// passkeyAssertion starts a discoverable sign-in and answers it.
func passkeyAssertion(tb testing.TB, f *fixture, rp virtualwebauthn.RelyingParty, authr virtualwebauthn.Authenticator, cred *virtualwebauthn.Credential) (string, []byte) {
	tb.Helper()
	opts, err := f.svc.BeginPasskeySignIn(tb.Context())
	if err != nil {
		tb.Fatal(err)
	}
	raw, err := json.Marshal(opts.Options)
	if err != nil {
		tb.Fatal(err)
	}
	parsed, err := virtualwebauthn.ParseAssertionOptions(string(raw))
	if err != nil {
		tb.Fatal(err)
	}
	cred.Counter++
	return opts.Token, []byte(virtualwebauthn.CreateAssertionResponse(rp, authr, *cred, *parsed))
}

func TestPasskeySignInWithSoftwareAuthenticator(t *testing.T) {
	f := passkeyFixture(t)
	p := f.signUp(t, "ada@example.com", "ada")
	rp, authr, cred := benchPasskey(t, f, p)
	token, resp := passkeyAssertion(t, f, rp, authr, cred)
	q, err := f.svc.FinishPasskeySignIn(t.Context(), account.RealmPlayer, token, resp, auth.Client{}, "")
	if err != nil || q.User.ID != p.User.ID {
		t.Fatalf("passkey sign-in: %v", err)
	}
	// The same assertion again: its ceremony is spent.
	if _, err := f.svc.FinishPasskeySignIn(t.Context(), account.RealmPlayer, token, resp, auth.Client{}, ""); err == nil {
		t.Fatal("a replayed assertion signed in")
	}
	// A passkey of the player realm opens nothing on the admin realm.
	token, resp = passkeyAssertion(t, f, rp, authr, cred)
	wantCode(t, errOf(f.svc.FinishPasskeySignIn(t.Context(), account.RealmAdmin, token, resp, auth.Client{}, "")), auth.CodePasskeyNotFound)
}

func errOf(_ *auth.Principal, err error) error { return err }

// BenchmarkFactorVerify measures the server time of verify-totp (a sign-in
// challenge completed with a code) and verify-authentication (a passkey
// sign-in), beside opening a bare session as the baseline.
func BenchmarkFactorVerify(b *testing.B) {
	f := passkeyFixture(b)
	p := f.signUp(b, "ada@example.com", "ada")
	b.Run("open-session", func(b *testing.B) {
		for b.Loop() {
			if _, err := f.svc.OpenSession(b.Context(), p.User, true, auth.Client{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	en, err := f.svc.EnableTOTP(b.Context(), p, auth.Client{}, "correct horse", "")
	if err != nil {
		b.Fatal(err)
	}
	rp, authr, cred := benchPasskey(b, f, p)
	b.Run("verify-authentication", func(b *testing.B) {
		f.opts.Factors = nil // the passkey alone, not the TOTP gate after it
		svc := f.svc
		f.svc = f.serviceOn(f.db.Sessions())
		defer func() { f.svc = svc }()
		for b.Loop() {
			b.StopTimer()
			token, resp := passkeyAssertion(b, f, rp, authr, cred)
			b.StartTimer()
			if _, err := f.svc.FinishPasskeySignIn(b.Context(), account.RealmPlayer, token, resp, auth.Client{}, ""); err != nil {
				b.Fatal(err)
			}
		}
	})
	if _, err := f.svc.VerifySecondFactor(b.Context(), p, auth.Client{}, auth.SecondFactorProof{Code: codeAtB(b, en.TOTPURI, f.clock.Now())}); err != nil {
		b.Fatal(err)
	}
	b.Run("verify-totp", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			f.clock.Advance(30 * time.Second)
			ch, err := f.svc.OpenSessionAfterFirstFactor(b.Context(), p.User, true, auth.Client{}, "")
			req, ok := err.(*auth.SecondFactorRequired)
			if ch != nil || !ok {
				b.Fatalf("no challenge: %v", err)
			}
			proof := auth.SecondFactorProof{Code: codeAtB(b, en.TOTPURI, f.clock.Now()), ChallengeToken: req.Token}
			b.StartTimer()
			if _, err := f.svc.VerifySecondFactor(b.Context(), nil, auth.Client{}, proof); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A passkey is a first factor like a password: an account with TOTP is
// asked for its code after a passkey sign-in too, through the same door.
func TestPasskeySignInGatedBySecondFactor(t *testing.T) {
	ctx := t.Context()
	f := passkeyFixture(t)
	p := f.signUp(t, "ada@example.com", "ada")
	rp, authr, cred := benchPasskey(t, f, p)
	en, err := f.svc.EnableTOTP(ctx, p, auth.Client{}, "correct horse", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.VerifySecondFactor(ctx, p, auth.Client{}, auth.SecondFactorProof{Code: codeAt(t, en.TOTPURI, f.clock.Now())}); err != nil {
		t.Fatal(err)
	}
	token, resp := passkeyAssertion(t, f, rp, authr, cred)
	_, err = f.svc.FinishPasskeySignIn(ctx, account.RealmPlayer, token, resp, auth.Client{}, "")
	req, ok := err.(*auth.SecondFactorRequired)
	if !ok {
		t.Fatalf("passkey sign-in of an account with TOTP: %v, want a second-factor challenge", err)
	}
	f.clock.Advance(30 * time.Second)
	if _, err := f.svc.VerifySecondFactor(ctx, nil, auth.Client{}, auth.SecondFactorProof{Code: codeAt(t, en.TOTPURI, f.clock.Now()), ChallengeToken: req.Token}); err != nil {
		t.Fatalf("completing the passkey sign-in's challenge: %v", err)
	}
}
