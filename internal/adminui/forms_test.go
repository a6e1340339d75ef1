package adminui_test

import (
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/apitest"
	"github.com/towerdefence/platformctl/internal/audit"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/lifecycle"
)

type page struct {
	status int
	header http.Header
	body   string
}

func get(t *testing.T, c *http.Client, u string) page {
	t.Helper()
	return send(t, c, "GET", u, "", nil)
}

func send(t *testing.T, c *http.Client, method, u, origin string, form url.Values) page {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, u, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return page{res.StatusCode, res.Header, string(b)}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// TestConsoleRefusesForgedForms checks what the browser test cannot see:
// every page carries the security headers and stays small, a change
// without the session's CSRF token or from another origin is refused
// and changes nothing, and a role without the permission gets a 403
// naming it.
func TestConsoleRefusesForgedForms(t *testing.T) {
	srv := apitest.New(t)
	support := srv.CreateAdminWithRole(t, "support")
	viewer := srv.CreateAdminWithRole(t, "viewer")
	player := srv.SignUpPlayer(t)
	c := support.Client.HTTP
	detail := srv.URL + "/admin/users/" + player.User.ID.String()

	for _, path := range []string{"/admin", "/admin/users?query=player", "/admin/users/" + player.User.ID.String(), "/admin/mail", "/admin/audit", "/admin/liveops"} {
		p := get(t, c, srv.URL+path)
		want := map[string]int{"/admin": 303, "/admin/liveops": 403}[path] // support may not read live-ops
		if want == 0 {
			want = 200
		}
		if p.status != want {
			t.Errorf("%s: %d", path, p.status)
		}
		csp := p.header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "frame-ancestors 'none'") || strings.Contains(csp, "script-src") || strings.Contains(csp, "unsafe") {
			t.Errorf("%s: CSP %q", path, csp)
		}
		if p.status == 200 && strings.Contains(p.body, `href="/admin/liveops"`) {
			t.Errorf("%s: the navigation offers live-ops to a support role", path)
		}
		if len(p.body) > 100<<10 || strings.Contains(p.body, "<script") {
			t.Errorf("%s: %d bytes, script: %v", path, len(p.body), strings.Contains(p.body, "<script"))
		}
	}

	m := csrfField.FindStringSubmatch(get(t, c, detail).body)
	if m == nil {
		t.Fatal("no CSRF token on the player page")
	}
	revoke := detail + "/revoke"
	cases := []struct {
		name   string
		origin string
		form   url.Values
	}{
		{"no token", srv.URL, url.Values{"reason": {"x"}}},
		{"wrong token", srv.URL, url.Values{"reason": {"x"}, "csrf": {"forged"}}},
		{"another origin", "https://evil.example", url.Values{"reason": {"x"}, "csrf": {m[1]}}},
		{"no origin", "", url.Values{"reason": {"x"}, "csrf": {m[1]}}},
	}
	for _, tc := range cases {
		if p := send(t, c, "POST", revoke, tc.origin, tc.form); p.status != 403 {
			t.Errorf("%s: %d", tc.name, p.status)
		}
	}
	if _, list, err := srv.App.Auth.SupportListSessions(t.Context(), "system:test", account.RealmPlayer, player.User.ID.String()); err != nil || len(list) != 1 {
		t.Fatalf("after refused forms the player has %d sessions (%v), want 1", len(list), err)
	}
	if p := send(t, viewer.Client.HTTP, "GET", detail, "", nil); p.status != 403 || !strings.Contains(p.body, "players:read") {
		t.Errorf("viewer on a player page: %d", p.status)
	}
	anon := srv.Client(t).HTTP
	if p := get(t, anon, detail); p.status != 401 || !strings.Contains(p.body, `name="password"`) {
		t.Errorf("anonymous: %d", p.status)
	}
	if p := send(t, anon, "POST", srv.URL+"/admin/sign-in", srv.URL, url.Values{"email": {support.User.Email}, "password": {support.Password}, "csrf": {"x"}}); p.status != 403 {
		t.Errorf("sign-in without the form's cookie: %d", p.status)
	}
	p := send(t, c, "POST", revoke, srv.URL, url.Values{"reason": {"ok"}, "csrf": {m[1]}})
	if p.status != 303 {
		t.Fatalf("a genuine form: %d", p.status)
	}
	if p := get(t, c, srv.URL+p.header.Get("Location")); !strings.Contains(p.body, "Revoked 1 session(s).") {
		t.Errorf("after the revocation: %d %s", p.status, p.body)
	}
	if p := get(t, c, detail+"?revoked=%3Cb%3E&done=you+are+fired"); strings.Contains(p.body, "fired") || strings.Contains(p.body, "<b>") {
		t.Errorf("a link puts words in the console: %s", p.body)
	}

	// Suspend, lift and reset factors from the player's page: each a
	// genuine form, each refused without the token, each audited.
	for _, step := range []struct{ path, notice string }{
		{"/suspend", "Suspended"}, {"/unsuspend", "The suspension is lifted."}, {"/factors/reset", "Second factors and passkeys removed"},
	} {
		if p := send(t, c, "POST", detail+step.path, srv.URL, url.Values{"reason": {"x"}}); p.status != 403 {
			t.Errorf("%s without a token: %d", step.path, p.status)
		}
		p := send(t, c, "POST", detail+step.path, srv.URL, url.Values{"reason": {"ticket 9"}, "csrf": {m[1]}})
		if p.status != 303 {
			t.Fatalf("%s: %d %s", step.path, p.status, p.body)
		}
		if p := get(t, c, srv.URL+p.header.Get("Location")); !strings.Contains(p.body, step.notice) {
			t.Errorf("after %s: %d %s", step.path, p.status, p.body)
		}
	}
	for _, action := range []string{lifecycle.ActionSuspend, lifecycle.ActionUnsuspend, auth.ActionFactorsReset} {
		entries, err := srv.App.Audit.List(t.Context(), audit.Filter{Action: action})
		if err != nil || len(entries) != 1 || entries[0].Actor != "admin:"+support.User.ID.String() {
			t.Errorf("audit of %s: %+v (%v)", action, entries, err)
		}
	}
}

