package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/app"
	"github.com/towerdefence/platformctl/internal/audit"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/config"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/storetest"
)

// runIn executes the CLI in-process with stdin.
func runIn(t *testing.T, env map[string]string, stdin string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Run(t.Context(), platform.Build{Version: "test"}, args,
		func(k string) string { return env[k] }, strings.NewReader(stdin), &out, &errOut)
	return result{code, out.String(), errOut.String()}
}

// accountsEnv is a migrated database, the environment that points the CLI
// at it, and an App over the same database to set the scene and check
// what the commands did.
func accountsEnv(t *testing.T) (map[string]string, *app.App) {
	t.Helper()
	env := map[string]string{
		"PLATFORM_DATA_DIR":     t.TempDir(),
		"PLATFORM_DATABASE_URL": storetest.URL(t),
		"PLATFORM_SECRET":       "cli-test-secret-0123456789abcdef0123456789",
		"PLATFORM_MIGRATE":      "true",
		"PLATFORM_LOG_LEVEL":    "warn",
		"USER":                  "alice",
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
	return env, a
}

func TestAdminCreate(t *testing.T) {
	ctx := t.Context()
	env, a := accountsEnv(t)

	r := runIn(t, env, "an admin password\n", "admin", "create", "--email", "Ops@Example.com", "--name", "Ops Lead", "--output", "json")
	if r.code != 0 {
		t.Fatalf("admin create: code %d stderr %q", r.code, r.stderr)
	}
	var u account.User
	if err := json.Unmarshal([]byte(r.stdout), &u); err != nil || u.Email != "ops@example.com" || u.Role != "admin" || u.Name != "Ops Lead" {
		t.Fatalf("stdout %q (%v)", r.stdout, err)
	}
	if !strings.Contains(r.stderr, "created administrator ops@example.com") || strings.Contains(r.stdout, "password") {
		t.Fatalf("stderr %q stdout %q", r.stderr, r.stdout)
	}
	// The administrator signs in on the admin realm with that password, and only there.
	if _, err := a.Auth.SignIn(ctx, account.RealmAdmin, "ops@example.com", "an admin password", true, auth.Client{}); err != nil {
		t.Fatalf("admin sign-in: %v", err)
	}
	if _, err := a.Auth.SignIn(ctx, account.RealmPlayer, "ops@example.com", "an admin password", true, auth.Client{}); !errors.Is(err, account.ErrInvalidCredentials) {
		t.Fatalf("admin credentials on the player realm: %v", err)
	}
	entries, _ := a.Audit.List(ctx, audit.Filter{Actor: "break-glass:alice"})
	if len(entries) != 1 || entries[0].Action != "admin.create" || entries[0].Target != u.ID.String() || entries[0].Details["email"] != "ops@example.com" {
		t.Fatalf("audit entries %+v", entries)
	}

	tests := []struct {
		name  string
		stdin string
		args  []string
		code  int
	}{
		{"duplicate email", "another password\n", []string{"--email", "ops@example.com", "--name", "Dup"}, ExitRefused},
		{"short password", "short\n", []string{"--email", "new@example.com", "--name", "New"}, ExitUsage},
		{"no password", "", []string{"--email", "new@example.com", "--name", "New"}, ExitUsage},
		{"bad email", "an admin password\n", []string{"--email", "nope", "--name", "New"}, ExitUsage},
		{"missing --name", "an admin password\n", []string{"--email", "new@example.com"}, ExitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runIn(t, env, tt.stdin, append([]string{"admin", "create"}, tt.args...)...)
			if r.code != tt.code || r.stdout != "" || len(strings.Split(strings.TrimSpace(r.stderr), "\n")) != 1 {
				t.Fatalf("code %d (want %d), stdout %q, stderr %q", r.code, tt.code, r.stdout, r.stderr)
			}
		})
	}
	if _, err := a.Accounts.ByEmail(ctx, account.RealmAdmin, "new@example.com"); !errors.Is(err, account.ErrNotFound) {
		t.Fatalf("a refused admin create left an account: %v", err)
	}
}

