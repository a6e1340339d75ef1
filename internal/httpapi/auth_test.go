package httpapi_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/towerdefence/platformctl/internal/apitest"
)

type user struct {
	ID            string  `json:"id"`
	Email         string  `json:"email"`
	Name          string  `json:"name"`
	Nickname      string  `json:"nickname"`
	EmailVerified bool    `json:"emailVerified"`
	Image         *string `json:"image"`
	Role          string  `json:"role"`
	CreatedAt     string  `json:"createdAt"`
	UpdatedAt     string  `json:"updatedAt"`
}

type session struct {
	ID        string `json:"id"`
	Token     string `json:"token"`
	UserID    string `json:"userId"`
	ExpiresAt string `json:"expiresAt"`
	IPAddress string `json:"ipAddress"`
	UserAgent string `json:"userAgent"`
}

type sessionAndUser struct {
	Session session `json:"session"`
	User    user    `json:"user"`
}

func signUpBody(email, nickname string) map[string]any {
	return map[string]any{"name": "Player " + nickname, "nickname": nickname, "email": email, "password": apitest.DefaultPassword}
}

// cookieValue returns the value of the named cookie in c's jar, or "".
func cookieValue(t *testing.T, srv *apitest.Server, c *apitest.Client, name string) string {
	t.Helper()
	u, _ := url.Parse(srv.URL)
	for _, ck := range c.HTTP.Jar.Cookies(u) {
		if ck.Name == name {
			return ck.Value
		}
	}
	return ""
}

func setCookieLine(res *apitest.Response, name string) string {
	for _, line := range res.Header.Values("Set-Cookie") {
		if strings.HasPrefix(line, name+"=") {
			return line
		}
	}
	return ""
}

func getSession(t *testing.T, c *apitest.Client, mount string) *sessionAndUser {
	t.Helper()
	res := c.Do("GET", mount+"/get-session", nil)
	if res.Status != 200 {
		t.Fatalf("get-session = %d %s", res.Status, res.Body)
	}
	if strings.TrimSpace(string(res.Body)) == "null" {
		return nil
	}
	var s sessionAndUser
	res.Decode(t, &s)
	return &s
}

