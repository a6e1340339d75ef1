package httpapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/apitest"
	"github.com/towerdefence/platformctl/internal/mailtest"
)

func mailServer(t *testing.T) (*apitest.Server, *mailtest.Server) {
	t.Helper()
	smtp := mailtest.Start(t, mailtest.Options{})
	srv := apitest.New(t, apitest.WithEnv("PLATFORM_SMTP_URL", smtp.URL()), apitest.WithEnv("PLATFORM_MAIL_POLL_INTERVAL", "50ms"))
	return srv, smtp
}

// linkPath returns the path and query of the mailed link, which points at
// the test server.
func linkPath(t *testing.T, srv *apitest.Server, m mailtest.Message) string {
	t.Helper()
	link := m.Link()
	if !strings.HasPrefix(link, srv.URL+"/api/auth/") {
		t.Fatalf("mailed link %q does not point at the authentication handler", link)
	}
	return strings.TrimPrefix(link, srv.URL)
}

// assertNotLogged fails if the server's log holds any of the secrets.
func assertNotLogged(t *testing.T, srv *apitest.Server, secrets ...string) {
	t.Helper()
	logs := srv.Logs()
	for _, s := range secrets {
		if s == "" {
			t.Fatal("no secret to look for")
		}
		if strings.Contains(logs, s) {
			t.Errorf("the server log holds a secret %.8s…", s)
		}
	}
}

func subject(s string) func(mailtest.Message) bool {
	return func(m mailtest.Message) bool { return strings.Contains(m.Subject, s) }
}

func TestEmailVerification(t *testing.T) {
	t.Parallel()
	srv, smtp := mailServer(t)
	p := srv.SignUpPlayer(t)
	c := p.Client

	if r := c.Do("POST", "/api/auth/player/send-verification-email", map[string]any{"email": "someone-else@example.com"}); r.Status != 400 || r.Code() != "EMAIL_MISMATCH" {
		t.Fatalf("verification for another address = %d %s", r.Status, r.Body)
	}
	if r := c.Do("POST", "/api/auth/player/send-verification-email", map[string]any{"email": p.User.Email, "callbackURL": "/verified"}); r.Status != 200 {
		t.Fatalf("send-verification-email = %d %s", r.Status, r.Body)
	}
	m := smtp.WaitFor(t, 10*time.Second, mailtest.To(p.User.Email))
	path := linkPath(t, srv, m)
	if !strings.Contains(path, "/api/auth/player/verify-email?") {
		t.Fatalf("verification link %q", path)
	}

	anon := srv.Client(t) // the link works without a session: the token is the proof
	r := anon.Do("GET", path, nil)
	if r.Status != 302 || r.Header.Get("Location") != "/verified" {
		t.Fatalf("verify-email = %d, Location %q %s", r.Status, r.Header.Get("Location"), r.Body)
	}
	if s := getSession(t, c, "/api/auth/player"); s == nil || !s.User.EmailVerified {
		t.Fatalf("after verification: %+v", s)
	}
	// Single use.
	if r := anon.Do("GET", path, nil); r.Status != 302 || r.Header.Get("Location") != "/verified?error=INVALID_TOKEN" {
		t.Fatalf("second use = %d, Location %q", r.Status, r.Header.Get("Location"))
	}
	if r := anon.Do("GET", "/api/auth/player/verify-email?token=nope", nil); r.Status != 401 || r.Code() != "INVALID_TOKEN" {
		t.Fatalf("unknown token without callback = %d %s", r.Status, r.Body)
	}
	if r := c.Do("POST", "/api/auth/player/send-verification-email", map[string]any{"email": p.User.Email}); r.Status != 400 || r.Code() != "EMAIL_ALREADY_VERIFIED" {
		t.Fatalf("verification when verified = %d %s", r.Status, r.Body)
	}

	// Anonymous requests answer the same for unknown addresses and send nothing.
	before := len(smtp.Messages())
	if r := anon.Do("POST", "/api/auth/player/send-verification-email", map[string]any{"email": "nobody@example.com"}); r.Status != 200 {
		t.Fatalf("anonymous, unknown address = %d %s", r.Status, r.Body)
	}
	// Without a callback, verify-email answers JSON.
	q := srv.SignUpPlayer(t)
	if r := anon.Do("POST", "/api/auth/player/send-verification-email", map[string]any{"email": q.User.Email}); r.Status != 200 {
		t.Fatalf("anonymous, known address = %d %s", r.Status, r.Body)
	}
	m2 := smtp.WaitFor(t, 10*time.Second, mailtest.To(q.User.Email))
	if r := anon.Do("GET", linkPath(t, srv, m2), nil); r.Status != 200 || !strings.Contains(string(r.Body), `"status":true`) {
		t.Fatalf("verify-email without callback = %d %s", r.Status, r.Body)
	}
	for _, msg := range smtp.Messages()[before:] {
		if msg.To[0] == "nobody@example.com" {
			t.Fatal("a verification mail went to an address without an account")
		}
	}
	for _, msg := range []mailtest.Message{m, m2} {
		link, _ := url.Parse(msg.Link())
		assertNotLogged(t, srv, link.Query().Get("token"))
	}
}

