package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/fixtures"
	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/apitest"
	"github.com/towerdefence/platformctl/internal/auth"
)

// newPlayerServer starts the API with the embedded content and live-ops
// defaults published, as `seed fixtures` would, but without the
// development world: tests create their own players.
func newPlayerServer(t testing.TB, opts ...apitest.Option) *apitest.Server {
	t.Helper()
	return apitest.NewWithContent(t, opts...)
}

var (
	requestRouterOnce sync.Once
	requestRouter     routers.Router
	requestRouterErr  error
)

// call sends a request through c (which validates the response) and, when
// the server accepted it, also validates the request body against the
// operation's documented request schema: a body the server takes must be
// one the contract describes.
func call(t *testing.T, c *apitest.Client, method, path string, body any) *apitest.Response {
	t.Helper()
	res := c.Do(method, path, body)
	if res.Status >= 300 || body == nil {
		return res
	}
	requestRouterOnce.Do(func() {
		doc, err := apitest.Document()
		if err != nil {
			requestRouterErr = err
			return
		}
		doc.Servers = nil
		requestRouter, requestRouterErr = gorillamux.NewRouter(doc)
	})
	if requestRouterErr != nil {
		t.Fatal(requestRouterErr)
	}
	raw, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(method, path, bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	route, params, err := requestRouter.FindRoute(req)
	if err != nil {
		t.Fatalf("%s %s is not documented: %v", method, path, err)
	}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true}}
	req.Body = io.NopCloser(bytes.NewReader(raw))
	if err := openapi3filter.ValidateRequest(t.Context(), in); err != nil {
		t.Errorf("%s %s was accepted but its body %s does not match the documented request: %v", method, path, raw, err)
	}
	return res
}

// expect fails the test unless res has the status and, for errors, the code.
func expect(t *testing.T, res *apitest.Response, status int, code string) {
	t.Helper()
	if res.Status != status || (code != "" && res.Code() != code) {
		t.Fatalf("got %d %s, want %d %s\nbody: %s", res.Status, res.Code(), status, code, res.Body)
	}
}

// embeddedFixtures copies the embedded fixtures into a MapFS for editing.
func embeddedFixtures(t *testing.T) fstest.MapFS {
	t.Helper()
	m := fstest.MapFS{}
	err := fs.WalkDir(fixtures.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := fs.ReadFile(fixtures.FS(), p)
		m[p] = &fstest.MapFile{Data: raw}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var (
	quickHashOnce sync.Once
	quickHash     string
	quickSeq      atomic.Int64
)

// newPlayer signs up a player with a unique nickname. It shares one
// password hash between the players of a test run: argon2id at the
// configured cost is the slow part of a sign-up, and these tests are about
// what players do, not how they sign in (the auth tests cover that).
func newPlayer(t testing.TB, srv *apitest.Server) *apitest.Account {
	t.Helper()
	ctx := t.Context()
	quickHashOnce.Do(func() {
		h, err := srv.App.Accounts.HashPassword(ctx, apitest.DefaultPassword)
		if err != nil {
			t.Fatal(err)
		}
		quickHash = h
	})
	n := quickSeq.Add(1)
	now := time.Now().UTC().Truncate(time.Millisecond)
	u := &account.User{ID: uuid.New(), Realm: account.RealmPlayer, Email: fmt.Sprintf("p%d-%s@example.com", n, uuid.NewString()[:8]),
		Name: fmt.Sprintf("Player %d", n), Nickname: fmt.Sprintf("p%d_%s", n, uuid.NewString()[:6]),
		PasswordHash: quickHash, CreatedAt: now, UpdatedAt: now}
	if err := srv.App.DB.Accounts().InsertUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	p, err := srv.App.Auth.OpenSession(ctx, u, true, auth.Client{UserAgent: "player tests"})
	if err != nil {
		t.Fatal(err)
	}
	c := srv.Client(t)
	c.AddSession(p)
	return &apitest.Account{User: u, Password: apitest.DefaultPassword, Token: p.Token, Client: c}
}
