package httpapi_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/towerdefence/platformctl/fixtures"
	"github.com/towerdefence/platformctl/internal/admin"
	"github.com/towerdefence/platformctl/internal/apitest"
	"github.com/towerdefence/platformctl/internal/audit"
	"github.com/towerdefence/platformctl/internal/lifecycle"
	"github.com/towerdefence/platformctl/internal/liveops"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/profile"
	"github.com/towerdefence/platformctl/internal/seed"
)

// auditedBy returns the entries of action recorded under the
// administrator's id.
func auditedBy(t *testing.T, srv *apitest.Server, a *apitest.Account, action string) []audit.Entry {
	t.Helper()
	entries, err := srv.App.Audit.List(t.Context(), audit.Filter{Actor: admin.ActorOf(a.User), Action: action})
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

// TestAdminPublishLiveOps publishes a whole configuration over the API as
// a live-ops administrator: the new version is in force at once and
// audited under the administrator's id; the same body again publishes
// nothing; a configuration that breaks rules is refused with every
// problem in details.configProblems (checked against the published
// error schema by the client); support staff are refused naming
// liveops:write.
func TestAdminPublishLiveOps(t *testing.T) {
	srv, before := liveOpsServer(t)
	ops := srv.CreateAdminWithRole(t, "liveops")
	support := srv.CreateAdminWithRole(t, "support")
	cfg := liveOpsConfig(time.Now())
	cfg.MapSeeds.Short = 4242
	in := admin.PublishInput{Config: cfg, Reason: "raise the short seed"}

	res := ops.Client.Do("POST", "/api/admin/liveops", in)
	var head liveops.Head
	res.Decode(t, &head)
	if res.Status != 200 || head.Version != before.Version+1 || head.PublishedBy != admin.ActorOf(ops.User) {
		t.Fatalf("publish: %d %s", res.Status, res.Body)
	}
	if res := ops.Client.Do("GET", "/api/admin/liveops", nil); res.Status != 200 || !strings.Contains(string(res.Body), `"seed":4242`) {
		t.Fatalf("the published seed is not in force: %d %s", res.Status, res.Body)
	}
	if got := auditedBy(t, srv, ops, liveops.ActionPublish); len(got) != 1 || got[0].Reason != in.Reason {
		t.Fatalf("liveops.publish entries %+v", got)
	}
	res = ops.Client.Do("POST", "/api/admin/liveops", in)
	var again liveops.Head
	res.Decode(t, &again)
	if res.Status != 200 || again.Version != head.Version {
		t.Fatalf("the same configuration again: %d %s, want version %d", res.Status, res.Body, head.Version)
	}

	bad := cfg
	bad.Flags = append([]liveops.Flag{}, cfg.Flags...)
	bad.Flags = append(bad.Flags, liveops.Flag{Key: "Not A Key", Type: "colour"})
	res = ops.Client.Do("POST", "/api/admin/liveops", admin.PublishInput{Config: bad})
	var refused struct {
		Code    string
		Details struct {
			ConfigProblems []platform.Problem `json:"configProblems"`
		}
	}
	res.Decode(t, &refused)
	if res.Status != 400 || refused.Code != liveops.CodeInvalidConfig || len(refused.Details.ConfigProblems) < 2 {
		t.Fatalf("an invalid configuration: %d %s, want 400 with every problem", res.Status, res.Body)
	}
	for _, p := range refused.Details.ConfigProblems {
		if !strings.HasPrefix(p.Path, "flags[2]") || p.Message == "" {
			t.Errorf("problem %+v is not about the new flag", p)
		}
	}
	for _, body := range []string{`{"config": "all of it"}`, `{"config": {"mapSeeds": {"short": "x"}}}`, `{"config": {"flags": {}}}`} {
		if res := ops.Client.Do("POST", "/api/admin/liveops", body); res.Status != 400 || res.Code() != "VALIDATION_ERROR" {
			t.Errorf("%s: %d %s, want 400 VALIDATION_ERROR", body, res.Status, res.Body)
		}
	}
	res = support.Client.Do("POST", "/api/admin/liveops", in)
	if res.Status != 403 || !strings.Contains(string(res.Body), `"permission":"liveops:write"`) {
		t.Fatalf("publish as support: %d %s", res.Status, res.Body)
	}
	if got := auditedBy(t, srv, ops, liveops.ActionPublish); len(got) != 1 {
		t.Fatalf("refused publications were audited: %+v", got)
	}
}

// TestLiveOpsConfigSchema checks that the request schema of a publication
// describes the configuration as the service reads it: the fixtures'
// defaults and the test configuration both fit it.
func TestLiveOpsConfigSchema(t *testing.T) {
	doc, err := apitest.Document()
	if err != nil {
		t.Fatal(err)
	}
	schema := doc.Components.Schemas["AdminPublishRequest"].Value
	set, problems := seed.Load(fixtures.FS())
	if len(problems) > 0 {
		t.Fatalf("fixtures: %v", problems)
	}
	for name, cfg := range map[string]liveops.Config{"fixtures": set.LiveOps, "test": liveOpsConfig(time.Now())} {
		raw, err := json.Marshal(admin.PublishInput{Config: cfg, Reason: "x"})
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatal(err)
		}
		if err := schema.VisitJSON(v); err != nil {
			t.Errorf("the %s configuration does not fit AdminPublishRequest: %v", name, err)
		}
	}
	var v any
	if err := json.Unmarshal([]byte(`{"config": {"mapSeeds": {"short": 1, "long": 2}, "colour": "red"}}`), &v); err != nil {
		t.Fatal(err)
	}
	if schema.VisitJSON(v) == nil {
		t.Error("AdminPublishRequest takes a configuration field that does not exist")
	}
}

