package httpapi_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/towerdefence/platformctl/internal/apitest"
	"github.com/towerdefence/platformctl/internal/auth"
)

func TestCSRFOriginChecks(t *testing.T) {
	t.Parallel()
	srv := apitest.New(t, apitest.WithEnv("PLATFORM_TRUSTED_ORIGINS", "https://play.example.com"))
	p := srv.SignUpPlayer(t)
	creds := map[string]any{"email": p.User.Email, "password": p.Password}
	tests := []struct {
		name    string
		path    string
		body    any
		headers map[string]string
		signed  bool // send the player's session cookie
		status  int
		code    string
	}{
		{"sign-out, cookie, no origin", "sign-out", nil, nil, true, 403, "MISSING_OR_NULL_ORIGIN"},
		{"sign-out, cookie, null origin", "sign-out", nil, map[string]string{"Origin": "null"}, true, 403, "MISSING_OR_NULL_ORIGIN"},
		{"sign-out, cookie, foreign origin", "sign-out", nil, map[string]string{"Origin": "https://evil.example"}, true, 403, "INVALID_ORIGIN"},
		{"revoke-sessions, cookie, foreign origin", "revoke-sessions", nil, map[string]string{"Origin": "https://evil.example"}, true, 403, "INVALID_ORIGIN"},
		{"revoke-sessions, cookie, foreign referer", "revoke-sessions", nil, map[string]string{"Referer": "https://evil.example/page"}, true, 403, "INVALID_ORIGIN"},
		{"revoke-other-sessions, cookie, trusted extra origin", "revoke-other-sessions", nil, map[string]string{"Origin": "https://play.example.com"}, true, 200, ""},
		{"revoke-other-sessions, cookie, trusted referer", "revoke-other-sessions", nil, map[string]string{"Referer": srv.URL + "/game"}, true, 200, ""},
		{"sign-in, no cookie, no origin (a script)", "sign-in/email", creds, nil, false, 200, ""},
		{"sign-in, no cookie, foreign origin", "sign-in/email", creds, map[string]string{"Origin": "https://evil.example"}, false, 403, "INVALID_ORIGIN"},
		{"sign-in, fetch metadata, no origin", "sign-in/email", creds, map[string]string{"Sec-Fetch-Mode": "cors", "Sec-Fetch-Site": "same-origin"}, false, 403, "MISSING_OR_NULL_ORIGIN"},
		{"sign-in, cross-site form navigation", "sign-in/email", creds, map[string]string{"Sec-Fetch-Mode": "navigate", "Sec-Fetch-Site": "cross-site", "Origin": srv.URL}, false, 403, "CROSS_SITE_NAVIGATION_LOGIN_BLOCKED"},
		{"sign-in, cookie, no origin", "sign-in/email", creds, nil, true, 403, "MISSING_OR_NULL_ORIGIN"},
		{"request-password-reset, cookie, foreign origin", "request-password-reset", map[string]any{"email": p.User.Email}, map[string]string{"Origin": "https://evil.example"}, true, 403, "INVALID_ORIGIN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := srv.Client(t)
			c.Origin = ""
			if tt.signed {
				c = srv.Client(t)
				c.Origin = ""
				c.AddSession(mustPrincipal(t, srv, p))
			}
			for k, v := range tt.headers {
				c.Header.Set(k, v)
			}
			res := c.Do("POST", "/api/auth/player/"+tt.path, tt.body)
			if res.Status != tt.status || (tt.code != "" && res.Code() != tt.code) {
				t.Fatalf("POST %s = %d %s, want %d %s", tt.path, res.Status, res.Body, tt.status, tt.code)
			}
		})
	}
	// A refused sign-out left the session alive.
	if s := getSession(t, p.Client, "/api/auth/player"); s == nil {
		t.Fatal("a CSRF-refused request ended the session")
	}
}

