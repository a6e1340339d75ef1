package auth_test

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/mail"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/store"
	"github.com/towerdefence/platformctl/internal/storetest"
)

// clock is a settable time source shared by the services under test.
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

const secret = "0123456789abcdef0123456789abcdef"

type fixture struct {
	db       *store.DB
	clock    *clock
	svc      *auth.Service
	mailer   *wakeCounter
	accounts *account.Service
	opts     auth.Options
}

// serviceOn returns a second service like f.svc over st, which shares
// f's database.
func (f *fixture) serviceOn(st auth.Store) *auth.Service {
	return auth.New(auth.Deps{Store: st, Accounts: f.accounts, Mailer: f.mailer}, f.opts, f.clock.Now)
}

// wakeCounter is the real composer with a stand-in for the delivery
// worker, which these tests do not run; it counts the wake-ups instead.
type wakeCounter struct {
	*mail.Composer
	wakes atomic.Int64
}

func (w *wakeCounter) Wake() { w.wakes.Add(1) }

func newFixture(t testing.TB) *fixture {
	return newFixtureWithLimits(t, auth.Limits{})
}

func newFixtureWithLimits(t testing.TB, limits auth.Limits) *fixture {
	return newFixtureWithHasher(t, limits, account.NewHasher(cheapHash, account.Admission{}))
}

// cheapHash keeps the tests' password hashes quick.
var cheapHash = account.Argon2Params{MemoryKiB: 1024, Iterations: 1, Parallelism: 1}

func newFixtureWithHasher(t testing.TB, limits auth.Limits, hasher *account.Hasher) *fixture {
	t.Helper()
	db := storetest.Open(t)
	clk := &clock{t: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)}
	accounts := account.New(db.Accounts(), hasher, clk.Now)
	composer, err := mail.NewComposer(secret, clk.Now)
	if err != nil {
		t.Fatal(err)
	}
	m := &wakeCounter{Composer: composer}
	opts := auth.Options{
		Limiter: db.RateLimits(),
		Secret:  secret, SessionTTL: 7 * 24 * time.Hour, RefreshAfter: 24 * time.Hour,
		PlayerCookiePrefix: "better-auth", AdminCookiePrefix: "platform-admin",
		TrustedOrigins: []string{"http://localhost:8080"}, BaseURL: "http://localhost:8080", TokenTTL: time.Hour,
		Limits: limits, Factors: db.Factors(), Keyring: testKeyring(t), FreshAge: 10 * time.Minute, Issuer: "Tower Defence",
	}
	svc := auth.New(auth.Deps{Store: db.Sessions(), Accounts: accounts, Mailer: m}, opts, clk.Now)
	return &fixture{db: db, clock: clk, svc: svc, mailer: m, accounts: accounts, opts: opts}
}

// rows counts a table's rows; table is one of the test's fixed names.
func (f *fixture) rows(t *testing.T, table string) int {
	t.Helper()
	return storetest.Count(t, f.db, "SELECT count(*) FROM "+table)
}

func (f *fixture) signUp(t testing.TB, email, nickname string) *auth.Principal {
	t.Helper()
	p, err := f.svc.SignUp(t.Context(), account.RealmPlayer, account.NewUser{
		Email: email, Name: "Player " + nickname, Nickname: nickname, Password: "correct horse"}, true, auth.Client{IPAddress: "192.0.2.1", UserAgent: "test"})
	if err != nil {
		t.Fatalf("sign up %s: %v", email, err)
	}
	return p
}