// TestAdminExportAndDelete has support staff export a player (audited as
// account.export under their id) and be refused the deletion naming
// admins:write; a blank reason is no reason on any change; an
// administrator then deletes the player with a reason:
// the player's cookie stops working at once, the tombstone and the audit
// entry name the administrator, and the player is gone for support.
func TestAdminExportAndDelete(t *testing.T) {
	srv := apitest.New(t)
	support := srv.CreateAdminWithRole(t, "support")
	boss := srv.CreateAdminWithRole(t, "admin")
	player := srv.SignUpPlayer(t)
	path := "/api/admin/users/" + player.User.ID.String()

	res := support.Client.Do("GET", path+"/export", nil)
	var doc lifecycle.Export
	res.Decode(t, &doc)
	if res.Status != 200 || doc.Profile.ID != player.User.ID || doc.Profile.Email != player.User.Email {
		t.Fatalf("export: %d %s", res.Status, res.Body)
	}
	if got := auditedBy(t, srv, support, lifecycle.ActionExport); len(got) != 1 || got[0].Target != player.User.ID.String() {
		t.Fatalf("account.export entries %+v", got)
	}

	res = support.Client.Do("POST", path+"/delete", map[string]string{"reason": "asked by mail"})
	if res.Status != 403 || !strings.Contains(string(res.Body), `"permission":"admins:write"`) {
		t.Fatalf("delete as support: %d %s", res.Status, res.Body)
	}
	for _, body := range []any{map[string]string{}, map[string]string{"reason": "   "}, `{"reason": ["a"]}`} {
		if res := boss.Client.Do("POST", path+"/delete", body); res.Status != 400 {
			t.Fatalf("delete with body %v: %d %s", body, res.Status, res.Body)
		}
	}
	for _, change := range []string{"/suspend", "/unsuspend"} {
		if res := support.Client.Do("POST", path+change, map[string]string{"reason": " \t "}); res.Status != 400 {
			t.Fatalf("%s with a blank reason: %d %s", change, res.Status, res.Body)
		}
	}
	if n := countSessions(t, srv, player.User.ID); n != 1 {
		t.Fatalf("the player has %d sessions after refused changes, want 1", n)
	}

	res = boss.Client.Do("POST", path+"/delete", map[string]string{"reason": " asked by mail, ticket 77 "})
	var ts lifecycle.Tombstone
	res.Decode(t, &ts)
	if res.Status != 200 || ts.ID != player.User.ID || ts.Actor != admin.ActorOf(boss.User) || ts.Reason != "asked by mail, ticket 77" {
		t.Fatalf("delete: %d %s", res.Status, res.Body)
	}
	if res := player.Client.Do("GET", "/api/player/bootstrap", nil); res.Status != 401 {
		t.Fatalf("the deleted player's cookie still works: %d", res.Status)
	}
	if got := auditedBy(t, srv, boss, lifecycle.ActionDelete); len(got) != 1 || got[0].Target != player.User.ID.String() {
		t.Fatalf("account.delete entries %+v", got)
	}
	for _, p := range []string{path, path + "/export"} {
		if res := support.Client.Do("GET", p, nil); res.Status != 404 {
			t.Errorf("GET %s after the deletion: %d %s", p, res.Status, res.Body)
		}
	}
	if res := boss.Client.Do("POST", path+"/delete", map[string]string{"reason": "twice"}); res.Status != 404 {
		t.Errorf("a second deletion: %d %s", res.Status, res.Body)
	}
}

