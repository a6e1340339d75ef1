package apitest_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/apitest"
)

// The helpers other areas' tests rely on: the jar of a signed-up player or a
// created administrator holds a session of exactly that realm.
func TestAccountHelpers(t *testing.T) {
	srv := apitest.New(t)
	ctx := t.Context()
	u, _ := url.Parse(srv.URL)
	check := func(name string, a *apitest.Account, realm, other account.Realm) {
		req, _ := http.NewRequest("GET", srv.URL, nil)
		for _, c := range a.Client.HTTP.Jar.Cookies(u) {
			req.AddCookie(c)
		}
		p, err := srv.App.Auth.SessionFromRequest(ctx, realm, req)
		if err != nil || p.User.ID != a.User.ID {
			t.Fatalf("%s: jar session in %s realm: %v", name, realm, err)
		}
		if _, err := srv.App.Auth.SessionFromRequest(ctx, other, req); err == nil {
			t.Fatalf("%s: jar session opened the %s realm", name, other)
		}
		if _, err := srv.App.Accounts.Authenticate(ctx, realm, a.User.Email, a.Password); err != nil {
			t.Fatalf("%s: password does not sign in: %v", name, err)
		}
	}
	p1, p2 := srv.SignUpPlayer(t), srv.SignUpPlayer(t)
	if p1.User.Nickname == p2.User.Nickname || p1.User.Email == p2.User.Email {
		t.Fatal("two helper players share an email or nickname")
	}
	check("player", p1, account.RealmPlayer, account.RealmAdmin)
	check("admin", srv.CreateAdmin(t), account.RealmAdmin, account.RealmPlayer)
}
