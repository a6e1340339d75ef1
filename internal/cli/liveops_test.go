package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/towerdefence/platformctl/fixtures"
	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/apitest"
	"github.com/towerdefence/platformctl/internal/audit"
	"github.com/towerdefence/platformctl/internal/liveops"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/role"
	"github.com/towerdefence/platformctl/internal/seed"
	"github.com/towerdefence/platformctl/internal/testwait"
)

// opsEnv is a running API server and the environment that points the CLI
// at its database, as an operator's shell would.
type opsEnv struct {
	srv *apitest.Server
	env map[string]string
}

func newOpsEnv(t *testing.T) *opsEnv {
	t.Helper()
	// The server looks for versions other processes published on every
	// request, so the CLI's changes show at once.
	srv := apitest.New(t, apitest.WithEnv("PLATFORM_LIVEOPS_REFRESH", "0s"))
	// PostgreSQL test databases are not seeded by serve; publish the
	// fixtures the way `seed fixtures` does (a no-op on SQLite).
	set, ps := seed.Load(fixtures.FS())
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	if _, err := srv.App.Seeder.Seed(t.Context(), set, seed.Options{}); err != nil {
		t.Fatal(err)
	}
	return &opsEnv{srv: srv, env: map[string]string{
		"PLATFORM_DATA_DIR":     t.TempDir(),
		"PLATFORM_DATABASE_URL": srv.Config.DatabaseURL,
		"PLATFORM_SECRET":       apitest.Secret,
		"PLATFORM_LOG_LEVEL":    "warn",
		"USER":                  "alice",
	}}
}

func (o *opsEnv) run(t *testing.T, args ...string) result {
	t.Helper()
	return run(t, t.Context(), o.env, args...)
}

func (o *opsEnv) runJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	r := o.run(t, append(args, "--output", "json")...)
	if r.code != 0 {
		t.Fatalf("%v: exit %d, stderr %q", args, r.code, r.stderr)
	}
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		t.Fatalf("%v: %v in %q", args, err, r.stdout)
	}
}

// TestLiveOpsSetSeedReachesARunningServer changes a map seed from the CLI
// (another process, as far as the server can tell) and reads it back from
// the running server without restarting it.
func TestLiveOpsSetSeedReachesARunningServer(t *testing.T) {
	o := newOpsEnv(t)
	admin := o.srv.CreateAdminWithRole(t, "liveops").Client
	get := func() liveops.Snapshot {
		var s liveops.Snapshot
		res := admin.Do("GET", "/api/liveops/admin-bootstrap", nil)
		if res.Status != 200 {
			t.Fatalf("admin-bootstrap: %d %s", res.Status, res.Body)
		}
		res.Decode(t, &s)
		return s
	}
	before := get()
	queues := func() (seed uint64, etag string) {
		res := o.srv.Client(t).Do("GET", "/api/matchmaking/queues", nil)
		var q struct {
			Maps struct {
				Short struct {
					Layout struct {
						Seed uint64 `json:"seed,string"`
					}
				}
			}
		}
		res.Decode(t, &q)
		if res.Status != 200 {
			t.Fatalf("queues: %d %s", res.Status, res.Body)
		}
		return q.Maps.Short.Layout.Seed, res.Header.Get("ETag")
	}
	seedBefore, etagBefore := queues()
	if seedBefore != uint64(before.MapSeeds[0].EffectiveSeed) {
		t.Fatalf("the queues play short seed %d, live-ops says %d", seedBefore, before.MapSeeds[0].EffectiveSeed)
	}

	var shown liveops.Snapshot
	o.runJSON(t, &shown, "liveops", "show")
	if shown.Version != before.Version || shown.MapSeeds[0].Seed != before.MapSeeds[0].Seed {
		t.Fatalf("show: version %d seeds %+v; the server says %d %+v", shown.Version, shown.MapSeeds, before.Version, before.MapSeeds)
	}
	table := o.run(t, "liveops", "show")
	for _, want := range []string{"MAP SEEDS", "FLAGS", "EVENTS", "BANNERS", "HISTORY", before.Flags[0].Key} {
		if table.code != 0 || !strings.Contains(table.stdout, want) {
			t.Fatalf("show as a table lacks %q: %d %q", want, table.code, table.stdout)
		}
	}

	var ch liveops.SeedChange
	o.runJSON(t, &ch, "liveops", "set-seed", "--size", "short", "--seed", "987654321", "--reason", "QA ticket 12")
	if !ch.Changed || ch.To != 987654321 || ch.Version != before.Version+1 {
		t.Fatalf("set-seed: %+v", ch)
	}
	after := get()
	if after.Version != before.Version+1 || after.MapSeeds[0].Seed != 987654321 || after.ETag == before.ETag || after.PublishedBy != "break-glass:alice" {
		t.Fatalf("the running server serves version %d seeds %+v by %s", after.Version, after.MapSeeds, after.PublishedBy)
	}
	// The queues route of the running server plays the new map.
	if seed, etag := queues(); seed != 987654321 || etag == etagBefore {
		t.Fatalf("after set-seed the queues play short seed %d (etag %s, before %s)", seed, etag, etagBefore)
	}
	entries, err := o.srv.App.Audit.List(t.Context(), audit.Filter{Actor: "break-glass:alice"})
	if err != nil || len(entries) != 1 || entries[0].Action != liveops.ActionSetSeed || entries[0].Reason != "QA ticket 12" {
		t.Fatalf("audit %+v %v", entries, err)
	}

	again := o.run(t, "liveops", "set-seed", "--size", "short", "--seed", "987654321")
	if again.code != 0 || !strings.Contains(again.stderr, "already") {
		t.Fatalf("same seed: %d %q", again.code, again.stderr)
	}
	for _, args := range [][]string{
		{"liveops", "set-seed", "--size", "medium", "--seed", "5"},
		{"liveops", "set-seed", "--size", "short", "--seed", "-5"},
		{"liveops", "set-seed", "--size", "short", "--seed", "five"},
		{"liveops", "set-seed", "--size", "short", "--seed", "99999999999999999999"},
		{"liveops", "set-seed", "--size", "short"},
		{"liveops", "set-seed", "--seed", "5"},
		{"liveops", "show", "--output", "xml"},
	} {
		if r := o.run(t, args...); r.code != ExitUsage || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want %d and one line", args, r.code, r.stderr, ExitUsage)
		}
	}
	if got := get(); got.Version != after.Version {
		t.Fatalf("refused commands published version %d", got.Version)
	}
}

