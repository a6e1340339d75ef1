package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/towerdefence/platformctl/internal/admin"
	"github.com/towerdefence/platformctl/internal/apitest"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/liveops"
	"github.com/towerdefence/platformctl/internal/qa"
	"github.com/towerdefence/platformctl/internal/role"
	"github.com/towerdefence/platformctl/internal/storetest"
)

// liveOpsConfig is a configuration whose events are ended, active and
// upcoming around now.
func liveOpsConfig(now time.Time) liveops.Config {
	pct := 25
	return liveops.Config{
		MapSeeds: liveops.MapSeeds{Short: 101, Long: 202},
		Flags: []liveops.Flag{
			{Key: "store-v2", Description: "New store", Type: liveops.TypeBool, Default: false, Enabled: true, Rules: []liveops.Rule{
				{ID: "dev", Audience: liveops.Audience{Environments: []string{"development"}}, Value: true},
				{ID: "rollout", Audience: liveops.Audience{RolloutPercent: &pct}, Value: true},
			}},
			{Key: "xp", Type: liveops.TypeNumber, Default: 1.0, Enabled: true},
		},
		Events: []liveops.Event{
			{ID: "launch", Name: "Launch", StartAt: now.Add(-72 * time.Hour).Truncate(time.Second), EndAt: now.Add(-24 * time.Hour).Truncate(time.Second)},
			{ID: "festival", Name: "Festival", StartAt: now.Add(-time.Hour).Truncate(time.Second), EndAt: now.Add(24 * time.Hour).Truncate(time.Second),
				Flags: map[string]any{"xp": 2.0}},
			{ID: "winter", Name: "Winter", StartAt: now.Add(240 * time.Hour).Truncate(time.Second), EndAt: now.Add(480 * time.Hour).Truncate(time.Second),
				MapSeeds: &liveops.MapSeeds{Long: 909}},
		},
		Banners:  []liveops.Banner{{ID: "hello", Title: "Hello", Placement: liveops.PlacementHome, Link: "/news"}},
		Messages: []liveops.Message{{ID: "welcome", Title: "Welcome", Body: "Hi", StartAt: now.Add(-time.Hour).Truncate(time.Second)}},
	}
}

// liveOpsServer is a development server with liveOpsConfig published by
// an operator, on top of whatever the fixtures published (the embedded
// SQLite database seeds itself; PostgreSQL does not).
func liveOpsServer(t *testing.T, opts ...apitest.Option) (*apitest.Server, *liveops.Head) {
	t.Helper()
	srv := apitest.New(t, opts...)
	h, err := srv.App.LiveOps.Publish(t.Context(), "os:designer", liveOpsConfig(time.Now()), nil, "test configuration")
	if err != nil {
		t.Fatal(err)
	}
	return srv, h
}

// TestAdminRoutesCheckRoles asks every admin route as every kind of
// caller: no session and a player session get 401, an administrator gets
// 200 or 403 by role.
func TestAdminRoutesCheckRoles(t *testing.T) {
	srv, _ := liveOpsServer(t)
	callers := map[string]*apitest.Client{
		"anonymous": srv.Client(t),
		"player":    srv.SignUpPlayer(t).Client,
	}
	for _, r := range role.All() {
		callers[string(r)] = srv.CreateAdminWithRole(t, string(r)).Client
	}
	ghost := srv.CreateAdminWithRole(t, "viewer")
	storetest.Exec(t, srv.App.DB, "UPDATE users SET role = 'ghost' WHERE id = ?", ghost.User.ID)
	callers["unknown role"] = ghost.Client

	routes := []struct {
		path string
		want map[string]int
	}{
		{"/api/admin/bootstrap", map[string]int{"anonymous": 401, "player": 401, "admin": 200, "liveops": 200, "support": 200, "viewer": 200, "unknown role": 403}},
		{"/api/liveops/admin-bootstrap", map[string]int{"anonymous": 401, "player": 401, "admin": 200, "liveops": 200, "support": 403, "viewer": 200, "unknown role": 403}},
	}
	for _, rt := range routes {
		if len(rt.want) != len(callers) {
			t.Fatalf("%s: expectations for %d callers, %d callers", rt.path, len(rt.want), len(callers))
		}
		for name, c := range callers {
			t.Run(rt.path+" as "+name, func(t *testing.T) {
				res := c.Do("GET", rt.path, nil)
				if res.Status != rt.want[name] {
					t.Fatalf("status %d, want %d: %s", res.Status, rt.want[name], res.Body)
				}
				switch res.Status {
				case 401:
					if res.Code() != "UNAUTHORIZED" {
						t.Fatalf("code %s", res.Code())
					}
				case 403:
					var e struct {
						Code    string
						Details map[string]any
					}
					res.Decode(t, &e)
					if e.Code != "FORBIDDEN" || e.Details["permission"] == nil {
						t.Fatalf("403 body %s", res.Body)
					}
				}
			})
		}
	}
}

