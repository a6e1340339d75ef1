// Package apitest starts the real API on a loopback port for tests, over a
// migrated test database, and gives each test cookie-jar clients whose
// every response is validated against the OpenAPI document.
package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/towerdefence/platformctl/internal/app"
	"github.com/towerdefence/platformctl/internal/config"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/storetest"
)

// Secret is the signing secret of test servers.
const Secret = "test-secret-0123456789abcdef0123456789abcdef"

// Server is a running API over a fresh database.
type Server struct {
	URL    string
	App    *app.App
	Config *config.Config
	logs   *LogBuffer

	metricsOnce sync.Once
	metricsURL  string
}

// Option adjusts the environment a test server is configured from,
// before the Config is built (keys are PLATFORM_* variables).
type Option func(env map[string]string)

// WithEnv sets one PLATFORM_* variable.
func WithEnv(key, value string) Option {
	return func(env map[string]string) { env[key] = value }
}

// New starts a server for tb and stops it when tb ends.
func New(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	env := map[string]string{
		"PLATFORM_ADDR":         ln.Addr().String(),
		"PLATFORM_BASE_URL":     base,
		"PLATFORM_DATA_DIR":     tb.TempDir(),
		"PLATFORM_DATABASE_URL": storetest.URL(tb),
		"PLATFORM_SECRET":       Secret,
		"PLATFORM_MIGRATE":      "true",
		"PLATFORM_LOG_LEVEL":    "debug",
		// Tests run under -race on shared CI machines, where a burst of
		// password hashes can queue for longer than production's request
		// deadline; tests of the deadline itself set their own.
		"PLATFORM_REQUEST_TIMEOUT": "2m",
		// For the same reason a sign-up may wait longer for a hashing
		// slot; the admission tests set their own wait.
		"PLATFORM_HASH_WAIT": "30s",
	}
	for _, o := range opts {
		o(env)
	}
	cfg, err := config.Load(func(k string) string { return env[k] }, nil)
	if err != nil {
		ln.Close()
		tb.Fatalf("test config: %v", err)
	}
	logs := &LogBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx := tb.Context()
	a, err := app.New(ctx, cfg, log, platform.Build{Version: "test", Commit: "test", Date: "2026-01-01T00:00:00Z"})
	if err != nil {
		ln.Close()
		tb.Fatalf("build app: %v", err)
	}
	hs := httptest.NewUnstartedServer(a.Handler(nil))
	hs.Listener.Close()
	hs.Listener = ln
	hs.Start()

	workersCtx, stop := context.WithCancel(ctx)
	workersDone := make(chan struct{})
	go func() {
		defer close(workersDone)
		a.Run(workersCtx) //nolint:errcheck // the test sees failures through its own assertions
	}()
	s := &Server{URL: base, App: a, Config: cfg, logs: logs}
	tb.Cleanup(func() {
		a.Events.Wait(context.Background()) // streams never end on their own
		hs.Close()
		stop()
		<-workersDone
		a.Close()
		if tb.Failed() {
			tb.Logf("server log:\n%s", logs.String())
		}
	})
	return s
}

// Logs returns everything the server logged so far.
func (s *Server) Logs() string { return s.logs.String() }

// Client is a browser-like client: it keeps cookies and sends the
// server's own Origin on every request, as a same-origin web page does.
type Client struct {
	tb     testing.TB
	srv    *Server
	HTTP   *http.Client
	Origin string
	// Header is added to every request.
	Header http.Header
}

// Client returns a new client with an empty cookie jar.
func (s *Server) Client(tb testing.TB) *Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		tb.Fatal(err)
	}
	return &Client{
		tb:     tb,
		srv:    s,
		HTTP:   &http.Client{Jar: jar, Timeout: 2 * time.Minute, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		Origin: s.URL,
		Header: http.Header{},
	}
}

// Response is a fully read response.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Decode unmarshals the body into v or fails the test.
func (r *Response) Decode(tb testing.TB, v any) {
	tb.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		tb.Fatalf("decode %s: %v", r.Body, err)
	}
}

// Code returns the error code of an error response, or "".
func (r *Response) Code() string {
	var e struct{ Code string }
	json.Unmarshal(r.Body, &e) //nolint:errcheck // "" when it is not an error body
	return e.Code
}

// Do sends a request with a JSON body (nil for none; a string or []byte is
// sent as is) and validates the response against the OpenAPI document.
func (c *Client) Do(method, path string, body any) *Response {
	c.tb.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			c.tb.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, c.srv.URL+path, rd)
	if err != nil {
		c.tb.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Origin != "" {
		req.Header.Set("Origin", c.Origin)
	}
	for k, vs := range c.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	return c.Send(req)
}

// Send sends a prepared request and validates its response.
func (c *Client) Send(req *http.Request) *Response {
	c.tb.Helper()
	res, err := c.HTTP.Do(req)
	if err != nil {
		c.tb.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		c.tb.Fatalf("%s %s: read body: %v", req.Method, req.URL.Path, err)
	}
	r := &Response{Status: res.StatusCode, Header: res.Header, Body: raw}
	if err := validateResponse(req, r); err != nil {
		c.tb.Errorf("%s %s -> %d does not match the OpenAPI document: %v\nbody: %s", req.Method, req.URL.RequestURI(), r.Status, err, raw)
	}
	return r
}

// LogBuffer is a goroutine-safe sink for a server's log or a child
// process's output.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
