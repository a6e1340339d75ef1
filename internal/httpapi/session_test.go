package httpapi

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/storetest"
)

// The session gate is tested here, inside the package, on a mux of its own;
// the auth routes' tests exercise it again through the whole API.
func TestRequireSession(t *testing.T) {
	ctx := t.Context()
	db := storetest.Open(t)
	var nowNanos atomic.Int64
	nowNanos.Store(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC).UnixNano())
	clock := func() time.Time { return time.Unix(0, nowNanos.Load()).UTC() }
	accounts := account.New(db.Accounts(), account.NewHasher(account.Argon2Params{MemoryKiB: 1024, Iterations: 1, Parallelism: 1}, account.Admission{}), clock)
	sessions := auth.New(auth.Deps{Store: db.Sessions(), Accounts: accounts}, auth.Options{
		Limiter: db.RateLimits(),
		Secret:  "0123456789abcdef0123456789abcdef", SessionTTL: 168 * time.Hour, RefreshAfter: 24 * time.Hour,
		PlayerCookiePrefix: "better-auth", AdminCookiePrefix: "platform-admin",
		TrustedOrigins: []string{"http://game.example"},
	}, clock)
	d := Deps{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Auth: sessions}

	whoami := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := principalFrom(r)
		respond(w, http.StatusOK, map[string]string{"id": p.User.ID.String(), "realm": string(p.Realm)})
	})
	mux := http.NewServeMux()
	mux.Handle("/player", requirePlayer(d, whoami))
	mux.Handle("/admin", requireAdmin(d, whoami))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	player, err := sessions.SignUp(ctx, account.RealmPlayer, account.NewUser{Email: "ada@example.com", Name: "Ada", Nickname: "ada", Password: "correct horse"}, true, auth.Client{})
	if err != nil {
		t.Fatal(err)
	}
	adminUser, err := accounts.Create(ctx, account.RealmAdmin, account.NewUser{Email: "ops@example.com", Name: "Ops", Password: "correct horse"})
	if err != nil {
		t.Fatal(err)
	}
	admin, err := sessions.OpenSession(ctx, adminUser, true, auth.Client{})
	if err != nil {
		t.Fatal(err)
	}
	cookie := func(p *auth.Principal) string {
		c := sessions.Cookies().SessionCookies(p.Realm, p.Token, true)[0]
		return c.Name + "=" + c.Value
	}
	both := cookie(player) + "; " + cookie(admin)

	tests := []struct {
		name, method, path, cookie, origin string
		status                             int
		want                               string
	}{
		{"player on player route", "GET", "/player", cookie(player), "", 200, player.User.ID.String()},
		{"no cookie", "GET", "/player", "", "", 401, "UNAUTHORIZED"},
		{"player on admin route", "GET", "/admin", cookie(player), "", 401, "UNAUTHORIZED"},
		{"admin on player route", "GET", "/player", cookie(admin), "", 401, "UNAUTHORIZED"},
		{"admin on admin route", "GET", "/admin", cookie(admin), "", 200, adminUser.ID.String()},
		{"one jar, both realms: player", "GET", "/player", both, "", 200, player.User.ID.String()},
		{"one jar, both realms: admin", "GET", "/admin", both, "", 200, adminUser.ID.String()},
		{"tampered signature", "GET", "/player", strings.Replace(cookie(player), "%3D", "%3E", 1), "", 401, "UNAUTHORIZED"},
		{"POST from trusted origin", "POST", "/player", cookie(player), "http://game.example", 200, player.User.ID.String()},
		{"POST without origin", "POST", "/player", cookie(player), "", 403, auth.CodeMissingOrNullOrigin},
		{"POST from foreign origin", "POST", "/player", cookie(player), "http://evil.example", 403, auth.CodeInvalidOrigin},
		{"POST with null origin", "POST", "/player", cookie(player), "null", 403, auth.CodeMissingOrNullOrigin},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, srv.URL+tt.path, nil)
			if tt.cookie != "" {
				req.Header.Set("Cookie", tt.cookie)
			}
			if tt.origin != "" {
				req.Header.Set("Origin", tt.origin)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != tt.status || !strings.Contains(string(body), tt.want) {
				t.Fatalf("%s %s = %d %s, want %d containing %q", tt.method, tt.path, res.StatusCode, body, tt.status, tt.want)
			}
		})
	}

	// Revocation takes effect on the very next request.
	if _, err := sessions.RevokeUserSessions(ctx, player.User.ID); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", srv.URL+"/player", nil)
	req.Header.Set("Cookie", cookie(player))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 401 {
		t.Fatalf("revoked session answered %d, want 401", res.StatusCode)
	}

	// A day later the expiry slides and the cookie comes again with a full Max-Age.
	again, err := sessions.SignIn(ctx, account.RealmPlayer, "ada@example.com", "correct horse", true, auth.Client{})
	if err != nil {
		t.Fatal(err)
	}
	nowNanos.Add(int64(25 * time.Hour))
	req, _ = http.NewRequest("GET", srv.URL+"/player", nil)
	req.Header.Set("Cookie", cookie(again))
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	set := res.Header.Get("Set-Cookie")
	if res.StatusCode != 200 || !strings.HasPrefix(set, "better-auth.session_token=") || !strings.Contains(set, "Max-Age=604800") {
		t.Fatalf("after a day: %d, Set-Cookie %q; want 200 and a re-issued cookie", res.StatusCode, set)
	}
}

func TestPrincipalFromWithoutGatePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("principalFrom without a session gate did not panic")
		}
	}()
	principalFrom(httptest.NewRequest("GET", "/", nil))
}
