package httpapi_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/towerdefence/platformctl/internal/apitest"
)

// BenchmarkGetSession measures the hot path of every signed-in client:
// GET get-session with a valid cookie, through the whole middleware stack
// and the database (PostgreSQL when PLATFORM_TEST_DATABASE_URL is set),
// without the network.
func BenchmarkGetSession(b *testing.B) {
	srv := apitest.New(b, apitest.WithEnv("PLATFORM_LOG_LEVEL", "warn"))
	p := srv.SignUpPlayer(b)
	h := srv.App.Handler(nil)
	cookie := srv.App.Auth.Cookies().SessionCookieName("player") + "=" + srv.App.Auth.Cookies().Sign(p.Token)
	req := httptest.NewRequest(http.MethodGet, "/api/auth/player/get-session", nil)
	req.Header.Set("Cookie", cookie)
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || !bytes.Contains(rec.Body.Bytes(), []byte(p.User.ID.String())) {
			b.Fatalf("get-session = %d %s", rec.Code, rec.Body)
		}
	}
}

// BenchmarkSignIn measures a whole sign-in with the configured argon2id
// parameters (the defaults, OWASP's minimum), including the new session's
// insert; rate limits are off so that every iteration signs in.
func BenchmarkSignIn(b *testing.B) {
	srv := apitest.New(b, apitest.WithEnv("PLATFORM_LOG_LEVEL", "warn"),
		apitest.WithEnv("PLATFORM_RATE_LIMIT_LOGIN_IP", "off"), apitest.WithEnv("PLATFORM_RATE_LIMIT_LOGIN_ACCOUNT", "off"))
	p := srv.SignUpPlayer(b)
	h := srv.App.Handler(nil)
	body := `{"email":"` + p.User.Email + `","password":"` + p.Password + `"}`
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/api/auth/player/sign-in/email", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("sign-in = %d %s", rec.Code, rec.Body)
		}
	}
}

// BenchmarkSignInUnknownEmail is the same request for an address without
// an account: it verifies a dummy hash, so its time should match
// BenchmarkSignIn's minus the session insert.
func BenchmarkSignInUnknownEmail(b *testing.B) {
	srv := apitest.New(b, apitest.WithEnv("PLATFORM_LOG_LEVEL", "warn"),
		apitest.WithEnv("PLATFORM_RATE_LIMIT_LOGIN_IP", "off"), apitest.WithEnv("PLATFORM_RATE_LIMIT_LOGIN_ACCOUNT", "off"))
	h := srv.App.Handler(nil)
	body := `{"email":"nobody@example.com","password":"correct horse battery"}`
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/api/auth/player/sign-in/email", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusUnauthorized {
			b.Fatalf("sign-in = %d %s", rec.Code, rec.Body)
		}
	}
}