// TestAdminCreateAdmin has an administrator create another over the API:
// the new account signs in on the admin realm with its role, the creation
// is audited under the creator's id, and a taken email, a short password,
// an unknown role and a caller without admins:write are refused.
func TestAdminCreateAdmin(t *testing.T) {
	srv := apitest.New(t)
	boss := srv.CreateAdminWithRole(t, "admin")
	support := srv.CreateAdminWithRole(t, "support")
	in := admin.NewAdminInput{Email: "new-ops@example.com", Name: "New Ops", Role: "liveops", Password: apitest.DefaultPassword}

	res := boss.Client.Do("POST", "/api/admin/admins", in)
	var created struct {
		ID    string
		Email string
		Role  string
	}
	res.Decode(t, &created)
	if res.Status != 200 || created.Email != in.Email || created.Role != "liveops" {
		t.Fatalf("create: %d %s", res.Status, res.Body)
	}
	signIn := srv.Client(t).Do("POST", "/api/auth/admin/sign-in/email", map[string]string{"email": in.Email, "password": in.Password})
	if signIn.Status != 200 {
		t.Fatalf("the new administrator cannot sign in: %d %s", signIn.Status, signIn.Body)
	}
	entries := auditedBy(t, srv, boss, "admin.create")
	if len(entries) != 1 || entries[0].Target != created.ID || entries[0].Details["role"] != "liveops" {
		t.Fatalf("admin.create entries %+v", entries)
	}

	for _, tc := range []struct {
		name   string
		in     admin.NewAdminInput
		status int
		code   string
	}{
		{"taken email", in, 422, "USER_ALREADY_EXISTS_USE_ANOTHER_EMAIL"},
		{"short password", admin.NewAdminInput{Email: "b@example.com", Name: "B", Password: "short"}, 400, ""},
		{"unknown role", admin.NewAdminInput{Email: "c@example.com", Name: "C", Role: "root", Password: apitest.DefaultPassword}, 400, "VALIDATION_ERROR"},
		{"no email", admin.NewAdminInput{Name: "D", Password: apitest.DefaultPassword}, 400, ""},
	} {
		res := boss.Client.Do("POST", "/api/admin/admins", tc.in)
		if res.Status != tc.status || (tc.code != "" && res.Code() != tc.code) {
			t.Errorf("%s: %d %s, want %d %s", tc.name, res.Status, res.Body, tc.status, tc.code)
		}
	}
	res = support.Client.Do("POST", "/api/admin/admins", admin.NewAdminInput{Email: "e@example.com", Name: "E", Password: apitest.DefaultPassword})
	if res.Status != 403 || !strings.Contains(string(res.Body), `"permission":"admins:write"`) {
		t.Fatalf("create as support: %d %s", res.Status, res.Body)
	}
	if got := auditedBy(t, srv, boss, "admin.create"); len(got) != 1 {
		t.Fatalf("refused creations were audited: %+v", got)
	}
}