func TestSignUpSignInAndLookup(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t)
	p := f.signUp(t, "ada@example.com", "ada")
	if len(p.Token) != 43 || p.Session.TokenHash != auth.HashToken(p.Token) {
		t.Fatalf("token %q (len %d), hash %x", p.Token, len(p.Token), p.Session.TokenHash)
	}
	if want := f.clock.Now().Add(7 * 24 * time.Hour); !p.Session.ExpiresAt.Equal(want) {
		t.Fatalf("expires %v, want %v", p.Session.ExpiresAt, want)
	}
	got, err := f.svc.Authenticate(ctx, account.RealmPlayer, p.Token)
	if err != nil {
		t.Fatal(err)
	}
	if got.User.ID != p.User.ID || got.Session.ID != p.Session.ID || got.User.Nickname != "ada" || got.Session.IPAddress != "192.0.2.1" {
		t.Fatalf("Authenticate = %+v / %+v", got.User, got.Session)
	}
	if got.User.PasswordHash == "" {
		t.Fatal("principal's user lacks its password hash (profile changes verify it)")
	}
	// The token is never stored: the database holds only its 32-byte digest.
	var stored []byte
	storetest.Scan(t, f.db, &stored, "SELECT token_hash FROM sessions WHERE id = ?", p.Session.ID)
	if want := auth.HashToken(p.Token); !bytes.Equal(stored, want[:]) {
		t.Fatalf("stored token_hash %x, want the digest %x", stored, want)
	}

	in, err := f.svc.SignIn(ctx, account.RealmPlayer, "ADA@example.com", "correct horse", true, auth.Client{})
	if err != nil || in.User.ID != p.User.ID || in.Session.ID == p.Session.ID {
		t.Fatalf("SignIn = %+v, %v", in, err)
	}
	if _, err := f.svc.SignIn(ctx, account.RealmPlayer, "ada@example.com", "wrong horse", true, auth.Client{}); !errors.Is(err, account.ErrInvalidCredentials) {
		t.Fatalf("SignIn wrong password = %v", err)
	}
	list, err := f.svc.ListSessions(ctx, in)
	if err != nil || len(list) != 2 {
		t.Fatalf("ListSessions = %d sessions, %v; want 2", len(list), err)
	}
	for _, s := range list {
		switch s.ID {
		case in.Session.ID:
			if s.Token != in.Token {
				t.Errorf("current session token %q, want the raw token", s.Token)
			}
		case p.Session.ID:
			if s.Token != p.Session.ID.String() {
				t.Errorf("other session token %q, want its handle", s.Token)
			}
		}
	}
}

func TestSignUpIsAtomicAndRealmBound(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t)
	f.signUp(t, "ada@example.com", "ada")
	_, err := f.svc.SignUp(ctx, account.RealmPlayer, account.NewUser{Email: "b@example.com", Name: "B", Nickname: "ADA", Password: "correct horse"}, true, auth.Client{})
	if platform.ErrorCode(err) != account.CodeNicknameTaken {
		t.Fatalf("duplicate nickname = %v", err)
	}
	users, sessions := f.rows(t, "users"), f.rows(t, "sessions")
	if users != 1 || sessions != 1 {
		t.Fatalf("after a failed sign-up: %d users, %d sessions; want 1 and 1", users, sessions)
	}
	if _, err := f.svc.SignUp(ctx, account.RealmAdmin, account.NewUser{Email: "x@example.com", Name: "X", Password: "correct horse"}, true, auth.Client{}); !errors.Is(err, auth.ErrSignUpDisabled) {
		t.Fatalf("admin sign-up = %v, want refused", err)
	}
}

func TestRealmSeparation(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t)
	player := f.signUp(t, "ada@example.com", "ada")
	if _, err := f.svc.Authenticate(ctx, account.RealmAdmin, player.Token); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("player token in the admin realm = %v", err)
	}
	admin, err := f.svc.Accounts().Create(ctx, account.RealmAdmin, account.NewUser{Email: "ada@example.com", Name: "Ada", Password: "admin password"})
	if err != nil {
		t.Fatal(err)
	}
	ap, err := f.svc.SignIn(ctx, account.RealmAdmin, "ada@example.com", "admin password", true, auth.Client{})
	if err != nil || ap.User.ID != admin.ID {
		t.Fatalf("admin sign-in = %v", err)
	}
	if _, err := f.svc.Authenticate(ctx, account.RealmPlayer, ap.Token); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("admin token in the player realm = %v", err)
	}
	// The player password does not open the admin account with the same email.
	if _, err := f.svc.SignIn(ctx, account.RealmAdmin, "ada@example.com", "correct horse", true, auth.Client{}); !errors.Is(err, account.ErrInvalidCredentials) {
		t.Fatalf("player password on admin realm = %v", err)
	}
}