func TestPasswordReset(t *testing.T) {
	t.Parallel()
	srv, smtp := mailServer(t)
	p := srv.SignUpPlayer(t)
	anon := srv.Client(t)

	unknown := anon.Do("POST", "/api/auth/player/request-password-reset", map[string]any{"email": "nobody@example.com", "redirectTo": "/reset"})
	known := anon.Do("POST", "/api/auth/player/request-password-reset", map[string]any{"email": strings.ToUpper(p.User.Email), "redirectTo": "/reset"})
	if unknown.Status != 200 || known.Status != 200 || string(unknown.Body) != string(known.Body) {
		t.Fatalf("reset requests: unknown %d %s, known %d %s", unknown.Status, unknown.Body, known.Status, known.Body)
	}
	m := smtp.WaitFor(t, 10*time.Second, subject("Reset"))
	if m.To[0] != p.User.Email {
		t.Fatalf("reset mail went to %v", m.To)
	}
	link := anon.Do("GET", linkPath(t, srv, m), nil)
	loc, _ := url.Parse(link.Header.Get("Location"))
	token := loc.Query().Get("token")
	if link.Status != 302 || loc.Path != "/reset" || token == "" {
		t.Fatalf("reset link = %d, Location %q", link.Status, link.Header.Get("Location"))
	}
	// A player's reset token does not work on the admin mount.
	if r := anon.Do("GET", "/api/auth/admin/reset-password/"+token+"?callbackURL=/x", nil); !strings.Contains(r.Header.Get("Location"), "error=INVALID_TOKEN") {
		t.Fatalf("player token on the admin mount = %d %q", r.Status, r.Header.Get("Location"))
	}
	if r := anon.Do("POST", "/api/auth/admin/reset-password", map[string]any{"token": token, "newPassword": "long enough"}); r.Status != 400 || r.Code() != "INVALID_TOKEN" {
		t.Fatalf("player token on the admin reset = %d %s", r.Status, r.Body)
	}
	// Opening the link again still works: it uses nothing.
	if again := anon.Do("GET", linkPath(t, srv, m), nil); again.Status != 302 || !strings.Contains(again.Header.Get("Location"), "token=") {
		t.Fatalf("reopened link = %d %q", again.Status, again.Header.Get("Location"))
	}
	if r := anon.Do("POST", "/api/auth/player/reset-password", map[string]any{"token": token, "newPassword": "short"}); r.Status != 400 || r.Code() != "PASSWORD_TOO_SHORT" {
		t.Fatalf("short new password = %d %s", r.Status, r.Body)
	}
	// Two concurrent uses of the token: exactly one wins.
	statuses := make([]int, 2)
	var wg sync.WaitGroup
	for i, pw := range []string{"a brand new password", "another new password"} {
		c := srv.Client(t)
		wg.Go(func() {
			statuses[i] = c.Do("POST", "/api/auth/player/reset-password?token="+token, map[string]any{"newPassword": pw}).Status
		})
	}
	wg.Wait()
	if !(statuses[0] == 200 && statuses[1] == 400 || statuses[0] == 400 && statuses[1] == 200) {
		t.Fatalf("concurrent resets answered %v, want one 200 and one 400", statuses)
	}
	// Every session ended; the old password is gone; one of the new ones works.
	if s := getSession(t, p.Client, "/api/auth/player"); s != nil {
		t.Fatal("a session survived the password reset")
	}
	signIn := func(pw string) int {
		return anon.Do("POST", "/api/auth/player/sign-in/email", map[string]any{"email": p.User.Email, "password": pw}).Status
	}
	if signIn(p.Password) != 401 {
		t.Fatal("the old password still works")
	}
	if signIn("a brand new password") != 200 && signIn("another new password") != 200 {
		t.Fatal("neither new password works")
	}
	smtp.WaitFor(t, 10*time.Second, subject("password was changed"))
	if r := anon.Do("GET", linkPath(t, srv, m), nil); !strings.Contains(r.Header.Get("Location"), "error=INVALID_TOKEN") {
		t.Fatalf("used link = %d %q", r.Status, r.Header.Get("Location"))
	}
	// The link carries the token in its path, in any letter case.
	anon.Do("GET", strings.ToUpper("/api/auth/player/reset-password/")+token, nil)
	assertNotLogged(t, srv, token)
	if r := anon.Do("POST", "/api/auth/player/reset-password", map[string]any{"token": "bogus", "newPassword": "long enough"}); r.Status != 400 || r.Code() != "INVALID_TOKEN" {
		t.Fatalf("bogus token = %d %s", r.Status, r.Body)
	}
}