// Every flow of a mount, over HTTP with a cookie jar, on the player mount
// and on the legacy mount that serves the same realm.
func TestPlayerSessionFlows(t *testing.T) {
	t.Parallel()
	for _, mount := range []string{"/api/auth/player", "/api/auth"} {
		t.Run(mount, func(t *testing.T) {
			srv := apitest.New(t)
			c := srv.Client(t)

			if ok := c.Do("GET", mount+"/ok", nil); ok.Status != 200 || !strings.Contains(string(ok.Body), `"ok":true`) {
				t.Fatalf("ok = %d %s", ok.Status, ok.Body)
			}
			if s := getSession(t, c, mount); s != nil {
				t.Fatalf("anonymous get-session = %+v, want null", s)
			}

			res := c.Do("POST", mount+"/sign-up/email", signUpBody("  Ada@Example.com", "Ada_L"))
			if res.Status != 200 {
				t.Fatalf("sign-up = %d %s", res.Status, res.Body)
			}
			var up struct {
				Token string `json:"token"`
				User  user   `json:"user"`
			}
			res.Decode(t, &up)
			if up.User.Email != "ada@example.com" || up.User.Nickname != "Ada_L" || up.User.EmailVerified || up.User.Image != nil || len(up.Token) != 43 {
				t.Fatalf("sign-up body = %s", res.Body)
			}
			line := setCookieLine(res, "better-auth.session_token")
			for _, attr := range []string{"Path=/", "Max-Age=604800", "HttpOnly", "SameSite=Lax"} {
				if !strings.Contains(line, attr) {
					t.Errorf("session cookie %q lacks %s", line, attr)
				}
			}
			if strings.Contains(line, "Secure") {
				t.Errorf("session cookie %q is Secure on an http base URL", line)
			}

			// The cookie is token.HMAC-SHA256(secret, token), verifiable by anyone with the secret.
			raw, _ := url.QueryUnescape(cookieValue(t, srv, c, "better-auth.session_token"))
			tok, sig, _ := strings.Cut(raw, ".")
			mac := hmac.New(sha256.New, []byte(apitest.Secret))
			mac.Write([]byte(tok))
			if tok != up.Token || sig != base64.StdEncoding.EncodeToString(mac.Sum(nil)) {
				t.Fatalf("cookie %q is not token.base64(HMAC-SHA256(secret, token)) for token %q", raw, up.Token)
			}

			s := getSession(t, c, mount)
			if s == nil || s.User.ID != up.User.ID || s.Session.Token != up.Token || s.Session.UserID != up.User.ID || s.Session.IPAddress != "127.0.0.1" {
				t.Fatalf("get-session after sign-up = %+v", s)
			}
			if res := c.Do("GET", mount+"/get-session", nil); res.Header.Get("Cache-Control") != "no-store" {
				t.Errorf("get-session Cache-Control = %q", res.Header.Get("Cache-Control"))
			}

			// A second device signs in; the first lists both and revokes the second by its handle.
			other := srv.Client(t)
			in := other.Do("POST", mount+"/sign-in/email", map[string]any{"email": "ADA@example.com", "password": apitest.DefaultPassword})
			var inBody struct {
				Redirect bool   `json:"redirect"`
				Token    string `json:"token"`
				User     user   `json:"user"`
			}
			in.Decode(t, &inBody)
			if in.Status != 200 || inBody.Redirect || inBody.User.ID != up.User.ID || strings.Contains(string(in.Body), `"url"`) {
				t.Fatalf("sign-in = %d %s", in.Status, in.Body)
			}
			var list []session
			lr := c.Do("GET", mount+"/list-sessions", nil)
			lr.Decode(t, &list)
			if lr.Status != 200 || len(list) != 2 {
				t.Fatalf("list-sessions = %d %s", lr.Status, lr.Body)
			}
			var handle string
			for _, ls := range list {
				if ls.Token != up.Token {
					handle = ls.Token
				}
			}
			if r := c.Do("POST", mount+"/revoke-session", map[string]string{"token": handle}); r.Status != 200 || !strings.Contains(string(r.Body), `"status":true`) {
				t.Fatalf("revoke-session = %d %s", r.Status, r.Body)
			}
			// Revocation takes effect on the very next request.
			if s := getSession(t, other, mount); s != nil {
				t.Fatalf("revoked device still has a session: %+v", s)
			}
			if r := other.Do("GET", mount+"/list-sessions", nil); r.Status != 401 || r.Code() != "UNAUTHORIZED" {
				t.Fatalf("list-sessions with a revoked session = %d %s", r.Status, r.Body)
			}

			// rememberMe false: a browser-session cookie plus dont_remember.
			short := srv.Client(t)
			sr := short.Do("POST", mount+"/sign-in/email", map[string]any{"email": "ada@example.com", "password": apitest.DefaultPassword, "rememberMe": false})
			if sr.Status != 200 || strings.Contains(setCookieLine(sr, "better-auth.session_token"), "Max-Age") || setCookieLine(sr, "better-auth.dont_remember") == "" {
				t.Fatalf("rememberMe=false: %d, cookies %v", sr.Status, sr.Header.Values("Set-Cookie"))
			}
			if r := c.Do("POST", mount+"/revoke-other-sessions", nil); r.Status != 200 {
				t.Fatalf("revoke-other-sessions = %d %s", r.Status, r.Body)
			}
			if getSession(t, short, mount) != nil || getSession(t, c, mount) == nil {
				t.Fatal("revoke-other-sessions ended the wrong sessions")
			}

			// Sign-out clears the cookies and ends the session.
			out := c.Do("POST", mount+"/sign-out", map[string]any{})
			if out.Status != 200 || !strings.Contains(string(out.Body), `"success":true`) {
				t.Fatalf("sign-out = %d %s", out.Status, out.Body)
			}
			for _, name := range []string{"better-auth.session_token", "better-auth.session_data", "better-auth.dont_remember"} {
				if l := setCookieLine(out, name); !strings.Contains(l, "Max-Age=0") {
					t.Errorf("sign-out does not clear %s: %q", name, l)
				}
			}
			if getSession(t, c, mount) != nil {
				t.Fatal("session survives sign-out")
			}
			if r := c.Do("POST", mount+"/sign-out", nil); r.Status != 200 {
				t.Fatalf("sign-out without a session = %d %s", r.Status, r.Body)
			}

			// revoke-sessions ends everything and clears the caller's cookies.
			a, b := srv.Client(t), srv.Client(t)
			for _, cl := range []*apitest.Client{a, b} {
				if r := cl.Do("POST", mount+"/sign-in/email", map[string]any{"email": "ada@example.com", "password": apitest.DefaultPassword}); r.Status != 200 {
					t.Fatalf("sign-in = %d %s", r.Status, r.Body)
				}
			}
			if r := a.Do("POST", mount+"/revoke-sessions", nil); r.Status != 200 || !strings.Contains(setCookieLine(r, "better-auth.session_token"), "Max-Age=0") {
				t.Fatalf("revoke-sessions = %d %v", r.Status, r.Header.Values("Set-Cookie"))
			}
			if getSession(t, b, mount) != nil {
				t.Fatal("revoke-sessions left another session alive")
			}
		})
	}
}