func TestSlidingRefreshAndExpiry(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t)
	p := f.signUp(t, "ada@example.com", "ada")
	created := p.Session.ExpiresAt

	f.clock.Advance(23 * time.Hour)
	got, err := f.svc.Authenticate(ctx, account.RealmPlayer, p.Token)
	if err != nil || got.Refreshed || !got.Session.ExpiresAt.Equal(created) {
		t.Fatalf("before refresh-after: refreshed %v expires %v (%v)", got.Refreshed, got.Session.ExpiresAt, err)
	}
	f.clock.Advance(time.Hour)
	if peek, err := f.svc.AuthenticateNoRefresh(ctx, account.RealmPlayer, p.Token); err != nil || peek.Refreshed || !peek.Session.ExpiresAt.Equal(created) {
		t.Fatalf("AuthenticateNoRefresh extended the session (%v)", err)
	}
	got, err = f.svc.Authenticate(ctx, account.RealmPlayer, p.Token)
	if err != nil || !got.Refreshed {
		t.Fatalf("after a day: refreshed %v (%v), want a refresh", got.Refreshed, err)
	}
	if want := f.clock.Now().Add(7 * 24 * time.Hour); !got.Session.ExpiresAt.Equal(want) {
		t.Fatalf("refreshed expiry %v, want %v", got.Session.ExpiresAt, want)
	}
	again, _ := f.svc.Authenticate(ctx, account.RealmPlayer, p.Token)
	if again.Refreshed || !again.Session.ExpiresAt.Equal(got.Session.ExpiresAt) {
		t.Fatal("the refreshed expiry was not stored, or refreshed twice")
	}

	f.clock.Advance(7*24*time.Hour + time.Millisecond)
	if _, err := f.svc.Authenticate(ctx, account.RealmPlayer, p.Token); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("expired session = %v", err)
	}
	if n := f.rows(t, "sessions"); n != 0 {
		t.Fatalf("expired session not deleted on sight: %d rows", n)
	}
}

func TestBrowserSessionIsShortAndNotExtended(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t)
	f.signUp(t, "ada@example.com", "ada")
	p, err := f.svc.SignIn(ctx, account.RealmPlayer, "ada@example.com", "correct horse", false, auth.Client{})
	if err != nil {
		t.Fatal(err)
	}
	if want := f.clock.Now().Add(24 * time.Hour); !p.Session.ExpiresAt.Equal(want) {
		t.Fatalf("rememberMe=false expires %v, want %v", p.Session.ExpiresAt, want)
	}
	f.clock.Advance(23 * time.Hour)
	got, err := f.svc.Authenticate(ctx, account.RealmPlayer, p.Token)
	if err != nil || got.Refreshed {
		t.Fatalf("browser session: refreshed %v, %v", got.Refreshed, err)
	}
	f.clock.Advance(time.Hour)
	if _, err := f.svc.Authenticate(ctx, account.RealmPlayer, p.Token); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("browser session after a day = %v, want expired", err)
	}
}

