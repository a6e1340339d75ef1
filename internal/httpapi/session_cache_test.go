package httpapi_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/apitest"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/httpapi"
)

// countingSessions counts every call to the session store.
type countingSessions struct {
	auth.Store
	calls atomic.Int64
}

func (c *countingSessions) SessionByTokenHash(ctx context.Context, h auth.TokenHash) (*auth.Session, *account.User, error) {
	c.calls.Add(1)
	return c.Store.SessionByTokenHash(ctx, h)
}

func (c *countingSessions) ExtendSession(ctx context.Context, id uuid.UUID, expiresAt, updatedAt time.Time) (bool, error) {
	c.calls.Add(1)
	return c.Store.ExtendSession(ctx, id, expiresAt, updatedAt)
}

func (c *countingSessions) DeleteSessions(ctx context.Context, userID uuid.UUID, m auth.SessionMatch) (int, error) {
	c.calls.Add(1)
	return c.Store.DeleteSessions(ctx, userID, m)
}

func (c *countingSessions) InTx(ctx context.Context, fn func(ctx context.Context, tx auth.Tx) error) error {
	c.calls.Add(1)
	return c.Store.InTx(ctx, fn)
}

// A warm authenticated request reads nothing of its session from the
// database: the first request reads it once, the next ones (get-session
// and a player route) find it in the cache; a sign-out makes the next
// request read again, and refuse it.
func TestWarmAuthenticatedRequestReadsNoSession(t *testing.T) {
	srv := apitest.New(t)
	acct := srv.SignUpPlayer(t)
	cfg := srv.Config
	sessions := &countingSessions{Store: srv.App.DB.Sessions()}
	authSvc := auth.New(auth.Deps{Store: sessions, Accounts: srv.App.Accounts}, auth.Options{
		Secret: cfg.Secret, SessionTTL: cfg.SessionTTL, RefreshAfter: cfg.SessionRefreshAfter,
		PlayerCookiePrefix: cfg.PlayerCookiePrefix, AdminCookiePrefix: cfg.AdminCookiePrefix,
		TrustedOrigins: cfg.TrustedOrigins, CacheSize: 16,
	}, time.Now)
	authSvc.ResumeSessionCache() // no event listener here: nothing to wait for
	ts := httptest.NewServer(httpapi.NewHandler(httpapi.Deps{
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Config: cfg, Auth: authSvc, Players: srv.App.Players,
	}))
	t.Cleanup(ts.Close)
	get := func(path string) int {
		req, err := http.NewRequestWithContext(t.Context(), "GET", ts.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range authSvc.Cookies().SessionCookies(account.RealmPlayer, acct.Token, true) {
			req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusCode >= 500 {
			t.Fatalf("GET %s: %d %s", path, res.StatusCode, body)
		}
		return res.StatusCode
	}

	if get("/api/auth/player/get-session") != 200 || sessions.calls.Load() != 1 {
		t.Fatalf("cold request: %d session store calls, want 1", sessions.calls.Load())
	}
	for _, path := range []string{"/api/auth/player/get-session", "/api/player/social", "/api/auth/player/get-session"} {
		before := sessions.calls.Load()
		if status := get(path); status != 200 {
			t.Fatalf("GET %s: %d", path, status)
		}
		if n := sessions.calls.Load() - before; n != 0 {
			t.Fatalf("warm GET %s: %d session store calls, want 0", path, n)
		}
	}
	p, err := authSvc.Authenticate(t.Context(), account.RealmPlayer, acct.Token)
	if err != nil {
		t.Fatal(err)
	}
	if err := authSvc.SignOut(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	if status := get("/api/player/social"); status != http.StatusUnauthorized {
		t.Fatalf("after sign-out: %d, want 401", status)
	}
}