func TestAdminSetRole(t *testing.T) {
	ctx := t.Context()
	o := newOpsEnv(t)
	root := o.srv.CreateAdminWithRole(t, "admin")
	ann := o.srv.CreateAdminWithRole(t, "viewer")
	if res := ann.Client.Do("GET", "/api/liveops/admin-bootstrap", nil); res.Status != 200 {
		t.Fatalf("viewer reads live-ops: %d", res.Status)
	}

	var ch role.Change
	o.runJSON(t, &ch, "admin", "set-role", "--email", strings.ToUpper(ann.User.Email), "--role", "support", "--reason", "moved to support")
	if !ch.Changed || ch.From != "viewer" || ch.To != "support" || ch.Admin.ID != ann.User.ID {
		t.Fatalf("set-role: %+v", ch)
	}
	// The command ran as its own process would: the serve hears of the
	// change through the database's session notices and forgets the
	// administrator's cached session; the next request after that reads
	// the new role.
	testwait.For(t, 5*time.Second, "the new role to reach the running server", func() bool {
		res := ann.Client.Do("GET", "/api/liveops/admin-bootstrap", nil)
		if res.Status != 200 && res.Status != 403 {
			t.Fatalf("support reads live-ops: %d", res.Status)
		}
		return res.Status == 403
	})
	entries, _ := o.srv.App.Audit.List(ctx, audit.Filter{Actor: "break-glass:alice"})
	if len(entries) != 1 || entries[0].Action != role.ActionSetRole || entries[0].Reason != "moved to support" ||
		entries[0].Target != "admin:"+ann.User.ID.String() {
		t.Fatalf("audit %+v", entries)
	}
	if r := o.run(t, "admin", "set-role", "--id", ann.User.ID.String(), "--role", "support"); r.code != 0 || !strings.Contains(r.stderr, "already") {
		t.Fatalf("same role: %d %q", r.code, r.stderr)
	}

	cases := []struct {
		args []string
		code int
	}{
		{[]string{"--email", ann.User.Email, "--role", "superuser"}, ExitUsage},
		{[]string{"--email", ann.User.Email}, ExitUsage},
		{[]string{"--role", "viewer"}, ExitUsage},
		{[]string{"--email", ann.User.Email, "--id", ann.User.ID.String(), "--role", "viewer"}, ExitUsage},
		{[]string{"--id", "not-a-uuid", "--role", "viewer"}, ExitUsage},
		{[]string{"--email", "nobody@example.com", "--role", "viewer"}, ExitNotFound},
		{[]string{"--email", root.User.Email, "--role", "viewer"}, ExitRefused},
	}
	for _, tc := range cases {
		r := o.run(t, append([]string{"admin", "set-role"}, tc.args...)...)
		if r.code != tc.code {
			t.Errorf("%v: exit %d, want %d; stderr %q", tc.args, r.code, tc.code, r.stderr)
		}
	}
	if u, _ := o.srv.App.Accounts.ByEmail(ctx, account.RealmAdmin, root.User.Email); u.Role != "admin" {
		t.Fatalf("the last admin became %s", u.Role)
	}
}

// TestAdminCreateRole checks `admin create --role` against the permission
// table: a known role is stored (case folded), an unknown one is a usage
// error naming the roles, and no role gives the default.
func TestAdminCreateRole(t *testing.T) {
	ctx := t.Context()
	o := newOpsEnv(t)
	create := func(email, roleFlag string) result {
		var out, errOut bytes.Buffer
		args := []string{"admin", "create", "--email", email, "--name", "R"}
		if roleFlag != "" {
			args = append(args, "--role", roleFlag)
		}
		code := Run(ctx, platform.Build{}, args, func(k string) string { return o.env[k] },
			strings.NewReader("correct horse battery\n"), &out, &errOut)
		return result{code, out.String(), errOut.String()}
	}
	for _, tc := range []struct {
		email, flag, want string
		code              int
	}{
		{"r1@example.com", "LiveOps", "liveops", 0},
		{"r2@example.com", "", "admin", 0},
		{"r3@example.com", "superuser", "", ExitUsage},
	} {
		r := create(tc.email, tc.flag)
		if r.code != tc.code {
			t.Fatalf("--role %q: exit %d, stderr %q", tc.flag, r.code, r.stderr)
		}
		u, err := o.srv.App.Accounts.ByEmail(ctx, account.RealmAdmin, tc.email)
		switch {
		case tc.code != 0 && (err == nil || !strings.Contains(r.stderr, "liveops, support, viewer")):
			t.Fatalf("--role %q: created %v, stderr %q", tc.flag, u, r.stderr)
		case tc.code == 0 && (err != nil || u.Role != tc.want):
			t.Fatalf("--role %q: role %v, %v; want %s", tc.flag, u, err, tc.want)
		}
	}
}
