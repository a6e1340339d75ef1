package cli

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/towerdefence/platformctl/internal/admin"
	"github.com/towerdefence/platformctl/internal/apitest"
	"github.com/towerdefence/platformctl/internal/audit"
)

// TestRemoteMode signs in to a running server with platformctl login and
// runs the support commands over its API: the session file is the
// user's alone, the audit trail names the administrator's account, a
// role without the permission exits 4 naming it, and after logout the
// session no longer works on the server.
func TestRemoteMode(t *testing.T) {
	srv := apitest.New(t)
	support := srv.CreateAdminWithRole(t, "support")
	player := srv.SignUpPlayer(t)
	config := t.TempDir()
	env := map[string]string{"XDG_CONFIG_HOME": config, "USER": "alice"} // no database URL: remote only
	run := func(stdin string, args ...string) result {
		t.Helper()
		return runIn(t, env, stdin, args...)
	}

	if r := run("wrong password\n", "login", "--server", srv.URL, "--email", support.User.Email); r.code != ExitRefused {
		t.Fatalf("login with a wrong password: exit %d %s", r.code, r.stderr)
	}
	if r := run(support.Password+"\n", "login", "--server", "ftp://x", "--email", support.User.Email); r.code != ExitUsage {
		t.Fatalf("login to ftp://: exit %d %s", r.code, r.stderr)
	}
	if r := run(support.Password+"\n", "login", "--server", srv.URL, "--email", support.User.Email); r.code != 0 {
		t.Fatalf("login: exit %d %s", r.code, r.stderr)
	}
	info, err := os.Stat(filepath.Join(config, "platformctl", "session.json"))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("session file: %v %v", info, err)
	}
	r := run("", "whoami", "--output", "json")
	if r.code != 0 || !strings.Contains(r.stdout, support.User.Email) || !strings.Contains(r.stdout, `"support"`) {
		t.Fatalf("whoami: exit %d %s %s", r.code, r.stdout, r.stderr)
	}

	var page admin.UserPage
	r = run("", "users", "search", player.User.Email, "--output", "json")
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &page) != nil || len(page.Users) != 1 || page.Users[0].ID != player.User.ID {
		t.Fatalf("users search: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := run("", "sessions", "revoke", "--user", player.User.Email, "--reason", "phone stolen"); r.code != 0 || strings.Contains(r.stderr, "break-glass") {
		t.Fatalf("sessions revoke: exit %d %s", r.code, r.stderr)
	}
	if res := player.Client.Do("GET", "/api/player/bootstrap", nil); res.Status != 401 {
		t.Fatalf("the player is still signed in: %d", res.Status)
	}
	var entries []audit.Entry
	r = run("", "audit", "list", "--user", player.User.Email, "--action", "sessions.revoke", "--output", "json")
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &entries) != nil || len(entries) != 1 ||
		entries[0].Actor != "admin:"+support.User.ID.String() || entries[0].Reason != "phone stolen" {
		t.Fatalf("audit list: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := run("", "mail", "outbox"); r.code != 0 {
		t.Fatalf("mail outbox: exit %d %s", r.code, r.stderr)
	}
	if r := run("", "liveops", "set-seed", "--size", "short", "--seed", "5"); r.code != ExitRefused || !strings.Contains(r.stderr, "liveops:write") {
		t.Fatalf("set-seed as support: exit %d %s", r.code, r.stderr)
	}
	if r := run("", "users", "detail", "nobody@example.com"); r.code != ExitNotFound {
		t.Fatalf("users detail nobody: exit %d %s", r.code, r.stderr)
	}

	r = run("", "token", "issue", "--user", player.User.Email, "--type", "profile", "--name", "Renamed",
		"--callback-url", srv.URL+"/confirm", "--reason", "ticket 9", "--output", "json")
	if r.code != 0 || !strings.Contains(r.stdout, `"token"`) {
		t.Fatalf("token issue: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	issued, err := srv.App.Audit.List(t.Context(), audit.Filter{Action: "token.issue", Actor: "admin:" + support.User.ID.String()})
	if err != nil || len(issued) != 1 {
		t.Fatalf("token.issue audit %+v %v", issued, err)
	}
	if r := run("", "token", "issue", "--user", player.User.Email, "--type", "profile", "--callback-url", "https://evil.example/x"); r.code != ExitRefused || !strings.Contains(r.stderr, "INVALID_CALLBACK_URL") {
		t.Fatalf("token issue to an untrusted callback: exit %d %s", r.code, r.stderr)
	}

	if r := run("", "logout"); r.code != 0 {
		t.Fatalf("logout: exit %d %s", r.code, r.stderr)
	}
	if res := support.Client.Do("GET", "/api/admin/me", nil); res.Status != 200 {
		t.Fatalf("logout ended another session of the administrator: %d", res.Status)
	}
	if r := run("", "whoami"); r.code != ExitRefused {
		t.Fatalf("whoami after logout: exit %d %s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(config, "platformctl", "session.json")); !os.IsNotExist(err) {
		t.Fatalf("the session file is still there: %v", err)
	}
}

// An administrator holding a second factor logs in with the password and
// then the code, both read from stdin: a wrong code saves no session, a
// backup code completes the login.
func TestRemoteLoginWithASecondFactor(t *testing.T) {
	srv := apitest.New(t)
	support := srv.CreateAdminWithRole(t, "support")
	en := srv.EnrolTOTP(t, support)
	config := t.TempDir()
	env := map[string]string{"XDG_CONFIG_HOME": config, "USER": "alice"}
	login := func(stdin string) result {
		t.Helper()
		return runIn(t, env, stdin, "login", "--server", srv.URL, "--email", support.User.Email)
	}
	if r := login(support.Password + "\n000000\n"); r.code == 0 {
		t.Fatalf("login with a wrong code: exit 0 %s", r.stderr)
	}
	if _, err := os.Stat(filepath.Join(config, "platformctl", "session.json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a failed second factor saved a session: %v", err)
	}
	if r := login(support.Password + "\n" + en.BackupCodes[0] + "\n"); r.code != 0 {
		t.Fatalf("login with a backup code: exit %d %s", r.code, r.stderr)
	}
	if r := runIn(t, env, "", "whoami"); r.code != 0 || !strings.Contains(r.stdout, support.User.Email) {
		t.Fatalf("whoami after the login: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
}