// TestAdminAccountStatus answers where a player's account stands as it
// changes: active, suspended with the reason and the administrator, and
// deleted (the tombstone, found by id).
func TestAdminAccountStatus(t *testing.T) {
	srv := apitest.New(t)
	support := srv.CreateAdminWithRole(t, "support")
	boss := srv.CreateAdminWithRole(t, "admin")
	player := srv.SignUpPlayer(t)
	path := "/api/admin/users/" + player.User.ID.String()
	status := func(want string) lifecycle.AccountStatus {
		t.Helper()
		var st lifecycle.AccountStatus
		res := support.Client.Do("GET", path+"/status", nil)
		res.Decode(t, &st)
		if res.Status != 200 || st.Status != want {
			t.Fatalf("status: %d %s, want %s", res.Status, res.Body, want)
		}
		return st
	}
	if st := status(lifecycle.StatusActive); st.User.ID != player.User.ID || st.Suspension != nil {
		t.Fatalf("active: %+v", st)
	}
	if res := support.Client.Do("POST", path+"/suspend", map[string]string{"reason": "chargeback"}); res.Status != 200 {
		t.Fatalf("suspend: %d %s", res.Status, res.Body)
	}
	if st := status(lifecycle.StatusSuspended); st.Suspension.Reason != "chargeback" || st.Suspension.Actor != admin.ActorOf(support.User) {
		t.Fatalf("suspended: %+v", st.Suspension)
	}
	if res := boss.Client.Do("POST", path+"/delete", map[string]string{"reason": "asked by mail"}); res.Status != 200 {
		t.Fatalf("delete: %d %s", res.Status, res.Body)
	}
	if st := status(lifecycle.StatusDeleted); st.Tombstone.ID != player.User.ID || st.User != nil {
		t.Fatalf("deleted: %+v", st)
	}
	if res := support.Client.Do("GET", "/api/admin/users/not-an-id/status", nil); res.Status != 400 {
		t.Fatalf("status of a malformed id: %d %s", res.Status, res.Body)
	}
}

// TestAdminInspectToken looks at a token support issued without using
// it: the answer names the change, the inspection is audited under the
// administrator with a prefix of the token's hash (never the token), a
// malformed token is a 400 and an unknown one a 404.
func TestAdminInspectToken(t *testing.T) {
	srv := apitest.New(t)
	support := srv.CreateAdminWithRole(t, "support")
	player := srv.SignUpPlayer(t)
	res := support.Client.Do("POST", "/api/admin/users/"+player.User.ID.String()+"/tokens",
		map[string]string{"type": "profile", "name": "Renamed", "callbackURL": srv.URL + "/confirm"})
	var issued profile.Issued
	res.Decode(t, &issued)
	if res.Status != 200 || issued.Token == "" {
		t.Fatalf("issue: %d %s", res.Status, res.Body)
	}
	res = support.Client.Do("POST", "/api/admin/tokens/inspect", map[string]string{"token": issued.Token})
	var info profile.TokenInfo
	res.Decode(t, &info)
	if res.Status != 200 || info.Status != profile.TokenPending || info.UserID != player.User.ID || info.ChangeID != issued.ChangeID {
		t.Fatalf("inspect: %d %s", res.Status, res.Body)
	}
	entries := auditedBy(t, srv, support, "token.inspect")
	if len(entries) != 1 || entries[0].Target != player.User.ID.String() {
		t.Fatalf("token.inspect entries %+v", entries)
	}
	if raw, err := json.Marshal(entries[0]); err != nil || strings.Contains(string(raw), issued.Token) {
		t.Fatalf("the audit entry holds the token (%v): %s", err, raw)
	}
	for body, want := range map[string]int{"not-a-token": 400, strings.Repeat("ab", 32): 404} {
		if res := support.Client.Do("POST", "/api/admin/tokens/inspect", map[string]string{"token": body}); res.Status != want {
			t.Errorf("inspect %q: %d %s, want %d", body, res.Status, res.Body, want)
		}
	}
	if res := support.Client.Do("POST", "/api/admin/tokens/inspect", map[string]string{}); res.Status != 400 {
		t.Errorf("inspect without a token: %d %s", res.Status, res.Body)
	}
}
