package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/towerdefence/platformctl/internal/admin"
	"github.com/towerdefence/platformctl/internal/apitest"
	"github.com/towerdefence/platformctl/internal/audit"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/lifecycle"
	"github.com/towerdefence/platformctl/internal/liveops"
)

// planeMode is one way the support verbs reach the administrator plane:
// signed in over HTTP, or break-glass on the server's database.
type planeMode struct {
	name  string
	env   map[string]string
	actor string
}

// planeModes signs a into srv for the remote mode and points the
// break-glass mode at the server's own database.
func planeModes(t *testing.T, srv *apitest.Server, a *apitest.Account) []planeMode {
	t.Helper()
	remote := map[string]string{"XDG_CONFIG_HOME": t.TempDir(), "USER": "alice"}
	if r := runIn(t, remote, a.Password+"\n", "login", "--server", srv.URL, "--email", a.User.Email); r.code != 0 {
		t.Fatalf("login: exit %d %s", r.code, r.stderr)
	}
	local := map[string]string{"XDG_CONFIG_HOME": t.TempDir(), "USER": "alice",
		"PLATFORM_DATABASE_URL": srv.Config.DatabaseURL, "PLATFORM_DATA_DIR": srv.Config.DataDir,
		"PLATFORM_SECRET": apitest.Secret, "PLATFORM_LOG_LEVEL": "warn"}
	return []planeMode{{"remote", remote, admin.ActorOf(a.User)}, {"break-glass", local, "break-glass:alice"}}
}

// jsonKeys is the sorted top-level keys of a JSON object, the shape two
// modes' outputs must share whatever their values.
func jsonKeys(t *testing.T, out string) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("not a JSON object: %v in %q", err, out)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return strings.Join(keys, ",")
}

const (
	validLiveOps = "mapSeeds: {short: %SHORT%, long: 222}\n" +
		"flags:\n  - {key: lobby-chat, type: bool, default: false, enabled: true}\n"
	invalidLiveOps = "mapSeeds: {short: 5, long: 6}\n" +
		"flags:\n  - {key: Not A Key, type: colour, default: 1, enabled: true}\n"
)

// TestSupportVerbsInBothModes runs users suspend, unsuspend, export and
// delete, admin create and liveops publish signed in and break-glass on
// the same server: each prints the same shape and exits with the same
// codes in both; each action is audited under the administrator's id
// signed in and as break-glass:<os user> on the database, and only the
// latter warns.
func TestSupportVerbsInBothModes(t *testing.T) {
	srv := apitest.New(t)
	boss := srv.CreateAdminWithRole(t, "admin")
	shapes := map[string][]string{}
	dir := t.TempDir()
	for i, m := range planeModes(t, srv, boss) {
		run := func(stdin string, args ...string) result {
			t.Helper()
			r := runIn(t, m.env, stdin, args...)
			if warned := strings.Contains(r.stderr, "break-glass"); warned != (m.name == "break-glass") {
				t.Errorf("%s %v: break-glass warning %v: %s", m.name, args, warned, r.stderr)
			}
			return r
		}
		ok := func(verb string, r result) {
			t.Helper()
			if r.code != 0 {
				t.Fatalf("%s %s: exit %d %s", m.name, verb, r.code, r.stderr)
			}
			shapes[verb] = append(shapes[verb], jsonKeys(t, r.stdout))
		}
		email := srv.SignUpPlayer(t).User.Email
		ok("suspend", run("", "users", "suspend", "--user", email, "--reason", "chargeback", "--until", "7d", "--output", "json"))
		ok("unsuspend", run("", "users", "unsuspend", "--user", email, "--reason", "refund cleared", "--output", "json"))
		ok("export", run("", "users", "export", "--user", email))
		ok("delete", run("", "users", "delete", "--user", email, "--reason", "asked by mail", "--output", "json"))
		ok("admin create", run(apitest.DefaultPassword+"\n", "admin", "create", "--email", m.name+"-new@example.com",
			"--name", "New", "--role", "support", "--output", "json"))
		file := filepath.Join(dir, m.name+".yaml")
		writeFile(t, file, strings.ReplaceAll(validLiveOps, "%SHORT%", []string{"111", "333"}[i]))
		ok("publish", run("", "liveops", "publish", "--file", file, "--reason", "new season", "--output", "json"))

		for _, tc := range []struct {
			args []string
			code int
		}{
			{[]string{"users", "delete", "--user", email, "--reason", "again"}, ExitNotFound},
			{[]string{"users", "suspend", "--user", srv.SignUpPlayer(t).User.Email, "--reason", "   "}, ExitUsage},
			{[]string{"admin", "create", "--email", m.name + "-new@example.com", "--name", "Again"}, ExitRefused},
		} {
			if r := runIn(t, m.env, apitest.DefaultPassword+"\n", tc.args...); r.code != tc.code {
				t.Errorf("%s %v: exit %d, want %d: %s", m.name, tc.args, r.code, tc.code, r.stderr)
			}
		}
		bad := filepath.Join(dir, m.name+"-bad.yaml")
		writeFile(t, bad, invalidLiveOps)
		r := runIn(t, m.env, "", "liveops", "publish", "--file", bad)
		if r.code != ExitUsage || !strings.Contains(r.stderr, liveops.CodeInvalidConfig) || strings.Count(r.stderr, "  flags[0]") < 2 {
			t.Errorf("%s publish of an invalid file: exit %d, want %d listing every problem: %s", m.name, r.code, ExitUsage, r.stderr)
		}

		for _, action := range []string{lifecycle.ActionSuspend, lifecycle.ActionUnsuspend, lifecycle.ActionExport,
			lifecycle.ActionDelete, auth.ActionAdminCreate, liveops.ActionPublish} {
			entries, err := srv.App.Audit.List(t.Context(), audit.Filter{Actor: m.actor, Action: action})
			if err != nil || len(entries) != 1 {
				t.Errorf("%s: %d %s entries by %s, want 1 (%v)", m.name, len(entries), action, m.actor, err)
			}
		}
	}
	for verb, got := range shapes {
		if len(got) != 2 || got[0] != got[1] {
			t.Errorf("%s prints %q signed in and %q break-glass", verb, got[0], got[len(got)-1])
		}
	}
}