func TestCallbackURLAllowList(t *testing.T) {
	t.Parallel()
	srv := apitest.New(t, apitest.WithEnv("PLATFORM_TRUSTED_ORIGINS", "https://play.example.com"))
	p := srv.SignUpPlayer(t)
	c := srv.Client(t)
	signIn := func(cb string) *apitest.Response {
		return c.Do("POST", "/api/auth/player/sign-in/email", map[string]any{"email": p.User.Email, "password": p.Password, "callbackURL": cb})
	}
	for _, cb := range []string{"/lobby", "/a/b?c=d", "https://play.example.com/welcome", srv.URL + "/x"} {
		if res := signIn(cb); res.Status != 200 {
			t.Errorf("callbackURL %q = %d %s, want allowed", cb, res.Status, res.Body)
		}
	}
	for _, cb := range []string{"https://evil.example/", "//evil.example", "/\\evil.example", "https://play.example.com.evil.example/",
		"javascript:alert(1)", "/%2F%2Fevil.example", "https://play.example.com@evil.example/", "relative"} {
		if res := signIn(cb); res.Status != 403 || res.Code() != "INVALID_CALLBACK_URL" {
			t.Errorf("callbackURL %q = %d %s, want 403 INVALID_CALLBACK_URL", cb, res.Status, res.Body)
		}
	}
	// A refused sign-up creates nothing.
	res := c.Do("POST", "/api/auth/player/sign-up/email", map[string]any{"name": "E", "nickname": "eve", "email": "eve@example.com",
		"password": apitest.DefaultPassword, "callbackURL": "https://evil.example"})
	if res.Status != 403 || res.Code() != "INVALID_CALLBACK_URL" {
		t.Fatalf("sign-up with a foreign callbackURL = %d %s", res.Status, res.Body)
	}
	if r := c.Do("POST", "/api/auth/player/sign-in/email", map[string]any{"email": "eve@example.com", "password": apitest.DefaultPassword}); r.Status != 401 {
		t.Fatalf("refused sign-up created the account: sign-in = %d", r.Status)
	}
	if r := c.Do("POST", "/api/auth/player/request-password-reset", map[string]any{"email": p.User.Email, "redirectTo": "https://evil.example/reset"}); r.Status != 403 || r.Code() != "INVALID_REDIRECT_URL" {
		t.Fatalf("request-password-reset with a foreign redirectTo = %d %s", r.Status, r.Body)
	}
	if r := c.Do("POST", "/api/auth/player/send-verification-email", map[string]any{"email": p.User.Email, "callbackURL": "https://evil.example/"}); r.Status != 403 || r.Code() != "INVALID_CALLBACK_URL" {
		t.Fatalf("send-verification-email with a foreign callbackURL = %d %s", r.Status, r.Body)
	}
	if r := c.Do("GET", "/api/auth/player/verify-email?token=x&callbackURL=https://evil.example/", nil); r.Status != 403 || r.Code() != "INVALID_CALLBACK_URL" {
		t.Fatalf("verify-email with a foreign callbackURL = %d %s", r.Status, r.Body)
	}
	if r := c.Do("GET", "/api/auth/player/reset-password/x?callbackURL=//evil.example", nil); r.Status != 403 || r.Code() != "INVALID_CALLBACK_URL" {
		t.Fatalf("reset-password link with a foreign callbackURL = %d %s", r.Status, r.Body)
	}
}

// One browser signed in to both realms: each mount sees only its own
// session, and a player cookie never opens the admin realm.
func TestRealmSeparation(t *testing.T) {
	t.Parallel()
	srv := apitest.New(t)
	player := srv.SignUpPlayer(t)
	admin := srv.CreateAdmin(t)
	jar := player.Client

	if r := jar.Do("GET", "/api/auth/admin/list-sessions", nil); r.Status != 401 {
		t.Fatalf("player cookie on admin list-sessions = %d %s", r.Status, r.Body)
	}
	if s := getSession(t, jar, "/api/auth/admin"); s != nil {
		t.Fatalf("player cookie on admin get-session = %+v", s)
	}
	if r := jar.Do("POST", "/api/auth/admin/sign-in/email", map[string]any{"email": player.User.Email, "password": player.Password}); r.Status != 401 {
		t.Fatalf("player credentials on the admin mount = %d %s", r.Status, r.Body)
	}
	if r := jar.Do("POST", "/api/auth/admin/sign-up/email", signUpBody("new@example.com", "newbie")); r.Status != 404 {
		t.Fatalf("admin sign-up = %d %s, want 404", r.Status, r.Body)
	}
	// The same token under the admin cookie name is no admin session either.
	forged := srv.Client(t)
	u := mustPrincipal(t, srv, player)
	u.Realm = "admin"
	forged.AddSession(u)
	if s := getSession(t, forged, "/api/auth/admin"); s != nil {
		t.Fatalf("player token in the admin cookie = %+v", s)
	}

	res := jar.Do("POST", "/api/auth/admin/sign-in/email", map[string]any{"email": admin.User.Email, "password": admin.Password})
	if res.Status != 200 || setCookieLine(res, "platform-admin.session_token") == "" {
		t.Fatalf("admin sign-in = %d %v", res.Status, res.Header.Values("Set-Cookie"))
	}
	ps, as := getSession(t, jar, "/api/auth/player"), getSession(t, jar, "/api/auth/admin")
	if ps == nil || as == nil || ps.User.ID != player.User.ID.String() || as.User.ID != admin.User.ID.String() || as.User.Role != "admin" || ps.User.Role != "" {
		t.Fatalf("one jar, both realms: player %+v, admin %+v", ps, as)
	}
	if r := jar.Do("POST", "/api/auth/admin/sign-out", nil); r.Status != 200 {
		t.Fatalf("admin sign-out = %d", r.Status)
	}
	if getSession(t, jar, "/api/auth/admin") != nil || getSession(t, jar, "/api/auth/player") == nil {
		t.Fatal("admin sign-out did not leave exactly the player session")
	}
}

