package apitest

import (
	"fmt"
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/auth"
)

// Account is a user created for a test, with the password it was given
// and a client whose cookie jar holds a session of the user's realm.
type Account struct {
	User     *account.User
	Password string
	// Token is the raw session token in Client's jar.
	Token  string
	Client *Client
}

// DefaultPassword is the password of accounts made by the helpers below.
const DefaultPassword = "correct horse battery"

var accountSeq atomic.Int64

// SignUpPlayer creates a player with a unique email and nickname and
// returns it signed in. It goes through the same service as the sign-up
// route, but not through HTTP, so per-IP sign-up rate limits do not get in
// the way of tests that need many players.
func (s *Server) SignUpPlayer(tb testing.TB) *Account {
	tb.Helper()
	n := accountSeq.Add(1)
	return s.SignUpPlayerWith(tb, account.NewUser{
		Email:    fmt.Sprintf("player%d-%s@example.com", n, uuid.NewString()[:8]),
		Name:     fmt.Sprintf("Player %d", n),
		Nickname: fmt.Sprintf("player%d_%s", n, uuid.NewString()[:6]),
		Password: DefaultPassword,
	})
}

// SignUpPlayerWith creates the given player and returns it signed in.
// Each sign-up comes from its own documentation address (2001:db8::/32,
// one /64 each), as players do, so the per-client limit on password
// hashes in flight does not refuse tests that sign many players up at once.
func (s *Server) SignUpPlayerWith(tb testing.TB, in account.NewUser) *Account {
	tb.Helper()
	client := auth.Client{UserAgent: "apitest", IPAddress: fmt.Sprintf("2001:db8:%x::1", accountSeq.Add(1))}
	p, err := s.App.Auth.SignUp(tb.Context(), account.RealmPlayer, in, true, client)
	if err != nil {
		tb.Fatalf("sign up player %s: %v", in.Email, err)
	}
	c := s.Client(tb)
	c.AddSession(p)
	return &Account{User: p.User, Password: in.Password, Token: p.Token, Client: c}
}

// CreateAdmin creates an administrator (as `platformctl admin create`
// does) and returns it signed in to the admin realm.
func (s *Server) CreateAdmin(tb testing.TB) *Account {
	tb.Helper()
	ctx := tb.Context()
	n := accountSeq.Add(1)
	in := account.NewUser{
		Email:    fmt.Sprintf("admin%d-%s@example.com", n, uuid.NewString()[:8]),
		Name:     fmt.Sprintf("Admin %d", n),
		Password: DefaultPassword,
	}
	u, err := s.App.Accounts.Create(ctx, account.RealmAdmin, in)
	if err != nil {
		tb.Fatalf("create admin: %v", err)
	}
	p, err := s.App.Auth.OpenSession(ctx, u, true, auth.Client{UserAgent: "apitest"})
	if err != nil {
		tb.Fatalf("open admin session: %v", err)
	}
	c := s.Client(tb)
	c.AddSession(p)
	return &Account{User: u, Password: in.Password, Token: p.Token, Client: c}
}

// AddSession puts p's signed session cookie into c's jar, next to any
// session of the other realm, as a browser signed in to both would hold.
func (c *Client) AddSession(p *auth.Principal) {
	u, err := url.Parse(c.srv.URL)
	if err != nil {
		c.tb.Fatal(err)
	}
	cookies := c.srv.App.Auth.Cookies().SessionCookies(p.Realm, p.Token, true)
	// The jar wants request-side cookies: name and value only.
	jarCookies := make([]*http.Cookie, 0, len(cookies))
	for _, ck := range cookies {
		jarCookies = append(jarCookies, &http.Cookie{Name: ck.Name, Value: ck.Value, Path: "/"})
	}
	c.HTTP.Jar.SetCookies(u, jarCookies)
}