func TestSessionsListAndRevoke(t *testing.T) {
	ctx := t.Context()
	env, a := accountsEnv(t)
	p, err := a.Auth.SignUp(ctx, account.RealmPlayer, account.NewUser{Email: "ada@example.com", Name: "Ada", Nickname: "ada", Password: "correct horse"},
		true, auth.Client{IPAddress: "192.0.2.7", UserAgent: "Firefox"})
	if err != nil {
		t.Fatal(err)
	}
	second, err := a.Auth.SignIn(ctx, account.RealmPlayer, "ada@example.com", "correct horse", true, auth.Client{IPAddress: "192.0.2.8"})
	if err != nil {
		t.Fatal(err)
	}

	r := runIn(t, env, "", "sessions", "list", "--user", "ADA@example.com", "--output", "json")
	var list []map[string]any
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &list) != nil || len(list) != 2 {
		t.Fatalf("sessions list: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	for _, s := range list {
		if _, has := s["token"]; has {
			t.Fatalf("support listing shows a token: %v", s)
		}
	}
	if r := runIn(t, env, "", "sessions", "list", "--user", p.User.ID.String()); r.code != 0 || !strings.Contains(r.stdout, "192.0.2.7") || !strings.Contains(r.stdout, "SESSION") {
		t.Fatalf("sessions list by id, table: code %d stdout %q", r.code, r.stdout)
	}
	if r := runIn(t, env, "", "sessions", "list", "--user", "nobody@example.com"); r.code != ExitNotFound {
		t.Fatalf("unknown user: code %d stderr %q", r.code, r.stderr)
	}
	if r := runIn(t, env, "", "sessions", "list", "--user", "ada@example.com", "--realm", "admin"); r.code != ExitNotFound {
		t.Fatalf("player looked up in the admin realm: code %d", r.code)
	}
	if r := runIn(t, env, "", "sessions", "list", "--user", "ada@example.com", "--realm", "staff"); r.code != ExitUsage {
		t.Fatalf("bad realm: code %d", r.code)
	}

	r = runIn(t, env, "", "sessions", "revoke", "--user", "ada@example.com", "--session", second.Session.ID.String(), "--reason", "lost phone")
	if r.code != 0 || !strings.Contains(r.stderr, "revoked 1 session") {
		t.Fatalf("revoke one: code %d stderr %q", r.code, r.stderr)
	}
	if _, err := a.Auth.Authenticate(ctx, account.RealmPlayer, second.Token); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatal("the revoked session still works")
	}
	if _, err := a.Auth.Authenticate(ctx, account.RealmPlayer, p.Token); err != nil {
		t.Fatal("revoking one session ended the other")
	}
	if r := runIn(t, env, "", "sessions", "revoke", "--user", "ada@example.com", "--session", second.Session.ID.String()); r.code != ExitNotFound {
		t.Fatalf("revoking a gone session: code %d", r.code)
	}
	if r := runIn(t, env, "", "sessions", "revoke", "--user", "ada@example.com", "--session", "nope"); r.code != ExitUsage {
		t.Fatalf("malformed session id: code %d", r.code)
	}
	r = runIn(t, env, "", "sessions", "revoke", "--user", "ada@example.com", "--reason", "account takeover", "--output", "json")
	var res struct{ Revoked int }
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &res) != nil || res.Revoked != 1 {
		t.Fatalf("revoke all: code %d stdout %q", r.code, r.stdout)
	}
	if _, err := a.Auth.Authenticate(ctx, account.RealmPlayer, p.Token); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatal("revoke all left a session")
	}

	// Every support action is in the audit log, newest first.
	r = runIn(t, env, "", "audit", "list", "--actor", "break-glass:alice", "--since", "1h", "--output", "json")
	var entries []audit.Entry
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &entries) != nil {
		t.Fatalf("audit list: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	var actions []string
	for _, en := range entries {
		actions = append(actions, en.Action)
		if en.Target != p.User.ID.String() {
			t.Errorf("entry %s targets %s, want the user", en.Action, en.Target)
		}
	}
	// Refused attempts (unknown user, gone session) are not recorded as done.
	want := "sessions.revoke sessions.revoke sessions.list sessions.list"
	if strings.Join(actions, " ") != want {
		t.Fatalf("audit actions %v, want %s", actions, want)
	}
	if entries[0].Reason != "account takeover" || entries[0].Details["revoked"] != "1" || entries[1].Reason != "lost phone" ||
		entries[1].Details["session"] != second.Session.ID.String() {
		t.Fatalf("revoke entries %+v", entries[:2])
	}
	if r := runIn(t, env, "", "audit", "list"); r.code != 0 || !strings.Contains(r.stdout, "sessions.revoke") || !strings.Contains(r.stdout, "lost phone") {
		t.Fatalf("audit list table: code %d stdout %q", r.code, r.stdout)
	}
	if r := runIn(t, env, "", "audit", "list", "--actor", "break-glass:nobody", "--output", "json"); r.code != 0 || strings.TrimSpace(r.stdout) != "[]" {
		t.Fatalf("empty audit list: code %d stdout %q", r.code, r.stdout)
	}
	if r := runIn(t, env, "", "audit", "list", "--since", "yesterday"); r.code != ExitUsage {
		t.Fatalf("bad --since: code %d", r.code)
	}
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	if r := runIn(t, env, "", "audit", "list", "--since", future, "--output", "json"); r.code != 0 || strings.TrimSpace(r.stdout) != "[]" {
		t.Fatalf("--since in the future: %q", r.stdout)
	}
}