func TestSignInWithCallbackURL(t *testing.T) {
	t.Parallel()
	srv := apitest.New(t)
	p := srv.SignUpPlayer(t)
	c := srv.Client(t)
	res := c.Do("POST", "/api/auth/player/sign-in/email", map[string]any{"email": p.User.Email, "password": p.Password, "callbackURL": "/lobby"})
	var body struct {
		Redirect bool   `json:"redirect"`
		URL      string `json:"url"`
	}
	res.Decode(t, &body)
	if res.Status != 200 || !body.Redirect || body.URL != "/lobby" || res.Header.Get("Location") != "/lobby" {
		t.Fatalf("sign-in with callbackURL = %d %s, Location %q", res.Status, res.Body, res.Header.Get("Location"))
	}
}

func TestSignUpAndSignInErrors(t *testing.T) {
	t.Parallel()
	srv := apitest.New(t, apitest.WithEnv("PLATFORM_RATE_LIMIT_LOGIN_IP", "off"), apitest.WithEnv("PLATFORM_RATE_LIMIT_LOGIN_ACCOUNT", "off"))
	if r := srv.Client(t).Do("POST", "/api/auth/player/sign-up/email", signUpBody("ada@example.com", "Ada")); r.Status != 200 {
		t.Fatalf("sign-up = %d %s", r.Status, r.Body)
	}
	c := srv.Client(t) // anonymous
	long := strings.Repeat("p", 129)
	tests := []struct {
		name   string
		path   string
		body   any
		status int
		code   string
	}{
		{"missing name", "sign-up/email", map[string]any{"nickname": "bob", "email": "b@example.com", "password": "12345678"}, 400, "VALIDATION_ERROR"},
		{"missing nickname", "sign-up/email", map[string]any{"name": "Bob", "email": "b@example.com", "password": "12345678"}, 400, "VALIDATION_ERROR"},
		{"missing email", "sign-up/email", map[string]any{"name": "Bob", "nickname": "bob", "password": "12345678"}, 400, "VALIDATION_ERROR"},
		{"missing password", "sign-up/email", map[string]any{"name": "Bob", "nickname": "bob", "email": "b@example.com"}, 400, "VALIDATION_ERROR"},
		{"no body", "sign-up/email", nil, 400, "VALIDATION_ERROR"},
		{"bad email", "sign-up/email", signUpBody("not-an-email", "bob"), 400, "VALIDATION_ERROR"},
		{"bad nickname", "sign-up/email", signUpBody("b@example.com", "b!"), 400, "VALIDATION_ERROR"},
		{"nickname of the wrong type", "sign-up/email", map[string]any{"name": "Bob", "nickname": 12345, "email": "b@example.com", "password": "12345678"}, 400, "VALIDATION_ERROR"},
		{"short password", "sign-up/email", map[string]any{"name": "Bob", "nickname": "bob", "email": "b@example.com", "password": "1234567"}, 400, "PASSWORD_TOO_SHORT"},
		{"long password", "sign-up/email", map[string]any{"name": "Bob", "nickname": "bob", "email": "b@example.com", "password": long}, 400, "PASSWORD_TOO_LONG"},
		{"duplicate email, other case", "sign-up/email", signUpBody(" ADA@example.com ", "bob"), 422, "USER_ALREADY_EXISTS_USE_ANOTHER_EMAIL"},
		{"duplicate nickname, other case", "sign-up/email", signUpBody("b@example.com", "aDA"), 422, "NICKNAME_TAKEN"},
		{"malformed JSON", "sign-up/email", `{"name":`, 400, "INVALID_JSON"},
		{"JSON array", "sign-up/email", `[1,2]`, 400, "INVALID_JSON"},
		{"wrong password", "sign-in/email", map[string]any{"email": "ada@example.com", "password": "wrong password"}, 401, "INVALID_EMAIL_OR_PASSWORD"},
		{"unknown email", "sign-in/email", map[string]any{"email": "nobody@example.com", "password": "wrong password"}, 401, "INVALID_EMAIL_OR_PASSWORD"},
		{"sign-in missing password", "sign-in/email", map[string]any{"email": "ada@example.com"}, 400, "VALIDATION_ERROR"},
		{"sign-in bad email", "sign-in/email", map[string]any{"email": "ada", "password": "x"}, 400, "VALIDATION_ERROR"},
		{"sign-in long password", "sign-in/email", map[string]any{"email": "ada@example.com", "password": long}, 400, "PASSWORD_TOO_LONG"},
		{"revoke-session without a session", "revoke-session", map[string]any{"token": "x"}, 401, "UNAUTHORIZED"},
		{"list-sessions without a session", "list-sessions", nil, 401, "UNAUTHORIZED"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := "POST"
			if tt.path == "list-sessions" {
				method = "GET"
			}
			res := c.Do(method, "/api/auth/player/"+tt.path, tt.body)
			if res.Status != tt.status || res.Code() != tt.code {
				t.Fatalf("%s %s = %d %s, want %d %s", method, tt.path, res.Status, res.Body, tt.status, tt.code)
			}
		})
	}
	// Wrong password and unknown email are indistinguishable in the body too.
	a := c.Do("POST", "/api/auth/player/sign-in/email", map[string]any{"email": "ada@example.com", "password": "wrong password"})
	b := c.Do("POST", "/api/auth/player/sign-in/email", map[string]any{"email": "nobody@example.com", "password": "wrong password"})
	if string(a.Body) != string(b.Body) {
		t.Fatalf("bodies differ: %s vs %s", a.Body, b.Body)
	}
	// Not JSON at all.
	req, _ := http.NewRequest("POST", srv.URL+"/api/auth/player/sign-in/email", strings.NewReader("email=a"))
	req.Header.Set("Content-Type", "text/plain")
	req.Header.Set("Origin", srv.URL)
	if res := c.Send(req); res.Status != 415 || res.Code() != "UNSUPPORTED_MEDIA_TYPE" {
		t.Fatalf("text/plain body = %d %s", res.Status, res.Body)
	}
}

