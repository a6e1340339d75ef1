package httpapi_test

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"golang.org/x/oauth2"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/apitest"
	"github.com/towerdefence/platformctl/internal/oidctest"
	"github.com/towerdefence/platformctl/internal/storetest"
)

const socialMount = "/api/auth/player"

// The provider's users: verified and unverified emails.
var opUsers = []oidctest.User{
	{ID: "u-alice", Username: "alice", FirstName: "Alice", LastName: "A", Email: "alice@example.com", EmailVerified: true},
	{ID: "u-carol", Username: "carol", FirstName: "Carol", LastName: "C", Email: "carol@example.com", EmailVerified: true},
	{ID: "u-dave", Username: "dave", FirstName: "Dave", LastName: "D", Email: "dave@example.com", EmailVerified: true},
	{ID: "u-erin", Username: "erin", FirstName: "Erin", LastName: "E", Email: "erin@example.com", EmailVerified: true},
	{ID: "u-frank", Username: "frank", FirstName: "Frank", LastName: "F", Email: "frank@example.com", EmailVerified: true},
	{ID: "u-gina", Username: "gina", FirstName: "Gina", LastName: "G", Email: "gina@example.com", EmailVerified: false},
	{ID: "u-hank", Username: "hank", FirstName: "Hank", LastName: "H", Email: "hank@example.com", EmailVerified: true},
}

type socialEnv struct {
	srv *apitest.Server
	op  *oidctest.Provider
	web oidctest.Client
}

// newSocialServer starts a real OpenID Provider and a server that signs
// players in with it as provider "op".
func newSocialServer(t *testing.T, opts ...apitest.Option) *socialEnv {
	t.Helper()
	return newSocialServerTB(t, opts...)
}

func newSocialServerTB(t testing.TB, opts ...apitest.Option) *socialEnv {
	t.Helper()
	op := oidctest.Start(t, opUsers)
	web := oidctest.Client{ID: "web", Secret: "web-secret"}
	file := op.ProvidersFile(t, "op", web, "OP_CLIENT_SECRET")
	opts = append([]apitest.Option{
		apitest.WithEnv("PLATFORM_AUTH_PROVIDERS_FILE", file),
		apitest.WithEnv("OP_CLIENT_SECRET", web.Secret),
		apitest.WithEnv("PLATFORM_AUTH_PROVIDER_TIMEOUT", "2s"),
	}, opts...)
	srv := newPlayerServer(t, opts...)
	web.RedirectURI = srv.URL + socialMount + "/callback/op"
	op.Register(web)
	op.Register(oidctest.Client{ID: "other", Secret: "other-secret", RedirectURI: "http://127.0.0.1:1/cb"})
	return &socialEnv{srv: srv, op: op, web: web}
}