func TestAdminBootstrap(t *testing.T) {
	ctx := t.Context()
	srv, published := liveOpsServer(t)
	// Count against what the database already holds (the development world
	// on SQLite), so the test sees exactly what it adds.
	before, err := srv.App.DB.LiveOps().CountAccounts(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	srv.SignUpPlayer(t)
	srv.SignUpPlayer(t)
	liveopsAdmin := srv.CreateAdminWithRole(t, "liveops")
	viewer := srv.CreateAdminWithRole(t, "viewer")
	if _, err := srv.App.LiveOps.SetSeed(ctx, "os:test", "short", 4242, "for the console"); err != nil {
		t.Fatal(err)
	}

	// The counts come from the counter job's snapshot.
	if err := srv.App.Gauges.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	res := liveopsAdmin.Client.Do("GET", "/api/admin/bootstrap", nil)
	if res.Status != 200 {
		t.Fatalf("status %d: %s", res.Status, res.Body)
	}
	var b admin.Bootstrap
	res.Decode(t, &b)
	if b.Caller.ID != liveopsAdmin.User.ID || b.Caller.Role != role.LiveOps || !containsPerm(b.Caller.Permissions, role.LiveOpsWrite) || containsPerm(b.Caller.Permissions, role.AdminsWrite) {
		t.Fatalf("caller %+v", b.Caller)
	}
	if len(b.Roles) != len(role.All()) || b.Build.Version != "test" || b.Runtime.Environment != "development" || b.Runtime.Database != srv.App.DB.Dialect() || !b.Runtime.TestingTools {
		t.Fatalf("roles/build/runtime %+v %+v %+v", b.Roles, b.Build, b.Runtime)
	}
	c := b.Counts
	if c.Players != before.Players+2 || c.PlayerSessions != before.PlayerSessions+2 || c.Administrators != 2 || c.AdminSessions != 2 ||
		c.OpenLobbies == nil || c.MailOutbox == nil || len(c.MailOutbox.ByStatus) != 5 {
		t.Fatalf("counts %+v, before %+v", c, before)
	}
	if b.LiveOps == nil || b.LiveOps.Version != published.Version+1 || b.LiveOps.PublishedBy != "os:test" {
		t.Fatalf("live-ops head %+v", b.LiveOps)
	}
	if len(b.Maps) != 2 || b.Maps[0].Seed != 4242 || b.Maps[1].Seed != 202 || !b.Maps[0].Valid || b.Maps[0].PathCellCount == 0 {
		t.Fatalf("maps %+v", b.Maps)
	}
	if len(b.Queues) != len(srv.App.Queues) {
		t.Fatalf("queues %+v", b.Queues)
	}
	for _, q := range b.Queues {
		if want := map[string]int64{"short": 4242, "long": 202}[string(q.MapSize)]; q.Seed != want {
			t.Fatalf("queue %s plays seed %d, want %d", q.ID, q.Seed, want)
		}
	}
	if len(b.RecentAudit) == 0 || b.RecentAudit[0].Action != liveops.ActionSetSeed || b.RecentAudit[0].Reason != "for the console" {
		t.Fatalf("recent audit %+v", b.RecentAudit)
	}

	// A viewer may open the console but not read the audit trail.
	res = viewer.Client.Do("GET", "/api/admin/bootstrap", nil)
	var raw map[string]json.RawMessage
	res.Decode(t, &raw)
	if res.Status != 200 || raw["recentAudit"] != nil || raw["caller"] == nil {
		t.Fatalf("viewer bootstrap %d: %s", res.Status, res.Body)
	}
}

func containsPerm(ps []role.Permission, p role.Permission) bool {
	for _, x := range ps {
		if x == p {
			return true
		}
	}
	return false
}

func TestLiveOpsAdminBootstrapETag(t *testing.T) {
	srv, published := liveOpsServer(t)
	c := srv.CreateAdminWithRole(t, "liveops").Client
	first := c.Do("GET", "/api/liveops/admin-bootstrap", nil)
	etag := first.Header.Get("ETag")
	var snap liveops.Snapshot
	first.Decode(t, &snap)
	if first.Status != 200 || etag == "" || snap.ETag != etag || first.Header.Get("Cache-Control") != "private, no-cache" {
		t.Fatalf("first: %d etag %q body etag %q headers %v", first.Status, etag, snap.ETag, first.Header)
	}
	status := map[string]string{}
	for _, e := range snap.Events {
		status[e.ID] = e.Status
	}
	if status["launch"] != "ended" || status["festival"] != "active" || status["winter"] != "upcoming" {
		t.Fatalf("event statuses %v", status)
	}

	cases := []struct {
		name, ifNoneMatch string
		want              int
	}{
		{"same tag", etag, http.StatusNotModified},
		{"weak form", "W/" + etag, http.StatusNotModified},
		{"in a list", `"other", ` + etag, http.StatusNotModified},
		{"star", "*", http.StatusNotModified},
		{"stale tag", `"liveops-1-0000000000000000"`, http.StatusOK},
		{"garbage", `not-a-tag`, http.StatusOK},
	}
	for _, tc := range cases {
		req, _ := http.NewRequest("GET", srv.URL+"/api/liveops/admin-bootstrap", nil)
		req.Header.Set("If-None-Match", tc.ifNoneMatch)
		res := c.Send(req)
		if res.Status != tc.want {
			t.Fatalf("%s: status %d, want %d", tc.name, res.Status, tc.want)
		}
		if tc.want == http.StatusNotModified && (len(res.Body) != 0 || res.Header.Get("ETag") != etag) {
			t.Fatalf("%s: 304 with body %q etag %q", tc.name, res.Body, res.Header.Get("ETag"))
		}
	}

	// A published change gives a new tag, and the old one no longer matches.
	if _, err := srv.App.LiveOps.SetSeed(t.Context(), "os:test", "long", 303, ""); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", srv.URL+"/api/liveops/admin-bootstrap", nil)
	req.Header.Set("If-None-Match", etag)
	res := c.Send(req)
	var after liveops.Snapshot
	res.Decode(t, &after)
	if res.Status != 200 || res.Header.Get("ETag") == etag || after.Version != published.Version+1 || after.MapSeeds[1].Seed != 303 {
		t.Fatalf("after a change: %d etag %s version %d seeds %+v", res.Status, res.Header.Get("ETag"), after.Version, after.MapSeeds)
	}
}

func TestLiveOpsNotPublished(t *testing.T) {
	srv := apitest.New(t)
	// The embedded database seeds itself; take the fixtures' version away.
	storetest.Exec(t, srv.App.DB, "DELETE FROM liveops_configs")
	admin := srv.CreateAdminWithRole(t, "admin").Client
	if res := admin.Do("GET", "/api/liveops/admin-bootstrap", nil); res.Status != 404 || res.Code() != liveops.CodeNotPublished {
		t.Fatalf("unpublished live-ops: %d %s", res.Status, res.Body)
	}
	res := admin.Do("GET", "/api/admin/bootstrap", nil)
	var raw map[string]json.RawMessage
	res.Decode(t, &raw)
	if res.Status != 200 || raw["liveOps"] != nil || string(raw["maps"]) != "[]" {
		t.Fatalf("console without live-ops: %d %s", res.Status, res.Body)
	}
}

func TestTestingToolsRoute(t *testing.T) {
	dev := apitest.New(t)
	// Seed the development world as `serve` does on an empty database.
	if err := dev.App.SeedEmptySQLite(t.Context()); err != nil {
		t.Fatal(err)
	}
	res := dev.Client(t).Do("GET", "/api/testing/legacy-tools", nil)
	var md qa.TestingMetadata
	res.Decode(t, &md)
	if res.Status != 200 || !md.Enabled || md.Environment != "development" || len(md.MapSeeds["short"]) == 0 || len(md.MapSeeds["long"]) == 0 ||
		len(md.FixturePlayers) == 0 || len(md.DeckCodeVectors) == 0 {
		t.Fatalf("development: %d %s", res.Status, res.Body)
	}
	// The fixture players are real accounts: each one with an id signs in.
	signedIn := 0
	for _, p := range md.FixturePlayers {
		if p.ID == "" {
			continue
		}
		u, err := dev.App.Accounts.ByEmail(t.Context(), "player", p.Email)
		if err != nil || u.ID.String() != p.ID {
			t.Fatalf("fixture player %s: %v %v", p.Email, u, err)
		}
		if _, err := dev.App.Auth.SignIn(t.Context(), "player", p.Email, p.Password, false, auth.Client{}); err != nil {
			t.Fatalf("fixture player %s cannot sign in with the published password: %v", p.Email, err)
		}
		signedIn++
	}
	if signedIn == 0 && dev.App.DB.Dialect() == "sqlite" {
		t.Fatal("no fixture player is seeded in the SQLite database seeded like serve does")
	}

	unknown := dev.Client(t).Do("GET", "/api/no-such-route", nil)
	hidden := []struct {
		name string
		env  []apitest.Option
	}{
		{"production", []apitest.Option{apitest.WithEnv("PLATFORM_ENV", "production"), apitest.WithEnv("PLATFORM_SMTP_URL", "smtp://127.0.0.1:2525")}},
		{"switched off in development", []apitest.Option{apitest.WithEnv("PLATFORM_TESTING_TOOLS", "false")}},
	}
	for _, h := range hidden {
		t.Run(h.name, func(t *testing.T) {
			srv := apitest.New(t, h.env...)
			admin := srv.CreateAdminWithRole(t, "admin").Client
			res := admin.Do("GET", "/api/testing/legacy-tools", nil)
			if res.Status != 404 || res.Code() != "NOT_FOUND" {
				t.Fatalf("status %d: %s", res.Status, res.Body)
			}
			if string(res.Body) != string(unknown.Body) {
				t.Fatalf("hidden route answers %s, an unknown route %s: the difference reveals it", res.Body, unknown.Body)
			}
		})
	}

	t.Run("switched on in production", func(t *testing.T) {
		srv := apitest.New(t, apitest.WithEnv("PLATFORM_ENV", "production"), apitest.WithEnv("PLATFORM_SMTP_URL", "smtp://127.0.0.1:2525"),
			apitest.WithEnv("PLATFORM_TESTING_TOOLS", "true"))
		res := srv.Client(t).Do("GET", "/api/testing/legacy-tools", nil)
		if res.Status != 200 || !strings.Contains(string(res.Body), `"environment":"production"`) {
			t.Fatalf("status %d: %s", res.Status, res.Body)
		}
	})
}

// TestQueuesFollowLiveOpsSeeds changes a seed through a second live-ops
// service over the same database (another process) and expects the
// running server's queues route to serve the new map, with a new ETag.
// The server checks for new versions on every request here
// (PLATFORM_LIVEOPS_REFRESH=0); the default refresh window is tested
// with an injected clock in the liveops package.
func TestQueuesFollowLiveOpsSeeds(t *testing.T) {
	srv, _ := liveOpsServer(t, apitest.WithEnv("PLATFORM_LIVEOPS_REFRESH", "0s"))
	c := srv.Client(t)
	seeds := func() (short, long uint64, etag string) {
		res := c.Do("GET", "/api/matchmaking/queues", nil)
		var q struct {
			Maps struct {
				Short, Long struct {
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
		return q.Maps.Short.Layout.Seed, q.Maps.Long.Layout.Seed, res.Header.Get("ETag")
	}
	short, long, etag := seeds()
	if short != 101 || long != 202 {
		t.Fatalf("queues play %d/%d, want the published 101/202", short, long)
	}
	other := liveops.New(srv.App.DB.LiveOps(), liveops.Options{}, time.Now)
	if _, err := other.SetSeed(t.Context(), "os:elsewhere", "short", 55, "from another process"); err != nil {
		t.Fatal(err)
	}
	short2, long2, etag2 := seeds()
	if short2 != 55 || long2 != 202 || etag2 == etag {
		t.Fatalf("after the change the queues play %d/%d with etag %s (was %s)", short2, long2, etag2, etag)
	}
}
