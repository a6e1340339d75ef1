package cli

import (
	"encoding/json"
	"errors"
	"log/slog"
	"testing"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/app"
	"github.com/towerdefence/platformctl/internal/audit"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/config"
	"github.com/towerdefence/platformctl/internal/platform"
)

// A seed sealed under the old secret still works once the secret changes
// (the old one in PLATFORM_PREVIOUS_SECRETS); secrets rotate re-encrypts
// it, after which the old secret can go.
func TestSecretsRotate(t *testing.T) {
	ctx := t.Context()
	env, a := accountsEnv(t)
	p, err := a.Auth.SignUp(ctx, account.RealmPlayer, account.NewUser{Email: "ada@example.com", Name: "Ada", Nickname: "ada",
		Password: "correct horse battery"}, true, auth.Client{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Auth.EnableTOTP(ctx, p, auth.Client{}, "correct horse battery", ""); err != nil {
		t.Fatal(err)
	}
	oldSecret := env["PLATFORM_SECRET"]
	env["PLATFORM_SECRET"] = "the-new-secret-0123456789abcdef0123456789"
	env["PLATFORM_PREVIOUS_SECRETS"] = oldSecret

	r := runIn(t, env, "", "secrets", "rotate", "--output", "json")
	var res auth.ResealResult
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &res) != nil || res.Checked != 1 || res.Resealed != 1 {
		t.Fatalf("secrets rotate: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runIn(t, env, "", "secrets", "rotate", "--output", "json")
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &res) != nil || res.Resealed != 0 {
		t.Fatalf("a second rotate: code %d stdout %q", r.code, r.stdout)
	}
	// The new secret alone now opens the seed.
	delete(env, "PLATFORM_PREVIOUS_SECRETS")
	cfg, err := config.Load(func(k string) string { return env[k] }, nil)
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := app.New(ctx, cfg, slog.New(slog.DiscardHandler), platform.Build{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	q, err := fresh.Auth.OpenSession(ctx, p.User, true, auth.Client{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fresh.Auth.TOTPURI(ctx, q, auth.Client{}, "correct horse battery"); err != nil {
		t.Fatalf("the seed under the new secret alone: %v", err)
	}
	if _, err := a.Auth.TOTPURI(ctx, p, auth.Client{}, "correct horse battery"); err == nil || errors.Is(err, account.ErrInvalidPassword) {
		t.Fatalf("the old secret alone still opens the rotated seed: %v", err)
	}
}

// A support reset of second factors needs a reason, is audited, and ends
// every session of the user, whose next sign-in asks for no second factor.
func TestFactorsReset(t *testing.T) {
	ctx := t.Context()
	env, a := accountsEnv(t)
	p, err := a.Auth.SignUp(ctx, account.RealmPlayer, account.NewUser{Email: "ada@example.com", Name: "Ada", Nickname: "ada",
		Password: "correct horse battery"}, true, auth.Client{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Auth.EnableTOTP(ctx, p, auth.Client{}, "correct horse battery", ""); err != nil {
		t.Fatal(err)
	}
	if r := runIn(t, env, "", "factors", "reset", "--user", "ada@example.com"); r.code != ExitUsage {
		t.Fatalf("reset without a reason: code %d stderr %q", r.code, r.stderr)
	}
	if r := runIn(t, env, "", "factors", "reset", "--user", "ada@example.com", "--reason", "  "); r.code == 0 {
		t.Fatalf("reset with a blank reason succeeded: %q", r.stderr)
	}
	r := runIn(t, env, "", "factors", "reset", "--user", "ada@example.com", "--reason", "ticket 42, ID checked", "--output", "json")
	var res auth.FactorReset
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &res) != nil || !res.TOTPRemoved || res.SessionsEnded != 1 {
		t.Fatalf("factors reset: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if _, err := a.Auth.Authenticate(ctx, account.RealmPlayer, p.Token); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("the user's session survived the reset: %v", err)
	}
	entries, err := a.Audit.List(ctx, audit.Filter{Action: auth.ActionFactorsReset})
	if err != nil || len(entries) != 1 || entries[0].Reason != "ticket 42, ID checked" || entries[0].Actor != "break-glass:alice" {
		t.Fatalf("audit %+v (%v)", entries, err)
	}
}
