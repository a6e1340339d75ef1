// Package oidctest runs a real OpenID Provider on a loopback port for
// tests: zitadel/oidc's certified provider with its example login form and
// in-memory storage. Tests sign users in by driving the login form over
// HTTP, as a browser would.
package oidctest

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
)

// Password is every test user's password.
const Password = "verysecure"

// User is an account at the provider.
type User struct {
	ID            string `json:"ID"`
	Username      string `json:"Username"`
	Password      string `json:"Password"`
	FirstName     string `json:"FirstName"`
	LastName      string `json:"LastName"`
	Email         string `json:"Email"`
	EmailVerified bool   `json:"EmailVerified"`
}

// Client is a client registered at the provider.
type Client struct {
	ID, Secret  string
	RedirectURI string
}

// Provider is a running OpenID Provider.
type Provider struct {
	// Issuer is the provider's issuer URL (with its trailing slash).
	Issuer  string
	srv     *httptest.Server
	clients map[string]*storage.Client
	busy    atomic.Int64
}

// Start runs a provider with users until tb ends; Register adds clients.
func Start(tb testing.TB, users []User) *Provider {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	issuer := "http://" + ln.Addr().String() + "/"
	byID := make(map[string]User, len(users))
	for _, u := range users {
		u.Password = Password
		byID[u.ID] = u
	}
	raw, err := json.Marshal(byID)
	if err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(tb.TempDir(), "users.json")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		tb.Fatal(err)
	}
	userStore, err := storage.StoreFromFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	registered := map[string]*storage.Client{}
	p := &Provider{Issuer: issuer, clients: registered}
	op := exampleop.SetupServer(issuer, storage.NewStorageWithClients(userStore, registered), nil, false)
	p.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		op.ServeHTTP(w, r)
		p.busy.Add(int64(time.Since(start)))
	}))
	p.srv.Listener.Close()
	p.srv.Listener = ln
	p.srv.Start()
	tb.Cleanup(p.srv.Close)
	return p
}

// Busy is how long the provider has spent answering requests so far, for
// telling a client's own time from the time it waited on the provider.
func (p *Provider) Busy() time.Duration { return time.Duration(p.busy.Load()) }

// Register adds a confidential web client. Call it before the client's
// first request reaches the provider: the provider reads the clients
// without a lock.
func (p *Provider) Register(c Client) {
	p.clients[c.ID] = storage.WebClient(c.ID, c.Secret, c.RedirectURI)
}

// Close stops the provider, as a provider that went down.
func (p *Provider) Close() { p.srv.Close() }

// Login follows authURL through the provider's login form as username and
// returns the URL the provider redirects the browser to (the client's
// redirect URI with code and state, or with error).
func (p *Provider) Login(tb testing.TB, authURL, username string) string {
	tb.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	loc := follow(tb, c, http.MethodGet, authURL, nil)
	if !strings.Contains(loc, "/login/username") {
		return loc // the provider answered at once (an error)
	}
	loginURL := p.resolve(tb, loc)
	page := get(tb, c, loginURL)
	if !strings.Contains(page, `name="password"`) {
		tb.Fatalf("login page has no password field: %s", page)
	}
	u, err := url.Parse(loginURL)
	if err != nil {
		tb.Fatal(err)
	}
	form := url.Values{"id": {u.Query().Get("authRequestID")}, "username": {username}, "password": {Password}}
	next := follow(tb, c, http.MethodPost, p.resolve(tb, "/login/username"), form)
	return follow(tb, c, http.MethodGet, p.resolve(tb, next), nil)
}

func (p *Provider) resolve(tb testing.TB, ref string) string {
	base, err := url.Parse(p.Issuer)
	if err != nil {
		tb.Fatal(err)
	}
	r, err := url.Parse(ref)
	if err != nil {
		tb.Fatal(err)
	}
	return base.ResolveReference(r).String()
}

// follow sends one request and returns its redirect's Location.
func follow(tb testing.TB, c *http.Client, method, target string, form url.Values) string {
	tb.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(tb.Context(), method, target, body)
	if err != nil {
		tb.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	res, err := c.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer res.Body.Close()
	text, _ := io.ReadAll(res.Body)
	loc := res.Header.Get("Location")
	if res.StatusCode/100 != 3 || loc == "" {
		tb.Fatalf("%s %s: %d without a redirect: %s", method, target, res.StatusCode, text)
	}
	return loc
}

func get(tb testing.TB, c *http.Client, target string) string {
	tb.Helper()
	req, err := http.NewRequestWithContext(tb.Context(), http.MethodGet, target, nil)
	if err != nil {
		tb.Fatal(err)
	}
	res, err := c.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer res.Body.Close()
	text, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		tb.Fatalf("GET %s: %d %v", target, res.StatusCode, err)
	}
	return string(text)
}

// ProvidersFile writes a providers file naming this provider as an oidc
// provider id for client, whose secret the variable secretEnv holds, and
// returns its path.
func (p *Provider) ProvidersFile(tb testing.TB, id string, client Client, secretEnv string) string {
	tb.Helper()
	text := fmt.Sprintf("providers:\n  - id: %s\n    kind: oidc\n    issuer: %q\n    clientId: %q\n    clientSecretEnv: %s\n",
		id, p.Issuer, client.ID, secretEnv)
	path := filepath.Join(tb.TempDir(), "providers.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}
