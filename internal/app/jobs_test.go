package app_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/apitest"
	"github.com/towerdefence/platformctl/internal/app"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/config"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/profile"
	"github.com/towerdefence/platformctl/internal/storetest"
)

const jobsBaseURL = "http://127.0.0.1:9"

// idleApp builds the services on a fresh database without starting the
// workers, so that only the test runs the jobs.
func idleApp(t *testing.T) *app.App {
	t.Helper()
	env := map[string]string{
		"PLATFORM_DATABASE_URL": storetest.URL(t), "PLATFORM_SECRET": apitest.Secret, "PLATFORM_MIGRATE": "true",
		"PLATFORM_DATA_DIR": t.TempDir(), "PLATFORM_BASE_URL": jobsBaseURL,
	}
	cfg, err := config.Load(func(k string) string { return env[k] }, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.New(t.Context(), cfg, slog.New(slog.DiscardHandler), platform.Build{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// runJobsAfter runs every job once, as `platformctl prune` does, on a
// clock d ahead of the services' (which have already captured theirs),
// and returns what each job removed.
func runJobsAfter(t *testing.T, a *app.App, d time.Duration) map[string]int {
	t.Helper()
	a.Now = func() time.Time { return time.Now().Add(d) }
	results, err := a.Jobs.RunOnce(t.Context(), false)
	if err != nil {
		t.Fatal(err)
	}
	removed := map[string]int{}
	for _, r := range results {
		removed[r.Job] = r.Removed
	}
	return removed
}

func countRows(t *testing.T, a *app.App, query string) int {
	t.Helper()
	return storetest.Count(t, a.DB, query)
}

// The jobs remove sessions and mailed tokens once they expire, and keep
// them until then: a session not remembered lasts a day, a remembered one
// PLATFORM_SESSION_TTL (a week), a reset link PLATFORM_TOKEN_TTL (an hour).
func TestJobsRemoveExpiredSessionsAndMailTokens(t *testing.T) {
	ctx := t.Context()
	a := idleApp(t)
	remembered, err := a.Auth.SignUp(ctx, account.RealmPlayer, account.NewUser{Email: "ada@example.com", Name: "Ada",
		Nickname: "ada", Password: "correct horse battery"}, true, auth.Client{})
	if err != nil {
		t.Fatal(err)
	}
	short, err := a.Auth.SignIn(ctx, account.RealmPlayer, "ada@example.com", "correct horse battery", false, auth.Client{})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Auth.RequestPasswordReset(ctx, account.RealmPlayer, "ada@example.com", "", auth.Client{}); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, a, "SELECT count(*) FROM auth_tokens"); n != 1 {
		t.Fatalf("%d mailed tokens after a reset request, want 1", n)
	}

	removed := runJobsAfter(t, a, 30*time.Minute)
	if removed["expired-sessions"] != 0 || removed["expired-mail-tokens"] != 0 {
		t.Fatalf("jobs half an hour later removed %v; want nothing yet", removed)
	}
	removed = runJobsAfter(t, a, 25*time.Hour)
	if removed["expired-sessions"] != 1 || removed["expired-mail-tokens"] != 1 {
		t.Fatalf("jobs a day later removed %v; want the short session and the reset link", removed)
	}
	if n := countRows(t, a, "SELECT count(*) FROM auth_tokens"); n != 0 {
		t.Fatalf("%d mailed tokens left after they expired", n)
	}
	if _, err := a.Auth.Authenticate(ctx, account.RealmPlayer, short.Token); err == nil {
		t.Fatal("the swept session still authenticates")
	}
	if _, err := a.Auth.Authenticate(ctx, account.RealmPlayer, remembered.Token); err != nil {
		t.Fatalf("the remembered session was swept a day in: %v", err)
	}
}

// A pending password change keeps its new hash while its link works, loses
// it once the link has expired (the change stays, for `token inspect`),
// and goes with its tokens after profile.Retention.
func TestJobsDropStalePasswordsThenOldChanges(t *testing.T) {
	ctx := t.Context()
	a := idleApp(t)
	p, err := a.Auth.SignUp(ctx, account.RealmPlayer, account.NewUser{Email: "bob@example.com", Name: "Bob",
		Nickname: "bob", Password: "correct horse battery"}, true, auth.Client{})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Profile.RequestPasswordChange(ctx, p.User, profile.PasswordChangeInput{CurrentPassword: "correct horse battery",
		NewPassword: "never confirmed", CallbackURL: jobsBaseURL + "/account/confirm"}); err != nil {
		t.Fatal(err)
	}
	hashes := func() int {
		return countRows(t, a, "SELECT count(*) FROM profile_changes WHERE new_password_hash IS NOT NULL")
	}
	if removed := runJobsAfter(t, a, 50*time.Minute); removed["stale-password-changes"] != 0 || hashes() != 1 {
		t.Fatalf("jobs while the link works: %v, %d hashes; want the hash kept", removed, hashes())
	}
	if removed := runJobsAfter(t, a, time.Hour+time.Minute); removed["stale-password-changes"] != 1 || hashes() != 0 {
		t.Fatalf("jobs after the link expired: %v, %d hashes; want the hash dropped", removed, hashes())
	}
	if n := countRows(t, a, "SELECT count(*) FROM profile_tokens"); n != 1 {
		t.Fatalf("%d tokens after the hash was dropped, want the change's token kept for inspection", n)
	}
	if removed := runJobsAfter(t, a, profile.Retention-time.Hour); removed["old-profile-changes"] != 0 {
		t.Fatalf("jobs within the retention removed %v", removed)
	}
	if removed := runJobsAfter(t, a, profile.Retention+time.Minute); removed["old-profile-changes"] != 1 {
		t.Fatalf("jobs after the retention removed %v; want the change", removed)
	}
	if n := countRows(t, a, "SELECT count(*) FROM profile_tokens"); n != 0 {
		t.Fatalf("%d tokens left after their change was removed", n)
	}
}