// TestRemoteVerbsRefuse: signed in, an administrator's own account is
// changed break-glass only, and a role without the permission exits 4
// naming it, with nothing changed.
func TestRemoteVerbsRefuse(t *testing.T) {
	srv := apitest.New(t)
	support := srv.CreateAdminWithRole(t, "support")
	player := srv.SignUpPlayer(t)
	env := planeModes(t, srv, support)[0].env
	file := filepath.Join(t.TempDir(), "liveops.yaml")
	writeFile(t, file, strings.ReplaceAll(validLiveOps, "%SHORT%", "7"))
	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"users", "suspend", "--realm", "admin", "--user", support.User.Email, "--reason", "x"}, ExitUsage, "--realm admin"},
		{[]string{"users", "show", "--realm", "admin", "--user", support.User.Email}, ExitUsage, "--realm admin"},
		{[]string{"users", "find", "--realm", "admin", "--query", "support"}, ExitUsage, "--realm admin"},
		{[]string{"users", "delete", "--user", player.User.Email, "--reason", "x"}, ExitRefused, "admins:write"},
		{[]string{"admin", "create", "--email", "x@example.com", "--name", "X"}, ExitRefused, "admins:write"},
		{[]string{"liveops", "publish", "--file", file}, ExitRefused, "liveops:write"},
		{[]string{"liveops", "publish", "--file", filepath.Join(t.TempDir(), "missing.yaml")}, ExitUsage, "--file"},
	} {
		r := runIn(t, env, apitest.DefaultPassword+"\n", tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.says) {
			t.Errorf("%v: exit %d %q, want %d naming %s", tc.args, r.code, r.stderr, tc.code, tc.says)
		}
	}
	if res := player.Client.Do("GET", "/api/admin/me", nil); res.Status != 401 {
		t.Fatalf("a player cookie on the admin plane: %d", res.Status)
	}
	entries, err := srv.App.Audit.List(t.Context(), audit.Filter{Actor: admin.ActorOf(support.User)})
	if err != nil || len(entries) != 0 {
		t.Fatalf("refused commands left audit entries: %+v %v", entries, err)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestLookupVerbsInBothModes: users show, users find and token inspect
// answer alike signed in and break-glass, exit alike on bad input, and
// the inspection is audited under the mode's actor.
func TestLookupVerbsInBothModes(t *testing.T) {
	srv := apitest.New(t)
	boss := srv.CreateAdminWithRole(t, "admin")
	player := srv.SignUpPlayer(t)
	modes := planeModes(t, srv, boss)
	r := runIn(t, modes[0].env, "", "token", "issue", "--user", player.User.Email, "--type", "profile",
		"--name", "Renamed", "--callback-url", srv.URL+"/confirm", "--output", "json")
	var issued struct{ Token string }
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &issued) != nil || issued.Token == "" {
		t.Fatalf("token issue: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	outputs := map[string][]string{}
	for _, m := range modes {
		ok := func(verb, stdin string, args ...string) string {
			t.Helper()
			r := runIn(t, m.env, stdin, args...)
			if r.code != 0 {
				t.Fatalf("%s %s: exit %d %s", m.name, verb, r.code, r.stderr)
			}
			outputs[verb] = append(outputs[verb], r.stdout)
			return r.stdout
		}
		ok("show", "", "users", "show", "--user", player.User.Email, "--output", "json")
		ok("show by id", "", "users", "show", "--user", player.User.ID.String(), "--output", "json")
		ok("find", "", "users", "find", "--query", player.User.Nickname[:4], "--output", "json")
		ok("inspect", issued.Token+"\n", "token", "inspect", "-", "--output", "json")
		for _, tc := range []struct {
			args []string
			code int
		}{
			{[]string{"users", "show", "--user", "nobody@example.com"}, ExitNotFound},
			{[]string{"users", "show", "--user", player.User.Email, "--realm", "moon"}, ExitUsage},
			{[]string{"token", "inspect", strings.Repeat("ab", 32)}, ExitNotFound},
			{[]string{"token", "inspect", "not-a-token"}, ExitUsage},
		} {
			if r := runIn(t, m.env, "", tc.args...); r.code != tc.code {
				t.Errorf("%s %v: exit %d, want %d: %s", m.name, tc.args, r.code, tc.code, r.stderr)
			}
		}
		entries, err := srv.App.Audit.List(t.Context(), audit.Filter{Actor: m.actor, Action: "token.inspect"})
		if err != nil || len(entries) != 2 || entries[len(entries)-1].Target != player.User.ID.String() {
			t.Errorf("%s: token.inspect entries by %s: %+v (%v), want the found and the unknown token", m.name, m.actor, entries, err)
		}
	}
	for verb, got := range outputs {
		if len(got) != 2 || got[0] != got[1] {
			t.Errorf("%s prints\n%s signed in and\n%s break-glass", verb, got[0], got[len(got)-1])
		}
	}
	if !strings.Contains(outputs["show"][0], `"status": "active"`) || !strings.Contains(outputs["find"][0], player.User.ID.String()) {
		t.Errorf("show or find miss the player: %s %s", outputs["show"][0], outputs["find"][0])
	}
}