func TestSecureCookiesOnHTTPSBaseURL(t *testing.T) {
	t.Parallel()
	srv := apitest.New(t, apitest.WithEnv("PLATFORM_BASE_URL", "https://play.example.com"))
	c := srv.Client(t)
	c.Origin = "https://play.example.com"
	res := c.Do("POST", "/api/auth/player/sign-up/email", signUpBody("ada@example.com", "ada"))
	line := setCookieLine(res, "__Secure-better-auth.session_token")
	if res.Status != 200 || !strings.Contains(line, "Secure") || !strings.Contains(line, "HttpOnly") {
		t.Fatalf("sign-up on https = %d, Set-Cookie %v", res.Status, res.Header.Values("Set-Cookie"))
	}
	// Read back by hand (the jar keeps Secure cookies off plain http).
	req, _ := http.NewRequest("GET", srv.URL+"/api/auth/player/get-session", nil)
	req.Header.Set("Cookie", strings.SplitN(line, ";", 2)[0])
	if r := c.Send(req); r.Status != 200 || !strings.Contains(string(r.Body), "ada@example.com") {
		t.Fatalf("get-session with the __Secure- cookie = %d %s", r.Status, r.Body)
	}
}

func TestRateLimits(t *testing.T) {
	t.Parallel()
	wrong := func(email string) map[string]any { return map[string]any{"email": email, "password": "wrong password"} }
	t.Run("per IP, get-session exempt", func(t *testing.T) {
		srv := apitest.New(t, apitest.WithEnv("PLATFORM_RATE_LIMIT_LOGIN_IP", "3/1m"), apitest.WithEnv("PLATFORM_RATE_LIMIT_LOGIN_ACCOUNT", "off"))
		p := srv.SignUpPlayer(t)
		c := srv.Client(t)
		for i := range 3 {
			// Spoofed X-Forwarded-For is ignored without trusted proxies.
			c.Header.Set("X-Forwarded-For", "203.0.113."+strconv.Itoa(i))
			if r := c.Do("POST", "/api/auth/player/sign-in/email", wrong(p.User.Email)); r.Status != 401 {
				t.Fatalf("attempt %d = %d %s", i+1, r.Status, r.Body)
			}
		}
		c.Header.Set("X-Forwarded-For", "198.51.100.9")
		r := c.Do("POST", "/api/auth/player/sign-in/email", wrong("someone-else@example.com"))
		secs, _ := strconv.Atoi(r.Header.Get("Retry-After"))
		if r.Status != 429 || r.Code() != "RATE_LIMITED" || secs < 1 || secs > 20 || r.Header.Get("X-Retry-After") != r.Header.Get("Retry-After") {
			t.Fatalf("4th attempt = %d %s, Retry-After %q X-Retry-After %q", r.Status, r.Body, r.Header.Get("Retry-After"), r.Header.Get("X-Retry-After"))
		}
		var body struct {
			Details struct {
				RetryAfterSeconds int `json:"retryAfterSeconds"`
			} `json:"details"`
		}
		if r.Decode(t, &body); body.Details.RetryAfterSeconds != secs {
			t.Fatalf("details.retryAfterSeconds = %d, want %d as in Retry-After: %s", body.Details.RetryAfterSeconds, secs, r.Body)
		}
		// Sign-up has its own budget; reads are never limited.
		for range 50 {
			if r := p.Client.Do("GET", "/api/auth/player/get-session", nil); r.Status != 200 {
				t.Fatalf("get-session was limited: %d", r.Status)
			}
		}
	})
	t.Run("per account", func(t *testing.T) {
		srv := apitest.New(t, apitest.WithEnv("PLATFORM_RATE_LIMIT_LOGIN_IP", "off"), apitest.WithEnv("PLATFORM_RATE_LIMIT_LOGIN_ACCOUNT", "2/1m"))
		a, b := srv.SignUpPlayer(t), srv.SignUpPlayer(t)
		c := srv.Client(t)
		for range 2 {
			c.Do("POST", "/api/auth/player/sign-in/email", wrong(a.User.Email))
		}
		// The right password does not get past a spent account budget either,
		// in any letter case of the address.
		if r := c.Do("POST", "/api/auth/player/sign-in/email", map[string]any{"email": strings.ToUpper(a.User.Email), "password": a.Password}); r.Status != 429 {
			t.Fatalf("3rd attempt on the account = %d %s", r.Status, r.Body)
		}
		if r := c.Do("POST", "/api/auth/player/sign-in/email", map[string]any{"email": b.User.Email, "password": b.Password}); r.Status != 200 {
			t.Fatalf("another account = %d %s", r.Status, r.Body)
		}
	})
	t.Run("X-Forwarded-For from a trusted proxy", func(t *testing.T) {
		srv := apitest.New(t, apitest.WithEnv("PLATFORM_TRUSTED_PROXIES", "127.0.0.1"),
			apitest.WithEnv("PLATFORM_RATE_LIMIT_LOGIN_IP", "1/1m"), apitest.WithEnv("PLATFORM_RATE_LIMIT_LOGIN_ACCOUNT", "off"))
		p := srv.SignUpPlayer(t)
		c := srv.Client(t)
		c.Header.Set("X-Forwarded-For", "203.0.113.7")
		if r := c.Do("POST", "/api/auth/player/sign-in/email", map[string]any{"email": p.User.Email, "password": p.Password}); r.Status != 200 {
			t.Fatalf("first client = %d %s", r.Status, r.Body)
		}
		if s := getSession(t, c, "/api/auth/player"); s == nil || s.Session.IPAddress != "203.0.113.7" {
			t.Fatalf("session IP = %+v, want the forwarded client", s)
		}
		if r := c.Do("POST", "/api/auth/player/sign-in/email", wrong(p.User.Email)); r.Status != 429 {
			t.Fatalf("same forwarded client again = %d", r.Status)
		}
		// A client-supplied entry left of the proxy's is not believed.
		c.Header.Set("X-Forwarded-For", "198.51.100.1, 203.0.113.7")
		if r := c.Do("POST", "/api/auth/player/sign-in/email", wrong(p.User.Email)); r.Status != 429 {
			t.Fatalf("spoofed left-most entry escaped the limit: %d", r.Status)
		}
		c.Header.Set("X-Forwarded-For", "203.0.113.8")
		if r := c.Do("POST", "/api/auth/player/sign-in/email", wrong(p.User.Email)); r.Status != 401 {
			t.Fatalf("another forwarded client = %d %s", r.Status, r.Body)
		}
	})
	t.Run("mail per account", func(t *testing.T) {
		srv := apitest.New(t, apitest.WithEnv("PLATFORM_RATE_LIMIT_MAIL_ACCOUNT", "1/1m"))
		p := srv.SignUpPlayer(t)
		c := srv.Client(t)
		if r := c.Do("POST", "/api/auth/player/request-password-reset", map[string]any{"email": p.User.Email}); r.Status != 200 {
			t.Fatalf("first reset request = %d %s", r.Status, r.Body)
		}
		if r := c.Do("POST", "/api/auth/player/request-password-reset", map[string]any{"email": p.User.Email}); r.Status != 429 {
			t.Fatalf("second reset request = %d %s", r.Status, r.Body)
		}
		if r := c.Do("POST", "/api/auth/player/send-verification-email", map[string]any{"email": p.User.Email}); r.Status != 200 {
			t.Fatalf("verification mail has its own budget: %d %s", r.Status, r.Body)
		}
	})
}

// mustPrincipal is what AddSession needs to put a's session in another jar.
func mustPrincipal(t *testing.T, srv *apitest.Server, a *apitest.Account) *auth.Principal {
	t.Helper()
	return &auth.Principal{Realm: a.User.Realm, User: a.User, Token: a.Token}
}