func TestRevocation(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t)
	a := f.signUp(t, "ada@example.com", "ada")
	other := f.signUp(t, "bob@example.com", "bob")
	signIn := func() *auth.Principal {
		p, err := f.svc.SignIn(ctx, account.RealmPlayer, "ada@example.com", "correct horse", true, auth.Client{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	alive := func(p *auth.Principal) bool {
		_, err := f.svc.Authenticate(ctx, account.RealmPlayer, p.Token)
		return err == nil
	}
	b, c := signIn(), signIn()

	// Another user's token is silently ignored.
	if cur, err := f.svc.RevokeSession(ctx, a, other.Token); err != nil || cur || !alive(other) {
		t.Fatalf("revoking another user's session: current %v err %v alive %v", cur, err, alive(other))
	}
	if cur, err := f.svc.RevokeSession(ctx, a, other.Session.ID.String()); err != nil || cur || !alive(other) {
		t.Fatal("revoking another user's session by handle took effect")
	}
	// By handle, then by raw token.
	if cur, err := f.svc.RevokeSession(ctx, a, b.Session.ID.String()); err != nil || cur || alive(b) {
		t.Fatalf("revoke by handle: current %v err %v alive %v", cur, err, alive(b))
	}
	if cur, err := f.svc.RevokeSession(ctx, a, a.Token); err != nil || !cur || alive(a) {
		t.Fatalf("revoke own token: current %v err %v alive %v", cur, err, alive(a))
	}
	d := signIn()
	if err := f.svc.RevokeOtherSessions(ctx, d); err != nil || alive(c) || !alive(d) {
		t.Fatalf("revoke others: err %v, c alive %v, d alive %v", err, alive(c), alive(d))
	}
	e := signIn()
	if n, err := f.svc.RevokeUserSessions(ctx, e.User.ID); err != nil || n != 2 || alive(d) || alive(e) {
		t.Fatalf("revoke all: n %d err %v", n, err)
	}
	if !alive(other) {
		t.Fatal("revoking Ada's sessions ended Bob's")
	}
	if err := f.svc.SignOut(ctx, other); err != nil || alive(other) {
		t.Fatalf("sign out: %v", err)
	}
}

func TestSessionFromRequest(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t)
	p := f.signUp(t, "ada@example.com", "ada")
	req := func(cookies ...*http.Cookie) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		for _, c := range cookies {
			r.AddCookie(c)
		}
		return r
	}
	signed := f.svc.Cookies().SessionCookies(account.RealmPlayer, p.Token, true)[0]
	got, err := f.svc.SessionFromRequest(ctx, account.RealmPlayer, req(&http.Cookie{Name: signed.Name, Value: signed.Value}))
	if err != nil || got.User.ID != p.User.ID {
		t.Fatalf("SessionFromRequest = %v", err)
	}
	for name, r := range map[string]*http.Request{
		"no cookie":       req(),
		"unsigned token":  req(&http.Cookie{Name: signed.Name, Value: p.Token}),
		"unknown token":   req(&http.Cookie{Name: signed.Name, Value: f.svc.Cookies().Sign(uuid.NewString())}),
		"admin cookie":    req(&http.Cookie{Name: "platform-admin.session_token", Value: signed.Value}),
		"garbage":         req(&http.Cookie{Name: signed.Name, Value: "%%%"}),
		"very long token": req(&http.Cookie{Name: signed.Name, Value: f.svc.Cookies().Sign(string(make([]byte, 300)))}),
	} {
		if _, err := f.svc.SessionFromRequest(ctx, account.RealmPlayer, r); !errors.Is(err, auth.ErrUnauthenticated) {
			t.Errorf("%s: err = %v, want UNAUTHORIZED", name, err)
		}
	}
}

// Concurrent sign-ups with one nickname: the unique index lets exactly one
// win, and every loser gets NICKNAME_TAKEN rather than an internal error.
func TestConcurrentSignUpsOneNickname(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t)
	const n = 20
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, errs[i] = f.svc.SignUp(ctx, account.RealmPlayer, account.NewUser{
				Email: uuid.NewString() + "@example.com", Name: "P", Nickname: []string{"Racer", "racer", "RACER"}[i%3], Password: "correct horse"},
				true, auth.Client{})
		}()
	}
	close(start)
	wg.Wait()
	wins := 0
	for _, err := range errs {
		switch {
		case err == nil:
			wins++
		case platform.ErrorCode(err) != account.CodeNicknameTaken:
			t.Errorf("loser got %v, want NICKNAME_TAKEN", err)
		}
	}
	if wins != 1 {
		t.Fatalf("%d sign-ups won, want exactly 1", wins)
	}
}
