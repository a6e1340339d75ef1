package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/apitest"
	"github.com/towerdefence/platformctl/internal/mail"
	"github.com/towerdefence/platformctl/internal/mailtest"
	"github.com/towerdefence/platformctl/internal/storetest"
	"github.com/towerdefence/platformctl/internal/testwait"
)

// profileServer is the whole API with its mail worker delivering to a real
// in-process SMTP server, so tests take tokens from delivered mail.
func profileServer(t *testing.T, opts ...apitest.Option) (*apitest.Server, *mailtest.Server) {
	t.Helper()
	smtp := mailtest.Start(t, mailtest.Options{})
	return profileServerWithSMTP(t, smtp.URL(), opts...), smtp
}

func profileServerWithSMTP(t *testing.T, smtpURL string, opts ...apitest.Option) *apitest.Server {
	t.Helper()
	base := []apitest.Option{
		apitest.WithEnv("PLATFORM_SMTP_URL", smtpURL),
		apitest.WithEnv("PLATFORM_MAIL_POLL_INTERVAL", "50ms"),
		apitest.WithEnv("PLATFORM_MAIL_RETRY_BASE", "50ms"),
		apitest.WithEnv("PLATFORM_PROFILE_RATE_LIMIT", "100"),
	}
	return apitest.New(t, append(base, opts...)...)
}

func callbackOf(srv *apitest.Server) string { return srv.URL + "/account/confirm" }

// waitMail waits for the n-th (1-based) message to addr.
func waitMail(t *testing.T, smtp *mailtest.Server, addr string, n int) mailtest.Message {
	t.Helper()
	return smtp.WaitForNth(t, 15*time.Second, mailtest.To(addr), n)
}

// waitOutbox polls the outbox until done accepts its rows, failing the
// test after a deadline; it returns the accepted rows.
func waitOutbox(t *testing.T, srv *apitest.Server, done func([]mail.Message) bool) []mail.Message {
	t.Helper()
	var msgs []mail.Message
	testwait.Nil(t, 15*time.Second, func() error {
		var err error
		if msgs, err = srv.App.DB.Mail().ListMail(t.Context(), mail.Filter{}); err != nil {
			t.Fatal(err)
		}
		if !done(msgs) {
			return fmt.Errorf("outbox not in the wanted state: %+v", msgs)
		}
		return nil
	})
	return msgs
}

type confirmation struct {
	Status        bool          `json:"status"`
	Type          string        `json:"type"`
	Step          string        `json:"step"`
	RequiresLogin bool          `json:"requiresLogin"`
	User          *account.User `json:"user"`
}

func confirm(t *testing.T, c *apitest.Client, token string) (*apitest.Response, confirmation) {
	t.Helper()
	res := c.Do("POST", "/api/profile/confirm-change", map[string]string{"token": token})
	var body confirmation
	if res.Status == http.StatusOK {
		res.Decode(t, &body)
	}
	return res, body
}

func wantStatus(t *testing.T, res *apitest.Response, status int, code string) {
	t.Helper()
	if res.Status != status || res.Code() != code {
		t.Fatalf("got %d %s, want %d %s", res.Status, res.Body, status, code)
	}
}

func TestProfileChangeOverHTTP(t *testing.T) {
	srv, smtp := profileServer(t)
	acc := srv.SignUpPlayer(t)
	res := acc.Client.Do("POST", "/api/profile/request-profile-change",
		map[string]string{"name": "Ada Lovelace", "nickname": "countess", "callbackURL": callbackOf(srv)})
	if res.Status != 200 || strings.TrimSpace(string(res.Body)) != `{"status":true}` {
		t.Fatalf("request: %d %s", res.Status, res.Body)
	}
	if cc := res.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control %q", cc)
	}
	m := waitMail(t, smtp, acc.User.Email, 1)
	if !strings.HasPrefix(m.Link(), callbackOf(srv)+"?token=") {
		t.Fatalf("link %q", m.Link())
	}
	// Anyone holding the token may confirm: a client without cookies.
	anon := srv.Client(t)
	res, body := confirm(t, anon, m.Token())
	if res.Status != 200 || !body.Status || body.Type != "profile" || body.Step != "completed" || body.RequiresLogin ||
		body.User == nil || body.User.Name != "Ada Lovelace" || body.User.Nickname != "countess" || body.User.ID != acc.User.ID {
		t.Fatalf("confirm: %d %s", res.Status, res.Body)
	}
	var raw map[string]any
	json.Unmarshal(res.Body, &raw)
	for _, k := range []string{"status", "type", "step", "requiresLogin", "user"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("confirmation lacks %q: %s", k, res.Body)
		}
	}
	res, _ = confirm(t, anon, m.Token())
	wantStatus(t, res, 400, "INVALID_TOKEN")
}

