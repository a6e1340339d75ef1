package profile_test

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/audit"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/mail"
	"github.com/towerdefence/platformctl/internal/mailtest"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/profile"
	"github.com/towerdefence/platformctl/internal/store"
	"github.com/towerdefence/platformctl/internal/storetest"
)

const (
	secret   = "profile-test-secret-0123456789abcdef0123"
	password = "correct horse battery"
	site     = "https://play.example.com"
	callback = site + "/account/confirm"
)

// clock is a settable test clock shared by every service of an env.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type env struct {
	db       *store.DB
	clock    *clock
	accounts *account.Service
	auth     *auth.Service
	audit    *audit.Log
	profiles *profile.Service
	worker   *mail.Worker
	smtp     *mailtest.Server
	seq      atomic.Int64
}

type envOption func(*profile.Options)

func withRateLimit(n int) envOption { return func(o *profile.Options) { o.RateLimit = n } }

func newEnv(t *testing.T, opts ...envOption) *env {
	t.Helper()
	e := &env{db: storetest.Open(t), clock: &clock{t: time.Now().UTC().Truncate(time.Millisecond)}}
	now := e.clock.Now
	e.accounts = account.New(e.db.Accounts(), account.NewHasher(account.Argon2Params{MemoryKiB: 19456, Iterations: 2, Parallelism: 1}, account.Admission{}), now)
	e.auth = auth.New(auth.Deps{Store: e.db.Sessions(), Accounts: e.accounts}, auth.Options{
		Limiter: e.db.RateLimits(),
		Secret:  secret, SessionTTL: 24 * time.Hour, RefreshAfter: time.Hour,
		PlayerCookiePrefix: "better-auth", AdminCookiePrefix: "platform-admin", TrustedOrigins: []string{site},
	}, now)
	e.audit = audit.New(e.db.Audit(), now)
	composer, err := mail.NewComposer(secret, now)
	if err != nil {
		t.Fatal(err)
	}
	e.smtp = mailtest.Start(t, mailtest.Options{})
	sender, err := mail.NewSMTPSender(mail.SMTPConfig{URL: e.smtp.URL(), From: "no-reply@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	e.worker = mail.NewWorker(mail.WorkerDeps{Store: e.db.Mail(), Composer: composer, Sender: sender, Log: slog.New(slog.DiscardHandler)}, mail.WorkerOptions{}, now)
	o := profile.Options{Secret: secret, TokenTTL: time.Hour, RateLimit: 1000, RateWindow: time.Hour, Limiter: e.db.RateLimits()}
	for _, opt := range opts {
		opt(&o)
	}
	e.profiles, err = profile.New(profile.Deps{Store: e.db.Profiles(), Accounts: e.accounts, Composer: composer,
		Origins: e.auth.Origins(), Audit: e.audit}, o, now)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// player signs a new player up and returns it with its session.
func (e *env) player(t *testing.T) *auth.Principal {
	t.Helper()
	n := e.seq.Add(1)
	p, err := e.auth.SignUp(t.Context(), account.RealmPlayer, account.NewUser{
		Email: fmt.Sprintf("player%d@example.com", n), Name: fmt.Sprintf("Player %d", n),
		Nickname: fmt.Sprintf("player%d", n), Password: password,
	}, true, auth.Client{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// mailTo delivers the outbox and returns the newest message to addr.
func (e *env) mailTo(t *testing.T, addr string) mailtest.Message {
	t.Helper()
	if _, err := e.worker.DeliverDue(t.Context()); err != nil {
		t.Fatal(err)
	}
	var last *mailtest.Message
	for _, m := range e.smtp.Messages() {
		if mailtest.To(addr)(m) {
			last = &m
		}
	}
	if last == nil {
		t.Fatalf("no mail to %s", addr)
	}
	return *last
}

func (e *env) mailCount(t *testing.T) int {
	t.Helper()
	if _, err := e.worker.DeliverDue(t.Context()); err != nil {
		t.Fatal(err)
	}
	return len(e.smtp.Messages())
}

func (e *env) user(t *testing.T, id uuid.UUID) *account.User {
	t.Helper()
	u, err := e.accounts.ByID(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if got := platform.ErrorCode(err); got != code {
		t.Fatalf("got %v (code %q), want %s", err, got, code)
	}
}

func TestProfileChange(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	p := e.player(t)
	if err := e.profiles.RequestProfileChange(ctx, p.User, profile.ProfileChangeInput{Name: "  Ada Lovelace ", Nickname: "Countess", CallbackURL: callback}); err != nil {
		t.Fatal(err)
	}
	if u := e.user(t, p.User.ID); u.Name != p.User.Name || u.Nickname != p.User.Nickname {
		t.Fatal("the request changed the profile before confirmation")
	}
	m := e.mailTo(t, p.User.Email)
	for _, want := range []string{"Ada Lovelace", "Countess", p.User.Nickname, "This wasn't you?"} {
		if !strings.Contains(m.Text, want) {
			t.Errorf("mail does not mention %q:\n%s", want, m.Text)
		}
	}
	if !strings.HasPrefix(m.Link(), callback+"?token=") {
		t.Errorf("link %q is not the callback with the token", m.Link())
	}
	res, err := e.profiles.Confirm(ctx, m.Token())
	if err != nil {
		t.Fatal(err)
	}
	if !res.Status || res.Type != profile.TypeProfile || res.Step != "completed" || res.RequiresLogin || res.User == nil {
		t.Fatalf("confirmation %+v", res)
	}
	if res.User.Name != "Ada Lovelace" || res.User.Nickname != "Countess" {
		t.Fatalf("returned user %+v", res.User)
	}
	if u := e.user(t, p.User.ID); u.Name != "Ada Lovelace" || u.Nickname != "Countess" {
		t.Fatalf("stored user %+v", u)
	}
	_, err = e.profiles.Confirm(ctx, m.Token())
	wantCode(t, err, profile.CodeInvalidToken)
}

func TestEmailChangeTwoSteps(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	p := e.player(t)
	old := p.User.Email
	if err := e.profiles.RequestEmailChange(ctx, p.User, profile.EmailChangeInput{NewEmail: " New@Example.COM ", CallbackURL: callback}); err != nil {
		t.Fatal(err)
	}
	first := e.mailTo(t, old)
	if !strings.Contains(first.Text, "new@example.com") || !strings.Contains(first.Text, "This wasn't you?") {
		t.Fatalf("first mail:\n%s", first.Text)
	}
	if n := e.mailCount(t); n != 1 {
		t.Fatalf("%d mails before the old address approved, want only the one to it", n)
	}
	// The second step gets its own window: approve late in the first.
	e.clock.Advance(50 * time.Minute)
	res, err := e.profiles.Confirm(ctx, first.Token())
	if err != nil {
		t.Fatal(err)
	}
	if res.Step != "new-email-verification-sent" || res.Type != profile.TypeEmail || res.RequiresLogin || res.User == nil || res.User.Email != old {
		t.Fatalf("first confirmation %+v", res)
	}
	second := e.mailTo(t, "new@example.com")
	if second.Token() == first.Token() || second.Token() == "" {
		t.Fatal("the new address did not get a token of its own")
	}
	e.clock.Advance(50 * time.Minute) // past the first window, inside the second
	res, err = e.profiles.Confirm(ctx, second.Token())
	if err != nil {
		t.Fatal(err)
	}
	if res.Step != "completed" || res.User == nil || res.User.Email != "new@example.com" || !res.User.EmailVerified {
		t.Fatalf("second confirmation %+v", res.User)
	}
	u := e.user(t, p.User.ID)
	if u.Email != "new@example.com" || !u.EmailVerified {
		t.Fatalf("stored user %+v", u)
	}
	notice := e.mailTo(t, old)
	if !strings.Contains(notice.Subject, "changed") || notice.Token() != "" {
		t.Fatalf("old address notice %q:\n%s", notice.Subject, notice.Text)
	}
	for _, tok := range []string{first.Token(), second.Token()} {
		_, err = e.profiles.Confirm(ctx, tok)
		wantCode(t, err, profile.CodeInvalidToken)
	}
	// Sign-in goes by the new address only.
	if _, err := e.accounts.Authenticate(ctx, account.RealmPlayer, "new@example.com", password); err != nil {
		t.Fatalf("sign-in with the new address: %v", err)
	}
	_, err = e.accounts.Authenticate(ctx, account.RealmPlayer, old, password)
	wantCode(t, err, account.CodeInvalidCredentials)
}

func TestPasswordChange(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	p := e.player(t)
	other, err := e.auth.OpenSession(ctx, p.User, true, auth.Client{})
	if err != nil {
		t.Fatal(err)
	}
	// A pending profile change dies with the password change.
	if err := e.profiles.RequestProfileChange(ctx, p.User, profile.ProfileChangeInput{Name: "X", Nickname: "xyz", CallbackURL: callback}); err != nil {
		t.Fatal(err)
	}
	profileMail := e.mailTo(t, p.User.Email)

	err = e.profiles.RequestPasswordChange(ctx, p.User, profile.PasswordChangeInput{CurrentPassword: "wrong password", NewPassword: "brand new secret", CallbackURL: callback})
	wantCode(t, err, account.CodeInvalidPassword)
	if err := e.profiles.RequestPasswordChange(ctx, p.User, profile.PasswordChangeInput{CurrentPassword: password, NewPassword: "brand new secret", CallbackURL: callback}); err != nil {
		t.Fatal(err)
	}
	m := e.mailTo(t, p.User.Email)
	if !strings.Contains(m.Subject, "password") || !strings.Contains(m.Text, "signed out") {
		t.Fatalf("password mail %q:\n%s", m.Subject, m.Text)
	}
	// Until confirmed, the old password works.
	if _, err := e.accounts.Authenticate(ctx, account.RealmPlayer, p.User.Email, password); err != nil {
		t.Fatal("the old password stopped working before confirmation")
	}
	res, err := e.profiles.Confirm(ctx, m.Token())
	if err != nil {
		t.Fatal(err)
	}
	if !res.Status || res.Type != profile.TypePassword || res.Step != "completed" || !res.RequiresLogin || res.User != nil {
		t.Fatalf("confirmation %+v", res)
	}
	for _, tok := range []string{p.Token, other.Token} {
		if _, err := e.auth.Authenticate(ctx, account.RealmPlayer, tok); err == nil {
			t.Fatal("a session survived the password change")
		}
	}
	if _, err := e.accounts.Authenticate(ctx, account.RealmPlayer, p.User.Email, "brand new secret"); err != nil {
		t.Fatalf("new password: %v", err)
	}
	_, err = e.accounts.Authenticate(ctx, account.RealmPlayer, p.User.Email, password)
	wantCode(t, err, account.CodeInvalidCredentials)
	_, err = e.profiles.Confirm(ctx, profileMail.Token())
	wantCode(t, err, profile.CodeInvalidToken)
	if notice := e.mailTo(t, p.User.Email); !strings.Contains(notice.Subject, "was changed") {
		t.Fatalf("no password-changed notice, last mail %q", notice.Subject)
	}
	if leftover := storetest.Count(t, e.db, "SELECT count(*) FROM profile_changes WHERE new_password_hash IS NOT NULL"); leftover != 0 {
		t.Fatalf("%d finished changes still hold a password hash", leftover)
	}
}

func TestPasswordChangeValidation(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	p := e.player(t)
	for _, tc := range []struct {
		name  string
		in    profile.PasswordChangeInput
		code  string
		field string
	}{
		{"no current", profile.PasswordChangeInput{NewPassword: "long enough", CallbackURL: callback}, platform.CodeValidation, "currentPassword"},
		{"short", profile.PasswordChangeInput{CurrentPassword: password, NewPassword: "short", CallbackURL: callback}, platform.CodeValidation, "newPassword"},
		{"long", profile.PasswordChangeInput{CurrentPassword: password, NewPassword: strings.Repeat("x", 129), CallbackURL: callback}, platform.CodeValidation, "newPassword"},
		{"same", profile.PasswordChangeInput{CurrentPassword: password, NewPassword: password, CallbackURL: callback}, platform.CodeValidation, "newPassword"},
		{"no callback", profile.PasswordChangeInput{CurrentPassword: password, NewPassword: "long enough"}, platform.CodeValidation, "callbackURL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := e.profiles.RequestPasswordChange(ctx, p.User, tc.in)
			wantCode(t, err, tc.code)
			pe, _ := platform.As(err)
			if _, ok := pe.Fields[tc.field]; !ok {
				t.Fatalf("error %v does not name %s", err, tc.field)
			}
		})
	}
	// 128 characters is fine (emoji count twice, as in better-auth).
	if err := e.profiles.RequestPasswordChange(ctx, p.User, profile.PasswordChangeInput{CurrentPassword: password, NewPassword: strings.Repeat("x", 128), CallbackURL: callback}); err != nil {
		t.Fatal(err)
	}
	if n := e.mailCount(t); n != 1 {
		t.Fatalf("%d mails, want 1 (from the valid request only)", n)
	}
}

func TestTokenExpiry(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	p := e.player(t)
	if err := e.profiles.RequestProfileChange(ctx, p.User, profile.ProfileChangeInput{Name: "New", Nickname: "newnick", CallbackURL: callback}); err != nil {
		t.Fatal(err)
	}
	m := e.mailTo(t, p.User.Email)
	e.clock.Advance(time.Hour)
	_, err := e.profiles.Confirm(ctx, m.Token())
	wantCode(t, err, profile.CodeTokenExpired)
	if u := e.user(t, p.User.ID); u.Nickname != p.User.Nickname {
		t.Fatal("an expired token changed the profile")
	}
}

func TestSupersede(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	p := e.player(t)
	request := func(nick string) string {
		if err := e.profiles.RequestProfileChange(ctx, p.User, profile.ProfileChangeInput{Name: "N", Nickname: nick, CallbackURL: callback}); err != nil {
			t.Fatal(err)
		}
		return e.mailTo(t, p.User.Email).Token()
	}
	first := request("first")
	if err := e.profiles.RequestEmailChange(ctx, p.User, profile.EmailChangeInput{NewEmail: "other@example.com", CallbackURL: callback}); err != nil {
		t.Fatal(err)
	}
	emailToken := e.mailTo(t, p.User.Email).Token()
	second := request("second")
	_, err := e.profiles.Confirm(ctx, first)
	wantCode(t, err, profile.CodeInvalidToken)
	if _, err := e.profiles.Confirm(ctx, second); err != nil {
		t.Fatalf("the newer request: %v", err)
	}
	// A request of another type supersedes nothing.
	if res, err := e.profiles.Confirm(ctx, emailToken); err != nil || res.Step != "new-email-verification-sent" {
		t.Fatalf("email change after a profile request: %+v, %v", res, err)
	}
}

// Of 100 concurrent confirmations of one token exactly one succeeds.
func TestConcurrentConfirm(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	p := e.player(t)
	if err := e.profiles.RequestProfileChange(ctx, p.User, profile.ProfileChangeInput{Name: "Racer", Nickname: "racer", CallbackURL: callback}); err != nil {
		t.Fatal(err)
	}
	token := e.mailTo(t, p.User.Email).Token()
	const n = 100
	var (
		wg       sync.WaitGroup
		ok, inv  atomic.Int64
		start    = make(chan struct{})
		otherErr = make(chan error, n)
	)
	for range n {
		wg.Go(func() {
			<-start
			_, err := e.profiles.Confirm(ctx, token)
			switch platform.ErrorCode(err) {
			case "":
				ok.Add(1)
			case profile.CodeInvalidToken:
				inv.Add(1)
			default:
				otherErr <- err
			}
		})
	}
	close(start)
	wg.Wait()
	close(otherErr)
	for err := range otherErr {
		t.Errorf("unexpected error: %v", err)
	}
	if ok.Load() != 1 || inv.Load() != n-1 {
		t.Fatalf("%d succeeded and %d got INVALID_TOKEN, want 1 and %d", ok.Load(), inv.Load(), n-1)
	}
}

func TestConflicts(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	a, b := e.player(t), e.player(t)

	// At request time.
	err := e.profiles.RequestProfileChange(ctx, a.User, profile.ProfileChangeInput{Name: "A", Nickname: strings.ToUpper(b.User.Nickname), CallbackURL: callback})
	wantCode(t, err, account.CodeNicknameTaken)
	err = e.profiles.RequestEmailChange(ctx, a.User, profile.EmailChangeInput{NewEmail: b.User.Email, CallbackURL: callback})
	wantCode(t, err, account.CodeUserExists)
	if n := e.mailCount(t); n != 0 {
		t.Fatalf("refused requests sent %d mails", n)
	}

	// At confirm time: b takes the nickname and the address first.
	if err := e.profiles.RequestProfileChange(ctx, a.User, profile.ProfileChangeInput{Name: "A", Nickname: "wanted", CallbackURL: callback}); err != nil {
		t.Fatal(err)
	}
	aProfile := e.mailTo(t, a.User.Email).Token()
	if err := e.profiles.RequestEmailChange(ctx, a.User, profile.EmailChangeInput{NewEmail: "wanted@example.com", CallbackURL: callback}); err != nil {
		t.Fatal(err)
	}
	aEmail := e.mailTo(t, a.User.Email).Token()
	if _, err := e.profiles.Confirm(ctx, aEmail); err != nil {
		t.Fatal(err)
	}
	aEmailNew := e.mailTo(t, "wanted@example.com").Token()

	if err := e.profiles.RequestProfileChange(ctx, b.User, profile.ProfileChangeInput{Name: "B", Nickname: "Wanted", CallbackURL: callback}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.profiles.Confirm(ctx, e.mailTo(t, b.User.Email).Token()); err != nil {
		t.Fatal(err)
	}
	if err := e.profiles.RequestEmailChange(ctx, b.User, profile.EmailChangeInput{NewEmail: "wanted@example.com", CallbackURL: callback}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.profiles.Confirm(ctx, e.mailTo(t, b.User.Email).Token()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.profiles.Confirm(ctx, e.mailTo(t, "wanted@example.com").Token()); err != nil {
		t.Fatal(err)
	}

	_, err = e.profiles.Confirm(ctx, aProfile)
	wantCode(t, err, account.CodeNicknameTaken)
	_, err = e.profiles.Confirm(ctx, aEmailNew)
	wantCode(t, err, account.CodeUserExists)
	if u := e.user(t, a.User.ID); u.Nickname != a.User.Nickname || u.Email != a.User.Email {
		t.Fatalf("a refused confirmation changed the user: %+v", u)
	}
}

// A pending change whose base changed meanwhile (here: the password was
// reset another way) is refused instead of undoing the newer change.
func TestStaleChangeRefused(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	p := e.player(t)
	if err := e.profiles.RequestPasswordChange(ctx, p.User, profile.PasswordChangeInput{CurrentPassword: password, NewPassword: "stale but valid", CallbackURL: callback}); err != nil {
		t.Fatal(err)
	}
	token := e.mailTo(t, p.User.Email).Token()
	hash, err := e.accounts.HashPassword(ctx, "reset elsewhere")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.db.Accounts().SetPasswordHash(ctx, p.User.ID, hash, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	_, err = e.profiles.Confirm(ctx, token)
	wantCode(t, err, profile.CodeChangeConflict)
	if _, err := e.accounts.Authenticate(ctx, account.RealmPlayer, p.User.Email, "reset elsewhere"); err != nil {
		t.Fatal("the stale change undid the reset")
	}
}

func TestCallbackURL(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	p := e.player(t)
	for _, bad := range []string{
		"https://evil.example.com/confirm",
		"https://play.example.com.evil.com/x",
		"https://evil.com/?https://play.example.com",
		"http://play.example.com/confirm", // scheme differs from the trusted origin
		"https://play.example.com:8443/confirm",
		"//play.example.com/confirm",
		"/account/confirm",
		"javascript:alert(1)",
		"https://user:pw@play.example.com/confirm",
		"https://play.example.com\\@evil.com/",
		"https://play.example.com/a b",
		"https://play.example.com/\nx",
		"https://" + strings.Repeat("a", 2100) + ".com/",
		"ftp://play.example.com/",
	} {
		err := e.profiles.RequestProfileChange(ctx, p.User, profile.ProfileChangeInput{Name: "N", Nickname: "nick", CallbackURL: bad})
		if platform.ErrorCode(err) != profile.CodeInvalidCallbackURL || !platform.IsKind(err, platform.KindForbidden) {
			t.Errorf("callback %q: got %v, want 403 INVALID_CALLBACK_URL", bad, err)
		}
	}
	if n := e.mailCount(t); n != 0 {
		t.Fatalf("refused callbacks sent %d mails", n)
	}
	// Upper-case host, default port, query and fragment survive; the token
	// joins the query.
	if err := e.profiles.RequestProfileChange(ctx, p.User, profile.ProfileChangeInput{Name: "N", Nickname: "nick",
		CallbackURL: "https://PLAY.example.com:443/account/confirm?lang=de&token=old#done"}); err != nil {
		t.Fatal(err)
	}
	m := e.mailTo(t, p.User.Email)
	link := m.Link()
	if !strings.HasPrefix(link, "https://PLAY.example.com:443/account/confirm?") || !strings.Contains(link, "lang=de") ||
		!strings.Contains(link, "token="+m.Token()) || strings.Contains(link, "token=old") || !strings.HasSuffix(link, "#done") {
		t.Fatalf("link %q", link)
	}
}

func TestMalformedTokens(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	_, err := e.profiles.Confirm(ctx, "")
	wantCode(t, err, platform.CodeValidation)
	for _, tok := range []string{"abc", strings.Repeat("A", 64), strings.Repeat("0", 63), strings.Repeat("0", 65),
		strings.Repeat("g", 64), strings.Repeat("0", 62) + "\x00\x00", strings.Repeat("0", 64)} {
		_, err := e.profiles.Confirm(ctx, tok)
		wantCode(t, err, profile.CodeInvalidToken)
	}
}

func TestRateLimits(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, withRateLimit(3))
	a, b := e.player(t), e.player(t)
	// Per user, wrong passwords included.
	for range 2 {
		err := e.profiles.RequestPasswordChange(ctx, a.User, profile.PasswordChangeInput{CurrentPassword: "wrong password", NewPassword: "long enough", CallbackURL: callback})
		wantCode(t, err, account.CodeInvalidPassword)
	}
	if err := e.profiles.RequestProfileChange(ctx, a.User, profile.ProfileChangeInput{Name: "A", Nickname: "aaa", CallbackURL: callback}); err != nil {
		t.Fatal(err)
	}
	err := e.profiles.RequestPasswordChange(ctx, a.User, profile.PasswordChangeInput{CurrentPassword: password, NewPassword: "long enough", CallbackURL: callback})
	wantCode(t, err, platform.CodeRateLimited)
	pe, _ := platform.As(err)
	if pe.RetryAfter < 59*time.Minute || pe.RetryAfter > time.Hour {
		t.Fatalf("Retry-After %s, want about an hour", pe.RetryAfter)
	}
	e.clock.Advance(time.Hour + time.Second)
	if err := e.profiles.RequestProfileChange(ctx, a.User, profile.ProfileChangeInput{Name: "A", Nickname: "aab", CallbackURL: callback}); err != nil {
		t.Fatalf("after the window: %v", err)
	}
	// A spent budget comes back one request a window, not all at once.
	err = e.profiles.RequestProfileChange(ctx, a.User, profile.ProfileChangeInput{Name: "A", Nickname: "aac", CallbackURL: callback})
	wantCode(t, err, platform.CodeRateLimited)
	if pe, _ := platform.As(err); pe.RetryAfter < 59*time.Minute || pe.RetryAfter > time.Hour {
		t.Fatalf("Retry-After %s for the second request after the window, want about an hour", pe.RetryAfter)
	}

	// Per recipient: b cannot flood victim@ with email-change requests,
	// each of which would mail it once approved.
	for range 3 {
		if err := e.profiles.RequestEmailChange(ctx, b.User, profile.EmailChangeInput{NewEmail: "victim@example.com", CallbackURL: callback}); err != nil {
			t.Fatal(err)
		}
	}
	c := e.player(t)
	err = e.profiles.RequestEmailChange(ctx, c.User, profile.EmailChangeInput{NewEmail: "victim@example.com", CallbackURL: callback})
	wantCode(t, err, platform.CodeRateLimited)
}

func TestInspectAndIssue(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	p := e.player(t)
	const actor = "os:support"

	issued, err := e.profiles.Issue(ctx, profile.IssueInput{Actor: actor, Reason: "ticket 42", User: p.User.Email,
		Type: profile.TypeProfile, Nickname: "helped", CallbackURL: callback})
	if err != nil {
		t.Fatal(err)
	}
	if issued.Sent || issued.MessageID != nil || len(issued.Token) != 64 || !strings.Contains(issued.Link, "token="+issued.Token) {
		t.Fatalf("issued %+v", issued)
	}
	if n := e.mailCount(t); n != 0 {
		t.Fatalf("issue without --send mailed %d messages", n)
	}
	info, err := e.profiles.Inspect(ctx, actor, issued.Token)
	if err != nil {
		t.Fatal(err)
	}
	if info.Status != profile.TokenPending || info.Type != profile.TypeProfile || info.UserID != p.User.ID || info.Email != p.User.Email || info.RequestedBy != actor {
		t.Fatalf("inspect %+v", info)
	}
	// Inspecting twice consumes nothing.
	if _, err := e.profiles.Inspect(ctx, actor, issued.Token); err != nil {
		t.Fatal(err)
	}
	res, err := e.profiles.Confirm(ctx, issued.Token)
	if err != nil || res.User.Nickname != "helped" || res.User.Name != p.User.Name {
		t.Fatalf("confirm issued token: %+v, %v", res, err)
	}
	if info, _ := e.profiles.Inspect(ctx, actor, issued.Token); info.Status != profile.TokenUsed || info.UsedAt == nil {
		t.Fatalf("after use: %+v", info)
	}

	// An email change for someone who lost the old inbox, mailed to the new one.
	sent, err := e.profiles.Issue(ctx, profile.IssueInput{Actor: actor, User: p.User.ID.String(), Type: profile.TypeEmail,
		NewEmail: "recovered@example.com", SkipOldEmail: true, Send: true, CallbackURL: callback})
	if err != nil {
		t.Fatal(err)
	}
	m := e.mailTo(t, "recovered@example.com")
	if sent.MessageID == nil || sent.Recipient != "recovered@example.com" || m.Token() != sent.Token {
		t.Fatalf("issued %+v, mail token %q", sent, m.Token())
	}
	superseding, err := e.profiles.Issue(ctx, profile.IssueInput{Actor: actor, User: p.User.Email, Type: profile.TypeEmail,
		NewEmail: "other@example.com", CallbackURL: callback})
	if err != nil {
		t.Fatal(err)
	}
	if info, _ := e.profiles.Inspect(ctx, actor, sent.Token); info.Status != profile.TokenSuperseded {
		t.Fatalf("superseded token shows %q", info.Status)
	}
	e.clock.Advance(time.Hour)
	if info, _ := e.profiles.Inspect(ctx, actor, superseding.Token); info.Status != profile.TokenExpired {
		t.Fatalf("expired token shows %q", info.Status)
	}
	_, err = e.profiles.Inspect(ctx, actor, strings.Repeat("ab", 32))
	wantCode(t, err, platform.CodeNotFound)
	_, err = e.profiles.Inspect(ctx, actor, "nope")
	wantCode(t, err, platform.CodeValidation)

	// Passwords: validated, and the audit trail holds every action.
	_, err = e.profiles.Issue(ctx, profile.IssueInput{Actor: actor, User: p.User.Email, Type: profile.TypePassword, NewPassword: "short", CallbackURL: callback})
	wantCode(t, err, platform.CodeValidation)
	_, err = e.profiles.Issue(ctx, profile.IssueInput{Actor: actor, User: "nobody@example.com", Type: profile.TypeProfile, CallbackURL: callback})
	wantCode(t, err, account.CodeUserNotFound)
	entries, err := e.audit.List(ctx, audit.Filter{Actor: actor})
	if err != nil {
		t.Fatal(err)
	}
	actions := map[string]int{}
	for _, en := range entries {
		actions[en.Action]++
		for _, v := range en.Details {
			if strings.Contains(v, issued.Token) {
				t.Fatal("a token was written to the audit log")
			}
		}
	}
	if actions["token.issue"] != 3 || actions["token.inspect"] != 6 {
		t.Fatalf("audit actions %v, want 3 issues and 6 inspections", actions)
	}
}

// A request whose transaction fails leaves nothing behind: no change, no
// token, no message.
func TestNothingHalfWritten(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	a, b := e.player(t), e.player(t)
	err := e.profiles.RequestProfileChange(ctx, a.User, profile.ProfileChangeInput{Name: "A", Nickname: b.User.Nickname, CallbackURL: callback})
	wantCode(t, err, account.CodeNicknameTaken)
	for _, table := range []string{"profile_changes", "profile_tokens", "mail_outbox"} {
		if n := storetest.Count(t, e.db, "SELECT count(*) FROM "+table); n != 0 {
			t.Errorf("%s has %d rows after a refused request", table, n)
		}
	}
}
