package auth_test

import (
	"errors"
	"testing"
	"time"

	"github.com/go-webauthn/webauthn/webauthn"
	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/platform"
)

func passkeyFixture(t testing.TB) *fixture {
	t.Helper()
	f := newFixture(t)
	wa, err := webauthn.New(&webauthn.Config{RPID: "localhost", RPDisplayName: "Tower Defence", RPOrigins: []string{"http://localhost:8080"}})
	if err != nil {
		t.Fatal(err)
	}
	f.opts.Passkeys, f.opts.WebAuthn = f.db.Factors(), wa
	f.svc = f.serviceOn(f.db.Sessions())
	return f
}

// Adding or removing a passkey needs a fresh session; a ceremony answers
// once, for the user it was issued to; malformed responses are 400s.
func TestPasskeyCeremonyRules(t *testing.T) {
	ctx := t.Context()
	f := passkeyFixture(t)
	p := f.signUp(t, "ada@example.com", "ada")
	opts, err := f.svc.BeginPasskeyRegistration(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.FinishPasskeyRegistration(ctx, p, opts.Token, []byte(`{"id":"x"}`), "laptop")
	wantCode(t, err, platform.CodeValidation)
	_, err = f.svc.FinishPasskeyRegistration(ctx, p, opts.Token, []byte(`{"id":"x"}`), "laptop")
	wantCode(t, err, auth.CodeChallengeNotFound) // spent by the first answer

	other := f.signUp(t, "bob@example.com", "bob")
	opts, err = f.svc.BeginPasskeyRegistration(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.FinishPasskeyRegistration(ctx, other, opts.Token, []byte(`{}`), "")
	wantCode(t, err, auth.CodeChallengeNotFound)

	signIn, err := f.svc.BeginPasskeySignIn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.FinishPasskeySignIn(ctx, "player", signIn.Token, []byte("not json"), auth.Client{}, "")
	wantCode(t, err, platform.CodeValidation)

	f.clock.Advance(11 * time.Minute)
	if _, err := f.svc.BeginPasskeyRegistration(ctx, p); !errors.Is(err, auth.ErrSessionNotFresh) {
		t.Fatalf("registration on an old session: %v, want SESSION_NOT_FRESH", err)
	}
	if err := f.svc.DeletePasskey(ctx, p, uuid.New()); !errors.Is(err, auth.ErrSessionNotFresh) {
		t.Fatalf("deletion on an old session: %v, want SESSION_NOT_FRESH", err)
	}
}

// FuzzPasskeyResponse feeds the WebAuthn response parsers arbitrary
// bytes: they answer a 400 in the error model or a parsed response, and
// never panic.
func FuzzPasskeyResponse(f *testing.F) {
	for _, seed := range []string{
		"", "{}", "null", `{"id":"","rawId":"","type":"public-key","response":{}}`,
		`{"id":"AAAA","rawId":"AAAA","type":"public-key","response":{"clientDataJSON":"e30","attestationObject":"oA"}}`,
		`{"id":"AAAA","rawId":"AAAA","type":"public-key","response":{"clientDataJSON":"e30","authenticatorData":"AAAA","signature":"AA","userHandle":"AA"}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, parse := range []func([]byte) error{
			func(b []byte) error { _, err := auth.ParseRegistrationResponse(b); return err },
			func(b []byte) error { _, err := auth.ParseAuthenticationResponse(b); return err },
		} {
			if err := parse(raw); err != nil {
				if pe, ok := platform.As(err); !ok || pe.Kind != platform.KindInvalid {
					t.Fatalf("parse %q: %v, want a 400", raw, err)
				}
			}
		}
	})
}