func TestEmailChangeOverHTTP(t *testing.T) {
	srv, smtp := profileServer(t)
	acc := srv.SignUpPlayer(t)
	old := acc.User.Email
	res := acc.Client.Do("POST", "/api/profile/request-email-change", map[string]string{"newEmail": "moved@example.com", "callbackURL": callbackOf(srv)})
	wantStatus(t, res, 200, "")
	first := waitMail(t, smtp, old, 1)
	if !strings.Contains(first.Text, "This wasn't you?") || !strings.Contains(first.Text, "moved@example.com") {
		t.Fatalf("mail to the old address:\n%s", first.Text)
	}
	res, body := confirm(t, srv.Client(t), first.Token())
	if res.Status != 200 || body.Step != "new-email-verification-sent" || body.Type != "email" || body.User == nil || body.User.Email != old {
		t.Fatalf("first confirmation: %d %s", res.Status, res.Body)
	}
	second := waitMail(t, smtp, "moved@example.com", 1)
	res, body = confirm(t, srv.Client(t), second.Token())
	if res.Status != 200 || body.Step != "completed" || body.User == nil || body.User.Email != "moved@example.com" || !body.User.EmailVerified {
		t.Fatalf("second confirmation: %d %s", res.Status, res.Body)
	}
	waitMail(t, smtp, old, 2) // the "your email was changed" notice
	// Sign-in works with the new address only.
	wantStatus(t, signIn(t, srv, "moved@example.com", apitest.DefaultPassword), 200, "")
	wantStatus(t, signIn(t, srv, old, apitest.DefaultPassword), 401, "INVALID_EMAIL_OR_PASSWORD")
}

// A reset link mailed to the old address stops working once the email
// change completes: the old inbox no longer controls the account.
func TestEmailChangeEndsResetLinksToTheOldAddress(t *testing.T) {
	srv, smtp := profileServer(t)
	acc := srv.SignUpPlayer(t)
	old := acc.User.Email
	anon := srv.Client(t)
	wantStatus(t, anon.Do("POST", "/api/auth/player/request-password-reset", map[string]any{"email": old, "redirectTo": "/reset"}), 200, "")
	resetLink := linkPath(t, srv, waitMail(t, smtp, old, 1))
	loc, _ := url.Parse(anon.Do("GET", resetLink, nil).Header.Get("Location"))
	token := loc.Query().Get("token")
	if token == "" {
		t.Fatalf("reset link redirected to %q", loc)
	}

	res := acc.Client.Do("POST", "/api/profile/request-email-change", map[string]string{"newEmail": "elsewhere@example.com", "callbackURL": callbackOf(srv)})
	wantStatus(t, res, 200, "")
	res, _ = confirm(t, anon, waitMail(t, smtp, old, 2).Token())
	wantStatus(t, res, 200, "")
	res, _ = confirm(t, anon, waitMail(t, smtp, "elsewhere@example.com", 1).Token())
	wantStatus(t, res, 200, "")

	if r := anon.Do("GET", resetLink, nil); r.Status != 302 || !strings.Contains(r.Header.Get("Location"), "error=INVALID_TOKEN") {
		t.Fatalf("old reset link after the email change = %d %q", r.Status, r.Header.Get("Location"))
	}
	wantStatus(t, anon.Do("POST", "/api/auth/player/reset-password", map[string]any{"token": token, "newPassword": "the old inbox wins"}), 400, "INVALID_TOKEN")
	wantStatus(t, signIn(t, srv, "elsewhere@example.com", apitest.DefaultPassword), 200, "")
}

// signIn signs in over HTTP with a fresh client.
func signIn(t *testing.T, srv *apitest.Server, email, password string) *apitest.Response {
	t.Helper()
	return srv.Client(t).Do("POST", "/api/auth/player/sign-in/email", map[string]string{"email": email, "password": password})
}