// start posts /sign-in/social and returns the authorization URL.
func (e *socialEnv) start(t *testing.T, c *apitest.Client, path string, body map[string]any) string {
	t.Helper()
	if body["provider"] == nil {
		body["provider"] = "op"
	}
	res := c.Do("POST", socialMount+path, body)
	expect(t, res, http.StatusOK, "")
	var out struct {
		URL      string `json:"url"`
		Redirect bool   `json:"redirect"`
	}
	res.Decode(t, &out)
	if !out.Redirect || out.URL == "" || res.Header.Get("Location") != out.URL {
		t.Fatalf("sign-in/social: %+v, Location %q", out, res.Header.Get("Location"))
	}
	u, err := url.Parse(out.URL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("nonce") == "" || len(q.Get("state")) != 32 {
		t.Fatalf("authorization URL lacks PKCE, nonce or state: %s", out.URL)
	}
	return out.URL
}

// callback sends the browser's GET of the provider's redirect and returns
// the Location it is sent on to.
func (e *socialEnv) callback(t *testing.T, c *apitest.Client, target string) *url.URL {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	res := c.Send(req)
	if res.Status != http.StatusFound {
		t.Fatalf("callback %s: %d %s", target, res.Status, res.Body)
	}
	loc, err := url.Parse(res.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// signIn runs a whole sign-in as the provider's user and returns where
// the callback sent the browser.
func (e *socialEnv) signIn(t *testing.T, c *apitest.Client, user string, body map[string]any) *url.URL {
	t.Helper()
	return e.callback(t, c, e.op.Login(t, e.start(t, c, "/sign-in/social", body), user))
}

func wantCallbackError(t *testing.T, loc *url.URL, code string) {
	t.Helper()
	if got := loc.Query().Get("error"); got != code {
		t.Fatalf("callback went to %s, want error=%s", loc, code)
	}
}

func sessionUser(t *testing.T, c *apitest.Client) *account.User {
	t.Helper()
	res := c.Do("GET", socialMount+"/get-session", nil)
	expect(t, res, http.StatusOK, "")
	var s struct{ User *account.User }
	res.Decode(t, &s)
	return s.User
}

type linkedAccount struct {
	ID, ProviderID, AccountID string
}

func listAccounts(t *testing.T, c *apitest.Client) []linkedAccount {
	t.Helper()
	res := c.Do("GET", socialMount+"/list-accounts", nil)
	expect(t, res, http.StatusOK, "")
	var out []linkedAccount
	res.Decode(t, &out)
	return out
}

func TestSocialSignInThroughARealProvider(t *testing.T) {
	e := newSocialServer(t)
	c := e.srv.Client(t)
	loc := e.signIn(t, c, "alice", map[string]any{"callbackURL": "/play", "newUserCallbackURL": "/welcome"})
	if loc.Path != "/welcome" {
		t.Fatalf("a new account went to %s, want /welcome", loc)
	}
	u := sessionUser(t, c)
	if u == nil || u.Email != "alice@example.com" || !u.EmailVerified || u.Name != "Alice A" || u.IsAnonymous {
		t.Fatalf("signed-in user %+v", u)
	}
	accounts := listAccounts(t, c)
	if len(accounts) != 1 || accounts[0].ProviderID != "op" || accounts[0].AccountID != "u-alice" {
		t.Fatalf("list-accounts %+v", accounts)
	}

	// The second time the same identity is the same account, sent to callbackURL.
	c2 := e.srv.Client(t)
	if loc := e.signIn(t, c2, "alice", map[string]any{"callbackURL": "/play", "newUserCallbackURL": "/welcome"}); loc.Path != "/play" {
		t.Fatalf("a returning account went to %s, want /play", loc)
	}
	if u2 := sessionUser(t, c2); u2.ID != u.ID {
		t.Fatalf("second sign-in is user %s, want %s", u2.ID, u.ID)
	}

	// Its only way in cannot be unlinked.
	res := c.Do("POST", socialMount+"/unlink-account", map[string]any{"accountId": accounts[0].ID})
	expect(t, res, http.StatusBadRequest, "FAILED_TO_UNLINK_LAST_ACCOUNT")
	// Nor can a password it does not have be used.
	res = e.srv.Client(t).Do("POST", socialMount+"/sign-in/email", map[string]any{"email": "alice@example.com", "password": "whatever-password"})
	expect(t, res, http.StatusUnauthorized, "INVALID_EMAIL_OR_PASSWORD")
}

// stateCookie returns the state cookie the client holds.
func stateCookie(t *testing.T, srv *apitest.Server, c *apitest.Client) *http.Cookie {
	t.Helper()
	u, err := url.Parse(srv.URL + socialMount + "/callback/op")
	if err != nil {
		t.Fatal(err)
	}
	for _, ck := range c.HTTP.Jar.Cookies(u) {
		if ck.Name == "better-auth.state" {
			return ck
		}
	}
	t.Fatalf("no state cookie in %v", c.HTTP.Jar.Cookies(u))
	return nil
}

func TestSocialCallbackRefusals(t *testing.T) {
	e := newSocialServer(t)
	base, err := url.Parse(e.srv.URL)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("replayed state and replayed code", func(t *testing.T) {
		c := e.srv.Client(t)
		redirect := e.op.Login(t, e.start(t, c, "/sign-in/social", map[string]any{}), "hank")
		cookie := stateCookie(t, e.srv, c)
		if loc := e.callback(t, c, redirect); loc.Query().Get("error") != "" {
			t.Fatalf("first callback failed: %s", loc)
		}
		// The same state again, even with its cookie: the row is gone.
		c.HTTP.Jar.SetCookies(base, []*http.Cookie{{Name: cookie.Name, Value: cookie.Value, Path: "/"}})
		wantCallbackError(t, e.callback(t, c, redirect), "state_not_found")

		// The same code under a fresh state: the provider refuses it.
		fresh, err := url.Parse(e.start(t, c, "/sign-in/social", map[string]any{}))
		if err != nil {
			t.Fatal(err)
		}
		old, err := url.Parse(redirect)
		if err != nil {
			t.Fatal(err)
		}
		q := old.Query()
		q.Set("state", fresh.Query().Get("state"))
		old.RawQuery = q.Encode()
		wantCallbackError(t, e.callback(t, c, old.String()), "invalid_code")
	})

	t.Run("tampered state", func(t *testing.T) {
		c := e.srv.Client(t)
		redirect, err := url.Parse(e.op.Login(t, e.start(t, c, "/sign-in/social", map[string]any{}), "hank"))
		if err != nil {
			t.Fatal(err)
		}
		q := redirect.Query()
		st := q.Get("state")
		q.Set("state", "X"+st[1:])
		redirect.RawQuery = q.Encode()
		wantCallbackError(t, e.callback(t, c, redirect.String()), "state_mismatch")
	})

	t.Run("state from another browser", func(t *testing.T) {
		c := e.srv.Client(t)
		redirect := e.op.Login(t, e.start(t, c, "/sign-in/social", map[string]any{}), "hank")
		wantCallbackError(t, e.callback(t, e.srv.Client(t), redirect), "state_mismatch")
	})

	t.Run("expired state", func(t *testing.T) {
		c := e.srv.Client(t)
		redirect := e.op.Login(t, e.start(t, c, "/sign-in/social", map[string]any{"errorCallbackURL": "/oops"}), "hank")
		// The test moves the expiry instead of the clock.
		storetest.ExpireOAuthStates(t, e.srv.App.DB)
		loc := e.callback(t, c, redirect)
		wantCallbackError(t, loc, "state_not_found")
		if sessionUser(t, c) != nil {
			t.Fatal("a refused callback opened a session")
		}
	})

	t.Run("wrong issuer in the response", func(t *testing.T) {
		c := e.srv.Client(t)
		redirect := e.op.Login(t, e.start(t, c, "/sign-in/social", map[string]any{"errorCallbackURL": "/oops"}), "hank")
		loc := e.callback(t, c, redirect+"&iss="+url.QueryEscape("http://evil.example/"))
		wantCallbackError(t, loc, "issuer_mismatch")
		if loc.Path != "/oops" {
			t.Fatalf("error went to %s, want the errorCallbackURL /oops", loc)
		}
	})

	t.Run("no code", func(t *testing.T) {
		c := e.srv.Client(t)
		redirect, err := url.Parse(e.op.Login(t, e.start(t, c, "/sign-in/social", map[string]any{}), "hank"))
		if err != nil {
			t.Fatal(err)
		}
		q := redirect.Query()
		q.Del("code")
		q.Set("error", "access_denied")
		redirect.RawQuery = q.Encode()
		loc := e.callback(t, c, redirect.String())
		wantCallbackError(t, loc, "access_denied")
		if loc.Path != socialMount+"/error" {
			t.Fatalf("default error page is %s", loc.Path)
		}
	})

	t.Run("unknown provider", func(t *testing.T) {
		c := e.srv.Client(t)
		res := c.Do("POST", socialMount+"/sign-in/social", map[string]any{"provider": "nope"})
		expect(t, res, http.StatusNotFound, "PROVIDER_NOT_FOUND")
		wantCallbackError(t, e.callback(t, c, e.srv.URL+socialMount+"/callback/nope?code=x&state=y"), "oauth_provider_not_found")
	})

	t.Run("callback URL on another origin", func(t *testing.T) {
		c := e.srv.Client(t)
		for field, code := range map[string]string{
			"callbackURL": "INVALID_CALLBACK_URL", "errorCallbackURL": "INVALID_ERROR_CALLBACK_URL",
			"newUserCallbackURL": "INVALID_NEW_USER_CALLBACK_URL",
		} {
			res := c.Do("POST", socialMount+"/sign-in/social", map[string]any{"provider": "op", field: "https://evil.example/x"})
			expect(t, res, http.StatusForbidden, code)
		}
	})
}

// A plain OAuth2 provider (explicit endpoints, a userinfo mapping, no ID
// token) signs in the same way; the same provider serves as one here.
func TestSocialSignInThroughAnOAuth2Provider(t *testing.T) {
	op := oidctest.Start(t, opUsers)
	text := "providers:\n  - id: plain\n    kind: oauth2\n    clientId: plain\n    clientSecretFile: " + writeSecret(t, "plain-secret") +
		"\n    authUrl: " + op.Issuer + "auth\n    tokenUrl: " + op.Issuer + "oauth/token\n    userInfoUrl: " + op.Issuer + "userinfo" +
		"\n    scopes: [openid, email, profile]\n    claims: {subject: sub, email: email, emailVerified: email_verified, name: name}\n"
	file := filepath.Join(t.TempDir(), "providers.yaml")
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := newPlayerServer(t, apitest.WithEnv("PLATFORM_AUTH_PROVIDERS_FILE", file))
	op.Register(oidctest.Client{ID: "plain", Secret: "plain-secret", RedirectURI: srv.URL + socialMount + "/callback/plain"})
	e := &socialEnv{srv: srv, op: op}
	c := srv.Client(t)
	res := c.Do("POST", socialMount+"/sign-in/social", map[string]any{"provider": "plain"})
	expect(t, res, http.StatusOK, "")
	var out struct{ URL string }
	res.Decode(t, &out)
	if strings.Contains(out.URL, "nonce=") || !strings.Contains(out.URL, "code_challenge_method=S256") {
		t.Fatalf("an OAuth2 authorization URL: %s", out.URL)
	}
	loc := e.callback(t, c, op.Login(t, out.URL, "hank"))
	if loc.Query().Get("error") != "" {
		t.Fatalf("callback went to %s", loc)
	}
	if u := sessionUser(t, c); u == nil || u.Email != "hank@example.com" || !u.EmailVerified || u.Name != "Hank H" {
		t.Fatalf("signed in through OAuth2 as %+v", u)
	}
	// An ID token means nothing to a provider that issues none.
	res = c.Do("POST", socialMount+"/sign-in/social", map[string]any{"provider": "plain", "idToken": map[string]any{"token": "x"}})
	expect(t, res, http.StatusNotFound, "ID_TOKEN_NOT_SUPPORTED")
}

func writeSecret(t *testing.T, secret string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(path, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestSocialImplicitLinkNeedsBothEmailsVerified(t *testing.T) {
	e := newSocialServer(t)
	// carol has a local account whose email she never verified: the
	// provider's verified email does not take it over.
	e.srv.SignUpPlayerWith(t, account.NewUser{Email: "carol@example.com", Name: "Carol", Nickname: "carol_local", Password: apitest.DefaultPassword})
	c := e.srv.Client(t)
	wantCallbackError(t, e.signIn(t, c, "carol", map[string]any{}), "account_not_linked")
	if sessionUser(t, c) != nil {
		t.Fatal("account_not_linked opened a session")
	}

	// dave's local email is verified: the same sign-in links his account.
	dave := e.srv.SignUpPlayerWith(t, account.NewUser{Email: "dave@example.com", Name: "Dave", Nickname: "dave_local", Password: apitest.DefaultPassword})
	storetest.MarkEmailVerified(t, e.srv.App.DB, "dave@example.com")
	if loc := e.signIn(t, c, "dave", map[string]any{"callbackURL": "/play"}); loc.Path != "/play" {
		t.Fatalf("implicit link went to %s", loc)
	}
	if u := sessionUser(t, c); u.ID != dave.User.ID {
		t.Fatalf("signed in as %s, want dave %s", u.ID, dave.User.ID)
	}
	accounts := listAccounts(t, dave.Client)
	if len(accounts) != 2 || accounts[0].ProviderID != "credential" || accounts[1].ProviderID != "op" {
		t.Fatalf("dave's accounts %+v", accounts)
	}
	wantMail(t, e.srv, "dave@example.com", "account-linked")

	// With a password left, the provider can be unlinked, and dave is told.
	res := dave.Client.Do("POST", socialMount+"/unlink-account", map[string]any{"accountId": accounts[1].ID})
	expect(t, res, http.StatusOK, "")
	res = dave.Client.Do("POST", socialMount+"/unlink-account", map[string]any{"accountId": accounts[1].ID})
	expect(t, res, http.StatusBadRequest, "ACCOUNT_NOT_FOUND")
	res = dave.Client.Do("POST", socialMount+"/unlink-account", map[string]any{"accountId": accounts[0].ID})
	expect(t, res, http.StatusBadRequest, "FAILED_TO_UNLINK_LAST_ACCOUNT")
	wantMail(t, e.srv, "dave@example.com", "account-unlinked")
}

func TestSocialLinkFromASignedInAccount(t *testing.T) {
	e := newSocialServer(t)
	frank := e.srv.SignUpPlayerWith(t, account.NewUser{Email: "frank@example.com", Name: "Frank", Nickname: "frank_local", Password: apitest.DefaultPassword})
	storetest.MarkEmailVerified(t, e.srv.App.DB, "frank@example.com")
	loc := e.callback(t, frank.Client, e.op.Login(t, e.start(t, frank.Client, "/link-social", map[string]any{"callbackURL": "/linked"}), "frank"))
	if loc.Path != "/linked" {
		t.Fatalf("link went to %s", loc)
	}
	if accounts := listAccounts(t, frank.Client); len(accounts) != 2 {
		t.Fatalf("frank's accounts after the link %+v", accounts)
	}

	// gina's provider account has an unverified email: no link.
	gina := e.srv.SignUpPlayerWith(t, account.NewUser{Email: "gina@example.com", Name: "Gina", Nickname: "gina_local", Password: apitest.DefaultPassword})
	storetest.MarkEmailVerified(t, e.srv.App.DB, "gina@example.com")
	loc = e.callback(t, gina.Client, e.op.Login(t, e.start(t, gina.Client, "/link-social", map[string]any{}), "gina"))
	wantCallbackError(t, loc, "email_not_verified")

	// The same through a native client's ID token: gina's provider email
	// is unverified.
	ginaToken, ginaAccess := e.idToken(t, e.web, "gina", "n")
	res := gina.Client.Do("POST", socialMount+"/link-social", map[string]any{"provider": "op",
		"idToken": map[string]any{"token": ginaToken, "nonce": "n", "accessToken": ginaAccess}})
	expect(t, res, http.StatusForbidden, "LINKING_NOT_ALLOWED")

	// frank's identity cannot be linked to gina as well.
	loc = e.callback(t, gina.Client, e.op.Login(t, e.start(t, gina.Client, "/link-social", map[string]any{}), "frank"))
	wantCallbackError(t, loc, "account_already_linked_to_different_user")
	frankToken, frankAccess := e.idToken(t, e.web, "frank", "n")
	res = gina.Client.Do("POST", socialMount+"/link-social", map[string]any{"provider": "op",
		"idToken": map[string]any{"token": frankToken, "nonce": "n", "accessToken": frankAccess}})
	expect(t, res, http.StatusConflict, "SOCIAL_ACCOUNT_ALREADY_LINKED")
	if accounts := listAccounts(t, gina.Client); len(accounts) != 1 {
		t.Fatalf("gina's accounts %+v", accounts)
	}

	// A verified identity of the same email links at once.
	hank := e.srv.SignUpPlayerWith(t, account.NewUser{Email: "hank@example.com", Name: "Hank", Nickname: "hank_local", Password: apitest.DefaultPassword})
	storetest.MarkEmailVerified(t, e.srv.App.DB, "hank@example.com")
	hankToken, hankAccess := e.idToken(t, e.web, "hank", "n")
	res = hank.Client.Do("POST", socialMount+"/link-social", map[string]any{"provider": "op",
		"idToken": map[string]any{"token": hankToken, "nonce": "n", "accessToken": hankAccess}})
	expect(t, res, http.StatusOK, "")
	if accounts := listAccounts(t, hank.Client); len(accounts) != 2 {
		t.Fatalf("hank's accounts after an ID-token link %+v", accounts)
	}
	wantMail(t, e.srv, "hank@example.com", "account-linked")

	// Adding or removing a way in needs a recent sign-in: a session older
	// than the fresh age is refused before anything is linked.
	ivy := e.srv.SignUpPlayerWith(t, account.NewUser{Email: "ivy@example.com", Name: "Ivy", Nickname: "ivy_local", Password: apitest.DefaultPassword})
	storetest.MarkEmailVerified(t, e.srv.App.DB, "ivy@example.com")
	storetest.AgeSessions(t, e.srv.App.DB, ivy.User.ID, time.Hour)
	res = ivy.Client.Do("POST", socialMount+"/link-social", map[string]any{"provider": "op", "callbackURL": "/linked"})
	expect(t, res, http.StatusForbidden, "SESSION_NOT_FRESH")
	res = ivy.Client.Do("POST", socialMount+"/unlink-account", map[string]any{"accountId": uuid.NewString()})
	expect(t, res, http.StatusForbidden, "SESSION_NOT_FRESH")
}

// Apple answers with a form POST; the callback sends the browser on to
// the GET callback with the same parameters, where the Lax state cookie
// comes along.
func TestSocialFormPostCallbackRedirectsToGet(t *testing.T) {
	e := newSocialServer(t)
	c := e.srv.Client(t)
	redirect, err := url.Parse(e.op.Login(t, e.start(t, c, "/sign-in/social", map[string]any{"callbackURL": "/play"}), "alice"))
	if err != nil {
		t.Fatal(err)
	}
	form := redirect.Query()
	form.Set("user", `{"name":{"firstName":"Alice","lastName":"Apple"}}`)
	req, err := http.NewRequest(http.MethodPost, e.srv.URL+redirect.Path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res := c.Send(req)
	if res.Status != http.StatusFound {
		t.Fatalf("form post: %d %s", res.Status, res.Body)
	}
	next, err := url.Parse(res.Header.Get("Location"))
	if err != nil || next.Path != redirect.Path || next.Query().Get("code") != form.Get("code") || next.Query().Get("user") == "" {
		t.Fatalf("form post redirected to %s", res.Header.Get("Location"))
	}
	if loc := e.callback(t, c, e.srv.URL+next.String()); loc.Path != "/play" {
		t.Fatalf("callback after the form post went to %s", loc)
	}
}

// idToken runs the code flow for client directly and returns the ID token
// the provider issued with nonce, and the access token.
func (e *socialEnv) idToken(t *testing.T, client oidctest.Client, user, nonce string) (string, string) {
	t.Helper()
	cfg := &oauth2.Config{ClientID: client.ID, ClientSecret: client.Secret, RedirectURL: client.RedirectURI, Scopes: []string{"openid", "email"},
		Endpoint: oauth2.Endpoint{AuthURL: e.op.Issuer + "auth", TokenURL: e.op.Issuer + "oauth/token"}}
	verifier := oauth2.GenerateVerifier()
	authURL := cfg.AuthCodeURL("st", oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("nonce", nonce))
	back, err := url.Parse(e.op.Login(t, authURL, user))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	tok, err := cfg.Exchange(ctx, back.Query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		t.Fatal("no id_token")
	}
	return raw, tok.AccessToken
}

func TestSocialIDTokenSignIn(t *testing.T) {
	e := newSocialServer(t)
	c := e.srv.Client(t)
	other, _ := e.idToken(t, oidctest.Client{ID: "other", Secret: "other-secret", RedirectURI: "http://127.0.0.1:1/cb"}, "hank", "n1")
	res := c.Do("POST", socialMount+"/sign-in/social", map[string]any{"provider": "op", "idToken": map[string]any{"token": other, "nonce": "n1"}})
	expect(t, res, http.StatusUnauthorized, "INVALID_TOKEN")

	mine, access := e.idToken(t, e.web, "hank", "n2")
	res = c.Do("POST", socialMount+"/sign-in/social", map[string]any{"provider": "op", "idToken": map[string]any{"token": mine, "nonce": "wrong"}})
	expect(t, res, http.StatusUnauthorized, "INVALID_TOKEN")
	res = c.Do("POST", socialMount+"/sign-in/social", map[string]any{"provider": "op", "idToken": map[string]any{"token": mine[:len(mine)-4] + "AAAA", "nonce": "n2"}})
	expect(t, res, http.StatusUnauthorized, "INVALID_TOKEN")

	// The provider puts the email only in userinfo: without an access
	// token to ask it with, there is no email to make an account for.
	res = c.Do("POST", socialMount+"/sign-in/social", map[string]any{"provider": "op", "idToken": map[string]any{"token": mine, "nonce": "n2"}})
	expect(t, res, http.StatusUnauthorized, "USER_EMAIL_NOT_FOUND")
	res = c.Do("POST", socialMount+"/sign-in/social", map[string]any{"provider": "op", "idToken": map[string]any{"token": mine, "nonce": "n2", "accessToken": access}})
	expect(t, res, http.StatusOK, "")
	if u := sessionUser(t, c); u == nil || u.Email != "hank@example.com" || !u.EmailVerified {
		t.Fatalf("after an ID-token sign-in: %+v", u)
	}
}

func TestSocialProviderDownCreatesNothing(t *testing.T) {
	e := newSocialServer(t)
	c := e.srv.Client(t)
	redirect := e.op.Login(t, e.start(t, c, "/sign-in/social", map[string]any{}), "erin")
	e.op.Close()
	start := time.Now()
	wantCallbackError(t, e.callback(t, c, redirect), "unable_to_get_user_info")
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the callback took %s with the provider down, over the 2s timeout", took)
	}
	if _, err := e.srv.App.Accounts.ByEmail(t.Context(), account.RealmPlayer, "erin@example.com"); err == nil {
		t.Fatal("a failed callback created the account")
	}
	res := c.Do("POST", socialMount+"/sign-in/social", map[string]any{"provider": "op"})
	if res.Status >= 500 {
		t.Fatalf("sign-in/social with the provider down: %d %s", res.Status, res.Body)
	}
}

func TestGuestSignInAndUpgradeKeepsPlayerState(t *testing.T) {
	e := newSocialServer(t)
	c := e.srv.Client(t)
	res := c.Do("POST", socialMount+"/sign-in/anonymous", nil)
	expect(t, res, http.StatusOK, "")
	var out struct {
		Token string
		User  account.User
	}
	res.Decode(t, &out)
	if !out.User.IsAnonymous || !strings.HasPrefix(out.User.Nickname, "guest-") || out.Token == "" {
		t.Fatalf("guest %+v", out.User)
	}
	res = c.Do("POST", socialMount+"/sign-in/anonymous", nil)
	expect(t, res, http.StatusBadRequest, "ANONYMOUS_USERS_CANNOT_SIGN_IN_AGAIN_ANONYMOUSLY")

	code := deckCode(t, legal...)
	res = call(t, c, "POST", "/api/player/decks/import", map[string]any{"code": code, "name": "Guest deck"})
	expect(t, res, http.StatusCreated, "")

	// The guest signs in with a provider for the first time: the same
	// account, no longer a guest, with its deck.
	e.signIn(t, c, "erin", map[string]any{"callbackURL": "/play"})
	u := sessionUser(t, c)
	if u.ID != out.User.ID || u.IsAnonymous || u.Email != "erin@example.com" || u.Nickname != out.User.Nickname {
		t.Fatalf("upgraded guest %+v, was %+v", u, out.User)
	}
	res = call(t, c, "GET", "/api/player/decks", nil)
	expect(t, res, http.StatusOK, "")
	if !strings.Contains(string(res.Body), "Guest deck") {
		t.Fatalf("the guest's deck is gone: %s", res.Body)
	}
}

func TestGuestUpgradeByEmailSignUpKeepsPlayerState(t *testing.T) {
	e := newSocialServer(t)
	c := e.srv.Client(t)
	res := c.Do("POST", socialMount+"/sign-in/anonymous", nil)
	expect(t, res, http.StatusOK, "")
	guest := sessionUser(t, c)
	res = call(t, c, "POST", "/api/player/decks/import", map[string]any{"code": deckCode(t, legal...), "name": "Guest deck"})
	expect(t, res, http.StatusCreated, "")

	res = c.Do("POST", socialMount+"/sign-up/email", map[string]any{
		"email": "ivy@example.com", "name": "Ivy", "nickname": "ivy_player", "password": apitest.DefaultPassword})
	expect(t, res, http.StatusOK, "")
	u := sessionUser(t, c)
	if u.ID != guest.ID || u.IsAnonymous || u.Email != "ivy@example.com" || u.Nickname != "ivy_player" {
		t.Fatalf("upgraded guest %+v, was %+v", u, guest)
	}
	res = call(t, c, "GET", "/api/player/decks", nil)
	if !strings.Contains(string(res.Body), "Guest deck") {
		t.Fatalf("the guest's deck is gone: %s", res.Body)
	}
	// The password now signs in to the same account.
	res = e.srv.Client(t).Do("POST", socialMount+"/sign-in/email", map[string]any{"email": "ivy@example.com", "password": apitest.DefaultPassword})
	expect(t, res, http.StatusOK, "")
	if accounts := listAccounts(t, c); len(accounts) != 1 || accounts[0].ProviderID != "credential" {
		t.Fatalf("accounts after the upgrade %+v", accounts)
	}
}

func TestGuestSignInToAnExistingAccountDiscardsTheGuest(t *testing.T) {
	e := newSocialServer(t)
	c := e.srv.Client(t)
	e.signIn(t, c, "hank", map[string]any{})
	hank := sessionUser(t, c)

	g := e.srv.Client(t)
	res := g.Do("POST", socialMount+"/sign-in/anonymous", nil)
	expect(t, res, http.StatusOK, "")
	guest := sessionUser(t, g)
	e.signIn(t, g, "hank", map[string]any{})
	if u := sessionUser(t, g); u.ID != hank.ID {
		t.Fatalf("signed in as %s, want hank %s", u.ID, hank.ID)
	}
	if _, err := e.srv.App.Accounts.ByID(t.Context(), guest.ID); err == nil {
		t.Fatal("the discarded guest still exists")
	}
}

func TestGuestCreationLimitPerAddress(t *testing.T) {
	e := newSocialServer(t, apitest.WithEnv("PLATFORM_RATE_LIMIT_GUEST_IP", "3/1h"))
	for i := range 4 {
		res := e.srv.Client(t).Do("POST", socialMount+"/sign-in/anonymous", nil)
		if i < 3 {
			expect(t, res, http.StatusOK, "")
		} else {
			expect(t, res, http.StatusTooManyRequests, "RATE_LIMITED")
		}
	}
}

// wantMail checks that the outbox holds a message of template to: the
// notice is enqueued in the transaction of the change, so it is there as
// soon as the change answered.
func wantMail(t *testing.T, srv *apitest.Server, to, template string) {
	t.Helper()
	if n := storetest.CountMail(t, srv.App.DB, to, template); n != 1 {
		t.Fatalf("%d %s mails to %s, want 1", n, template, to)
	}
}

// The second factor gates a provider's way in as it does a password: a
// callback for an account with an authenticator app opens no session; it
// sends the browser on with twoFactorRedirect=true and the signed
// two_factor cookie, and an ID-token sign-in answers twoFactorRedirect.
func TestSocialSignInAsksForTheSecondFactor(t *testing.T) {
	e := newSocialServer(t)
	c := e.srv.Client(t)
	e.signIn(t, c, "carol", map[string]any{"callbackURL": "/play"})
	u := sessionUser(t, c)
	now := time.Now().UTC()
	storetest.Exec(t, e.srv.App.DB, "INSERT INTO two_factors (user_id, secret, verified, created_at, updated_at) VALUES (?, 'sealed-seed', TRUE, ?, ?)",
		u.ID, now, now)

	c2 := e.srv.Client(t)
	loc := e.signIn(t, c2, "carol", map[string]any{"callbackURL": "/play"})
	if loc.Path != "/play" || loc.Query().Get("twoFactorRedirect") != "true" || loc.Query().Get("twoFactorMethods") == "" {
		t.Fatalf("callback of a 2FA account went to %s", loc)
	}
	if u2 := sessionUser(t, c2); u2 != nil {
		t.Fatalf("a session was opened before the second factor: %+v", u2)
	}
	base, err := url.Parse(e.srv.URL + socialMount)
	if err != nil {
		t.Fatal(err)
	}
	var twoFactor bool
	for _, ck := range c2.HTTP.Jar.Cookies(base) {
		twoFactor = twoFactor || strings.HasSuffix(ck.Name, "two_factor")
	}
	if !twoFactor {
		t.Fatalf("no two_factor cookie after the callback: %v", c2.HTTP.Jar.Cookies(base))
	}

	token, access := e.idToken(t, e.web, "carol", "n")
	res := e.srv.Client(t).Do("POST", socialMount+"/sign-in/social", map[string]any{"provider": "op",
		"idToken": map[string]any{"token": token, "nonce": "n", "accessToken": access}})
	expect(t, res, http.StatusOK, "")
	if !strings.Contains(string(res.Body), `"twoFactorRedirect":true`) || strings.Contains(string(res.Body), `"token"`) {
		t.Fatalf("ID-token sign-in of a 2FA account: %s", res.Body)
	}
}

// A guest deletes itself, with its deck, and is gone: its cookie no
// longer works and a tombstone answers for its id. An account that is no
// guest is refused with USER_IS_NOT_ANONYMOUS.
func TestGuestDeletesItself(t *testing.T) {
	e := newSocialServer(t)
	c := e.srv.Client(t)
	res := c.Do("POST", socialMount+"/sign-in/anonymous", nil)
	expect(t, res, http.StatusOK, "")
	var out struct{ User account.User }
	res.Decode(t, &out)
	res = call(t, c, "POST", "/api/player/decks/import", map[string]any{"code": deckCode(t, legal...), "name": "Guest deck"})
	expect(t, res, http.StatusCreated, "")

	res = c.Do("POST", socialMount+"/delete-anonymous-user", map[string]any{})
	expect(t, res, http.StatusOK, "")
	if res := c.Do("GET", "/api/player/bootstrap", nil); res.Status != http.StatusUnauthorized {
		t.Fatalf("the deleted guest's cookie: %d", res.Status)
	}
	if n := storetest.Count(t, e.srv.App.DB, "SELECT count(*) FROM player_decks WHERE user_id = ?", out.User.ID); n != 0 {
		t.Fatalf("the guest's decks survived: %d", n)
	}
	if _, err := e.srv.App.Lifecycle.Tombstone(t.Context(), out.User.ID); err != nil {
		t.Fatalf("no tombstone for the deleted guest: %v", err)
	}

	player := e.srv.SignUpPlayer(t)
	res = player.Client.Do("POST", socialMount+"/delete-anonymous-user", map[string]any{})
	expect(t, res, http.StatusForbidden, "USER_IS_NOT_ANONYMOUS")
}