// 50 concurrent sign-ups with one nickname (in different letter cases),
// from 50 addresses so that hashing admission lets each through: exactly
// one succeeds and every other gets 422 NICKNAME_TAKEN (or 503 when the
// hashing queue is full).
func TestConcurrentSignUpsWithOneNickname(t *testing.T) {
	t.Parallel()
	srv := apitest.New(t, apitest.WithEnv("PLATFORM_RATE_LIMIT_LOGIN_IP", "off"),
		apitest.WithEnv("PLATFORM_TRUSTED_PROXIES", "127.0.0.1/32"), apitest.WithEnv("PLATFORM_HASH_WAIT", "30s"))
	const n = 50
	statuses := make([]int, n)
	codes := make([]string, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		c := srv.Client(t)
		c.Header.Set("X-Forwarded-For", fmt.Sprintf("198.51.100.%d", i+1))
		nick := []string{"Racer", "racer", "RACER", "rAcEr"}[i%4]
		wg.Go(func() {
			<-start
			res := c.Do("POST", "/api/auth/player/sign-up/email", signUpBody(fmt.Sprintf("racer%d@example.com", i), nick))
			statuses[i], codes[i] = res.Status, res.Code()
		})
	}
	close(start)
	wg.Wait()
	wins := 0
	for i := range n {
		switch {
		case statuses[i] == 200:
			wins++
		case statuses[i] == 503 && codes[i] == "SERVICE_UNAVAILABLE":
			// hashing admission's queue was full: refused, never a second winner
		case statuses[i] != 422 || codes[i] != "NICKNAME_TAKEN":
			t.Errorf("sign-up %d = %d %s, want 422 NICKNAME_TAKEN", i, statuses[i], codes[i])
		}
	}
	if wins != 1 {
		t.Fatalf("%d sign-ups succeeded, want exactly 1", wins)
	}
}