func TestPasswordChangeOverHTTP(t *testing.T) {
	srv, smtp := profileServer(t)
	acc := srv.SignUpPlayer(t)
	res := acc.Client.Do("POST", "/api/profile/request-password-change",
		map[string]string{"currentPassword": "not my password", "newPassword": "a brand new secret", "callbackURL": callbackOf(srv)})
	wantStatus(t, res, 400, "INVALID_PASSWORD")
	res = acc.Client.Do("POST", "/api/profile/request-password-change",
		map[string]string{"currentPassword": apitest.DefaultPassword, "newPassword": "short", "callbackURL": callbackOf(srv)})
	wantStatus(t, res, 400, "VALIDATION_ERROR")
	if !strings.Contains(string(res.Body), "newPassword") {
		t.Fatalf("error does not name newPassword: %s", res.Body)
	}
	res = acc.Client.Do("POST", "/api/profile/request-password-change",
		map[string]string{"currentPassword": apitest.DefaultPassword, "newPassword": "a brand new secret", "callbackURL": callbackOf(srv)})
	wantStatus(t, res, 200, "")
	m := waitMail(t, smtp, acc.User.Email, 1)

	// Still signed in until the change is confirmed.
	res = acc.Client.Do("POST", "/api/profile/request-profile-change", map[string]string{"name": "N", "nickname": "still_in", "callbackURL": callbackOf(srv)})
	wantStatus(t, res, 200, "")

	res, body := confirm(t, srv.Client(t), m.Token())
	if res.Status != 200 || strings.TrimSpace(string(res.Body)) != `{"status":true,"type":"password","step":"completed","requiresLogin":true,"user":null}` {
		t.Fatalf("confirm: %d %s", res.Status, res.Body)
	}
	_ = body
	// The old cookie is refused on the very next request.
	res = acc.Client.Do("POST", "/api/profile/request-profile-change", map[string]string{"name": "N", "nickname": "nope", "callbackURL": callbackOf(srv)})
	wantStatus(t, res, 401, "UNAUTHORIZED")
	if res := acc.Client.Do("GET", "/api/auth/player/get-session", nil); res.Status != 200 || strings.TrimSpace(string(res.Body)) != "null" {
		t.Fatalf("get-session with the old cookie: %d %s", res.Status, res.Body)
	}
	wantStatus(t, signIn(t, srv, acc.User.Email, apitest.DefaultPassword), 401, "INVALID_EMAIL_OR_PASSWORD")
	wantStatus(t, signIn(t, srv, acc.User.Email, "a brand new secret"), 200, "")
}

func TestProfileRequestsRefuseBadInput(t *testing.T) {
	srv, smtp := profileServer(t)
	acc := srv.SignUpPlayer(t)
	other := srv.SignUpPlayer(t)
	cb := callbackOf(srv)
	anon := srv.Client(t)
	routes := []string{"request-profile-change", "request-email-change", "request-password-change"}
	for _, route := range routes {
		res := anon.Do("POST", "/api/profile/"+route, map[string]string{"callbackURL": cb})
		wantStatus(t, res, 401, "UNAUTHORIZED")
	}
	for _, tc := range []struct {
		name, route string
		body        any
		status      int
		code        string
		field       string
	}{
		{"missing name", "request-profile-change", map[string]string{"nickname": "abc", "callbackURL": cb}, 400, "VALIDATION_ERROR", "name"},
		{"mistyped nickname", "request-profile-change", map[string]any{"name": "A", "nickname": 42, "callbackURL": cb}, 400, "VALIDATION_ERROR", "nickname"},
		{"bad nickname", "request-profile-change", map[string]string{"name": "A", "nickname": "no spaces", "callbackURL": cb}, 400, "VALIDATION_ERROR", "nickname"},
		{"missing callback", "request-profile-change", map[string]string{"name": "A", "nickname": "abc"}, 400, "VALIDATION_ERROR", "callbackURL"},
		{"bad email", "request-email-change", map[string]string{"newEmail": "not-an-email", "callbackURL": cb}, 400, "VALIDATION_ERROR", "newEmail"},
		{"mistyped email", "request-email-change", map[string]any{"newEmail": []string{"a@b.co"}, "callbackURL": cb}, 400, "VALIDATION_ERROR", "newEmail"},
		{"missing passwords", "request-password-change", map[string]string{"callbackURL": cb}, 400, "VALIDATION_ERROR", "currentPassword"},
		{"foreign callback", "request-profile-change", map[string]string{"name": "A", "nickname": "abc", "callbackURL": "https://evil.example.com/confirm"}, 403, "INVALID_CALLBACK_URL", ""},
		{"relative callback", "request-email-change", map[string]string{"newEmail": "a@example.com", "callbackURL": "/confirm"}, 403, "INVALID_CALLBACK_URL", ""},
		{"nickname taken", "request-profile-change", map[string]string{"name": "A", "nickname": strings.ToUpper(other.User.Nickname), "callbackURL": cb}, 422, "NICKNAME_TAKEN", ""},
		{"email taken", "request-email-change", map[string]string{"newEmail": other.User.Email, "callbackURL": cb}, 422, "USER_ALREADY_EXISTS_USE_ANOTHER_EMAIL", ""},
		{"not JSON", "request-profile-change", "{name:", 400, "INVALID_JSON", ""},
		{"array body", "request-profile-change", "[]", 400, "INVALID_JSON", ""},
		{"huge body", "request-profile-change", `{"name":"` + strings.Repeat("a", 2<<20) + `"}`, 413, "PAYLOAD_TOO_LARGE", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := acc.Client.Do("POST", "/api/profile/"+tc.route, tc.body)
			wantStatus(t, res, tc.status, tc.code)
			if tc.field != "" && !strings.Contains(string(res.Body), `"`+tc.field+`"`) {
				t.Fatalf("error does not name %s: %s", tc.field, res.Body)
			}
		})
	}
	// A cookie-carrying request from a foreign origin is refused before anything else.
	acc.Client.Origin = "https://evil.example.com"
	res := acc.Client.Do("POST", "/api/profile/request-profile-change", map[string]string{"name": "A", "nickname": "abc", "callbackURL": cb})
	wantStatus(t, res, 403, "INVALID_ORIGIN")

	for _, tok := range []string{"", "xyz", strings.Repeat("A", 64), strings.Repeat("0", 64)} {
		res := anon.Do("POST", "/api/profile/confirm-change", map[string]string{"token": tok})
		want := "INVALID_TOKEN"
		if tok == "" {
			want = "VALIDATION_ERROR"
		}
		wantStatus(t, res, 400, want)
	}
	res = anon.Do("POST", "/api/profile/confirm-change", map[string]any{"token": 12})
	wantStatus(t, res, 400, "VALIDATION_ERROR")
	res = anon.Do("GET", "/api/profile/confirm-change", nil)
	wantStatus(t, res, 405, "METHOD_NOT_ALLOWED")
	// Mail is enqueued in the request's transaction, so an empty outbox
	// means nothing was or will be sent.
	if msgs := waitOutbox(t, srv, func([]mail.Message) bool { return true }); len(msgs) != 0 {
		t.Fatalf("refused requests enqueued %d mails: %+v", len(msgs), msgs)
	}
	if n := len(smtp.Messages()); n != 0 {
		t.Fatalf("refused requests sent %d mails", n)
	}
}

