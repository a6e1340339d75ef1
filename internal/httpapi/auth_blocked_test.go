package httpapi_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/towerdefence/platformctl/internal/apitest"
)

// rawRequest sends exactly target as the request line, so no client
// library cleans or re-encodes the path on the way, and returns the
// response.
func rawRequest(t *testing.T, srv *apitest.Server, method, target, cookie string) (*http.Response, []byte) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	req := method + " " + target + " HTTP/1.1\r\nHost: " + strings.TrimPrefix(srv.URL, "http://") +
		"\r\nOrigin: " + srv.URL + "\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n"
	if cookie != "" {
		req += "Cookie: " + cookie + "\r\n"
	}
	req += "\r\n{}"
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: method})
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	return res, body
}

// Every mount, every blocked name, every method, and every spelling of the
// path answers 404 ACCOUNT_MUTATION_BLOCKED naming the profile endpoint.
func TestBlockedPathsOverHTTP(t *testing.T) {
	t.Parallel()
	srv := apitest.New(t)
	player := srv.SignUpPlayer(t)
	cookieName := srv.App.Auth.Cookies().SessionCookieName("player")
	cookie := cookieName + "=" + srv.App.Auth.Cookies().Sign(player.Token)
	replacement := map[string]string{
		"update-user":     "/api/profile/request-profile-change",
		"change-password": "/api/profile/request-password-change",
		"change-email":    "/api/profile/request-email-change",
	}
	variants := []struct {
		name string
		make func(mount, name string) string
	}{
		{"plain", func(m, n string) string { return m + "/" + n }},
		{"trailing slash", func(m, n string) string { return m + "/" + n + "/" }},
		{"upper case", func(m, n string) string { return m + "/" + strings.ToUpper(n) }},
		{"upper-case mount", func(m, n string) string { return strings.ToUpper(m) + "/" + n }},
		{"mixed case", func(m, n string) string { return m + "/" + strings.ToUpper(n[:1]) + n[1:] }},
		{"percent-encoded letter", func(m, n string) string { return m + "/%" + hexByte(n[0]) + n[1:] }},
		{"percent-encoded hyphen", func(m, n string) string { return m + "/" + strings.Replace(n, "-", "%2D", 1) }},
		{"double-encoded", func(m, n string) string { return m + "/" + strings.Replace(n, "-", "%252D", 1) }},
		{"encoded slash", func(m, n string) string { return m + "%2F" + n }},
		{"encoded slash, lower", func(m, n string) string { return m + "%2f" + n }},
		{"doubled slash", func(m, n string) string { return m + "//" + n }},
		{"doubled slashes everywhere", func(m, n string) string { return strings.ReplaceAll(m, "/", "//") + "//" + n }},
		{"dot segment", func(m, n string) string { return m + "/./" + n }},
		{"dot-dot segment", func(m, n string) string { return m + "/x/../" + n }},
		{"encoded dot-dot", func(m, n string) string { return m + "/x/%2e%2e/" + n }},
		{"encoded backslash", func(m, n string) string { return m + "%5C" + n }},
		{"query string", func(m, n string) string { return m + "/" + n + "?x=1&callbackURL=/" }},
		{"empty query", func(m, n string) string { return m + "/" + n + "?" }},
		{"fragment-like", func(m, n string) string { return m + "/" + n + "%23x" }},
		{"encoded five times", func(m, n string) string { return m + "/" + strings.Replace(n, "-", encodeLayers('-', 5), 1) }},
		{"encoded twelve times", func(m, n string) string { return m + "/" + strings.Replace(n, "-", encodeLayers('-', 12), 1) }},
		{"doubled slash, encoded dot-dot out of the mount", func(m, n string) string { return "/api/auth//%2e%2e" + strings.TrimPrefix(m, "/api/auth") + "/" + n }},
		{"dot-dot out of /api/auth", func(m, n string) string { return "/api/auth/../" + n }},
		{"matrix parameter", func(m, n string) string { return m + "/" + n + ";a=b" }},
		{"trailing dot", func(m, n string) string { return m + "/" + n + "." }},
		{"parameter on /api", func(m, n string) string { return strings.Replace(m, "/api", "/api;x", 1) + "/" + n }},
		{"parameter on /auth", func(m, n string) string { return strings.Replace(m, "/auth", "/auth;x", 1) + "/" + n }},
		{"encoded parameter on /auth", func(m, n string) string { return strings.Replace(m, "/auth", "/auth%3bx", 1) + "/" + n }},
	}
	methods := []string{"GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD", "PROPFIND"}
	for _, mount := range []string{"/api/auth/player", "/api/auth/admin", "/api/auth"} {
		for name, use := range replacement {
			for _, v := range variants {
				for _, method := range methods {
					target := v.make(mount, name)
					res, body := rawRequest(t, srv, method, target, cookie)
					if res.StatusCode != http.StatusNotFound {
						t.Errorf("%s %s (%s) = %d %s, want 404", method, target, v.name, res.StatusCode, body)
						continue
					}
					if method == "HEAD" {
						continue // no body to read
					}
					var e struct {
						Code, Message string
						Details       struct{ Use string }
					}
					if err := json.Unmarshal(body, &e); err != nil || e.Code != "ACCOUNT_MUTATION_BLOCKED" ||
						e.Details.Use != use || !strings.Contains(e.Message, use) {
						t.Errorf("%s %s (%s) = %s, want ACCOUNT_MUTATION_BLOCKED naming %s", method, target, v.name, body, use)
					}
				}
			}
		}
	}
	// The player is untouched by all of that.
	if s := getSession(t, player.Client, "/api/auth/player"); s == nil || s.User.Name != player.User.Name {
		t.Fatalf("player after the blocked requests: %+v", s)
	}
}

func hexByte(c byte) string {
	const digits = "0123456789ABCDEF"
	return string([]byte{digits[c>>4], digits[c&15]})
}

// encodeLayers percent-encodes the byte c n times over: %2D, %252D,
// %25252D, ...
func encodeLayers(c byte, n int) string {
	return "%" + strings.Repeat("25", n-1) + strings.ToUpper(hexByte(c))
}

// Unclean paths to real routes answer 404, as better-auth's router does,
// rather than the mux's redirect.
func TestUncleanAuthPathsAreNotFound(t *testing.T) {
	t.Parallel()
	srv := apitest.New(t)
	for _, target := range []string{"/api/auth/player//get-session", "/api/auth/player/./ok", "/api/auth/player/ok/", "/api/auth/x/../player/ok",
		"/api/auth//%2e%2e/player/get-session", "/api/auth/../player/bootstrap", "/api/auth/%2e%2e/%2e%2e/api/health", "//api/auth/player/get-session",
		"/api/auth/player/%2e/get-session"} {
		res, body := rawRequest(t, srv, "GET", target, "")
		if res.StatusCode != http.StatusNotFound || !strings.Contains(string(body), `"NOT_FOUND"`) {
			t.Errorf("GET %s = %d %s, want 404 NOT_FOUND", target, res.StatusCode, body)
		}
	}
}