// An administrator holding a second factor signs in to the console in
// two steps: the password opens no session, it asks for the code; a wrong
// code is refused on the same step, a backup code completes it.
func TestConsoleSignInAsksForTheSecondFactor(t *testing.T) {
	srv := apitest.New(t)
	support := srv.CreateAdminWithRole(t, "support")
	en := srv.EnrolTOTP(t, support)

	c := srv.Client(t).HTTP
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	step := func(p page) string {
		t.Helper()
		m := csrfField.FindStringSubmatch(p.body)
		if m == nil {
			t.Fatalf("no form token: %d %s", p.status, p.body)
		}
		return m[1]
	}
	first := send(t, c, "POST", srv.URL+"/admin/sign-in", srv.URL, url.Values{
		"email": {support.User.Email}, "password": {support.Password}, "csrf": {step(get(t, c, srv.URL+"/admin/users"))}})
	if first.status != 200 || !strings.Contains(first.body, `name="code"`) {
		t.Fatalf("the password step: %d %s", first.status, first.body)
	}
	if p := get(t, c, srv.URL+"/api/admin/me"); p.status != 401 {
		t.Fatalf("a session before the second factor: %d", p.status)
	}
	wrong := send(t, c, "POST", srv.URL+"/admin/sign-in/second-factor", srv.URL, url.Values{"code": {"000000"}, "csrf": {step(first)}})
	if wrong.status != 401 || !strings.Contains(wrong.body, `name="code"`) {
		t.Fatalf("a wrong code: %d %s", wrong.status, wrong.body)
	}
	done := send(t, c, "POST", srv.URL+"/admin/sign-in/second-factor", srv.URL, url.Values{
		"code": {en.BackupCodes[0]}, "backup": {"1"}, "csrf": {step(wrong)}})
	if done.status != 303 || done.header.Get("Location") != "/admin/users" {
		t.Fatalf("a backup code: %d %s", done.status, done.body)
	}
	if p := get(t, c, srv.URL+"/admin/users"); p.status != 200 {
		t.Fatalf("after the second factor: %d", p.status)
	}
}