func TestExpiredAndSupersededTokensOverHTTP(t *testing.T) {
	srv, smtp := profileServer(t)
	acc := srv.SignUpPlayer(t)
	request := func(nick string) {
		res := acc.Client.Do("POST", "/api/profile/request-profile-change", map[string]string{"name": "N", "nickname": nick, "callbackURL": callbackOf(srv)})
		wantStatus(t, res, 200, "")
	}
	request("first")
	first := waitMail(t, smtp, acc.User.Email, 1).Token()
	request("second")
	second := waitMail(t, smtp, acc.User.Email, 2).Token()
	res, _ := confirm(t, srv.Client(t), first)
	wantStatus(t, res, 400, "INVALID_TOKEN")

	// Let the second token's hour pass (the test moves the expiry instead
	// of the clock).
	storetest.Exec(t, srv.App.DB, "UPDATE profile_tokens SET expires_at = ?", time.Now().UTC().Add(-time.Second))
	res, _ = confirm(t, srv.Client(t), second)
	wantStatus(t, res, 400, "TOKEN_EXPIRED")
}

// A password reset is how an owner takes an account back, so it also kills
// the profile changes still waiting for confirmation: whoever the reset
// locks out may have queued them.
func TestPasswordResetSupersedesPendingChanges(t *testing.T) {
	srv, smtp := profileServer(t)
	acc := srv.SignUpPlayer(t)
	res := acc.Client.Do("POST", "/api/profile/request-profile-change", map[string]string{"name": "Mallory", "nickname": "mallory", "callbackURL": callbackOf(srv)})
	wantStatus(t, res, 200, "")
	pending := waitMail(t, smtp, acc.User.Email, 1).Token()

	anon := srv.Client(t)
	wantStatus(t, anon.Do("POST", "/api/auth/player/request-password-reset", map[string]any{"email": acc.User.Email, "redirectTo": "/reset"}), 200, "")
	link := anon.Do("GET", linkPath(t, srv, waitMail(t, smtp, acc.User.Email, 2)), nil)
	loc, _ := url.Parse(link.Header.Get("Location"))
	wantStatus(t, anon.Do("POST", "/api/auth/player/reset-password", map[string]any{"token": loc.Query().Get("token"), "newPassword": "taken back for good"}), 200, "")

	res, _ = confirm(t, anon, pending)
	wantStatus(t, res, 400, "INVALID_TOKEN")
	res = signIn(t, srv, acc.User.Email, "taken back for good")
	var body struct{ User account.User }
	res.Decode(t, &body)
	if body.User.Nickname != acc.User.Nickname || body.User.Name != acc.User.Name {
		t.Fatalf("after the reset the profile is %q %q, want it unchanged", body.User.Name, body.User.Nickname)
	}
}