// A request that fails unexpectedly is logged, but a reset link's token is
// a live secret and stays out of that log line too.
func TestFailedResetLinkDoesNotLogItsToken(t *testing.T) {
	t.Parallel()
	srv := apitest.New(t)
	srv.App.DB.Close() // every query now fails with an unexpected error
	const token = "c2VjcmV0LXJlc2V0LXRva2VuLW5ldmVyLWluLWxvZ3M"
	// Sent without the OpenAPI check: the document lists no 500s.
	res, err := http.Get(srv.URL + "/api/auth/player/reset-password/" + token + "?callbackURL=/reset")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 500 {
		t.Fatalf("reset link with the database gone = %d", res.StatusCode)
	}
	if !strings.Contains(srv.Logs(), "request failed") {
		t.Fatal("the failure was not logged")
	}
	assertNotLogged(t, srv, token)
}

// Anyone may sign up with someone else's address and a name of their
// choosing, so mail to an address not yet verified as the account's
// carries no display name, in the subject or the body; once verified, the
// account's mail greets its owner by name.
func TestMailToAnUnverifiedAddressCarriesNoName(t *testing.T) {
	t.Parallel()
	srv, smtp := mailServer(t)
	const lure = "Support team: unlock at evil.example"
	p := srv.SignUpPlayerWith(t, account.NewUser{Email: "victim@example.com", Name: lure, Nickname: "lure", Password: apitest.DefaultPassword})
	anon := srv.Client(t)
	if r := anon.Do("POST", "/api/auth/player/send-verification-email", map[string]any{"email": p.User.Email}); r.Status != 200 {
		t.Fatalf("send-verification-email = %d %s", r.Status, r.Body)
	}
	if r := anon.Do("POST", "/api/auth/player/request-password-reset", map[string]any{"email": p.User.Email}); r.Status != 200 {
		t.Fatalf("request-password-reset = %d %s", r.Status, r.Body)
	}
	verify := smtp.WaitFor(t, 10*time.Second, subject("Verify"))
	reset := smtp.WaitFor(t, 10*time.Second, subject("Reset"))
	for _, m := range []mailtest.Message{verify, reset} {
		if strings.Contains(m.Subject, lure) || strings.Contains(m.Text, lure) || strings.Contains(m.HTML, lure) {
			t.Fatalf("mail %q to an unverified address carries the name:\n%s", m.Subject, m.Text)
		}
	}
	if r := anon.Do("GET", linkPath(t, srv, verify), nil); r.Status != 200 {
		t.Fatalf("verify-email = %d %s", r.Status, r.Body)
	}
	if r := anon.Do("POST", "/api/auth/player/request-password-reset", map[string]any{"email": p.User.Email}); r.Status != 200 {
		t.Fatalf("request-password-reset = %d %s", r.Status, r.Body)
	}
	again := smtp.WaitForNth(t, 10*time.Second, subject("Reset"), 2)
	if strings.Contains(again.Subject, lure) || !strings.Contains(again.Text, "Hello "+lure) {
		t.Fatalf("reset mail to the verified address: subject %q, text:\n%s", again.Subject, again.Text)
	}
}