// Of 100 concurrent confirmations of one token over HTTP exactly one wins.
func TestConcurrentConfirmOverHTTP(t *testing.T) {
	srv, smtp := profileServer(t)
	acc := srv.SignUpPlayer(t)
	res := acc.Client.Do("POST", "/api/profile/request-profile-change", map[string]string{"name": "Racer", "nickname": "racer", "callbackURL": callbackOf(srv)})
	wantStatus(t, res, 200, "")
	token := waitMail(t, smtp, acc.User.Email, 1).Token()
	const n = 100
	var (
		wg          sync.WaitGroup
		ok, invalid atomic.Int64
		start       = make(chan struct{})
	)
	statuses := make(chan string, n)
	for range n {
		wg.Go(func() {
			c := srv.Client(t)
			<-start
			res := c.Do("POST", "/api/profile/confirm-change", map[string]string{"token": token})
			switch {
			case res.Status == 200:
				ok.Add(1)
			case res.Status == 400 && res.Code() == "INVALID_TOKEN":
				invalid.Add(1)
			default:
				statuses <- strconv.Itoa(res.Status) + " " + string(res.Body)
			}
		})
	}
	close(start)
	wg.Wait()
	close(statuses)
	for s := range statuses {
		t.Errorf("unexpected answer %s", s)
	}
	if ok.Load() != 1 || invalid.Load() != n-1 {
		t.Fatalf("%d confirmations succeeded and %d got INVALID_TOKEN, want 1 and %d", ok.Load(), invalid.Load(), n-1)
	}
}

func TestRateLimitOverHTTP(t *testing.T) {
	srv, _ := profileServer(t, apitest.WithEnv("PLATFORM_PROFILE_RATE_LIMIT", "2"))
	acc := srv.SignUpPlayer(t)
	body := map[string]string{"name": "N", "nickname": "limited", "callbackURL": callbackOf(srv)}
	for range 2 {
		wantStatus(t, acc.Client.Do("POST", "/api/profile/request-profile-change", body), 200, "")
	}
	res := acc.Client.Do("POST", "/api/profile/request-profile-change", body)
	wantStatus(t, res, 429, "RATE_LIMITED")
	secs, err := strconv.Atoi(res.Header.Get("Retry-After"))
	if err != nil || secs < 3500 || secs > 3600 {
		t.Fatalf("Retry-After %q, want about an hour", res.Header.Get("Retry-After"))
	}
}

// The SMTP server is down when the change is requested: the request still
// succeeds, and the mail arrives once the server is up.
func TestRequestWhileSMTPIsDown(t *testing.T) {
	addr := mailtest.ReserveAddr(t)
	srv := profileServerWithSMTP(t, "smtp://"+addr+"?tls=none")
	acc := srv.SignUpPlayer(t)
	res := acc.Client.Do("POST", "/api/profile/request-profile-change", map[string]string{"name": "Patient", "nickname": "patient", "callbackURL": callbackOf(srv)})
	wantStatus(t, res, 200, "")
	waitOutbox(t, srv, func(msgs []mail.Message) bool { // a few failed attempts
		return len(msgs) == 1 && msgs[0].Status == mail.StatusPending && msgs[0].Attempts >= 2
	})
	smtp := mailtest.StartAt(t, addr, mailtest.Options{})
	m := waitMail(t, smtp, acc.User.Email, 1)
	res, body := confirm(t, srv.Client(t), m.Token())
	if res.Status != 200 || body.User.Nickname != "patient" {
		t.Fatalf("confirm: %d %s", res.Status, res.Body)
	}
	// Once the row is sent no worker claims it again, so the count is final.
	msgs := waitOutbox(t, srv, func(msgs []mail.Message) bool {
		return len(msgs) == 1 && msgs[0].Status == mail.StatusSent
	})
	_, atts, err := srv.App.DB.Mail().GetMail(t.Context(), msgs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	sent := 0
	for _, a := range atts {
		if a.Outcome == mail.OutcomeSent {
			sent++
		}
	}
	if sent != 1 || atts[len(atts)-1].Outcome != mail.OutcomeSent {
		t.Fatalf("attempts %+v; want failures, then exactly one sent", atts)
	}
	if n := len(smtp.Messages()); n != 1 {
		t.Fatalf("%d deliveries, want 1", n)
	}
}
