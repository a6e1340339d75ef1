package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/urfave/negroni/v3"
)

// serveStep serves one request through step alone, with final as the
// handler after it.
func serveStep(step negroni.Handler, final http.HandlerFunc, r *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	negroni.New(step, negroni.Wrap(final)).ServeHTTP(rec, r)
	return rec
}

func errorCode(t *testing.T, rec *httptest.ResponseRecorder) string {
	t.Helper()
	var e errorBody
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil {
		t.Fatalf("body %q is not the error model: %v", rec.Body, err)
	}
	return e.Code
}

func TestRequestIDStep(t *testing.T) {
	var seen string
	final := func(w http.ResponseWriter, r *http.Request) { seen = requestIDOf(w) }
	step := negroni.HandlerFunc(requestID)

	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("X-Request-Id", "lb-1234.a:b")
	if rec := serveStep(step, final, r); seen != "lb-1234.a:b" || rec.Header().Get("X-Request-Id") != seen {
		t.Fatalf("caller's id: handler saw %q, answered %q", seen, rec.Header().Get("X-Request-Id"))
	}
	ids := map[string]bool{}
	for _, bad := range []string{"", "has space", "<script>", strings.Repeat("x", 129)} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("X-Request-Id", bad)
		rec := serveStep(step, final, r)
		if seen == bad || !validRequestID(seen) || rec.Header().Get("X-Request-Id") != seen || ids[seen] {
			t.Fatalf("id %q: handler saw %q, answered %q; want a fresh valid id", bad, seen, rec.Header().Get("X-Request-Id"))
		}
		ids[seen] = true
	}
}

func TestAccessLogStep(t *testing.T) {
	var buf strings.Builder
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	final := func(w http.ResponseWriter, r *http.Request) {
		respond(w, http.StatusBadGateway, map[string]string{"a": "b"})
	}
	r := httptest.NewRequest("GET", "/api/auth/reset-password/SECRET?token=SECRET", nil)
	serveStep(accessLog{log: log}, final, r)
	var line map[string]any
	if err := json.Unmarshal([]byte(buf.String()), &line); err != nil {
		t.Fatalf("log %q: %v", buf.String(), err)
	}
	if line["level"] != "WARN" || line["status"] != float64(502) || line["bytes"] != float64(10) ||
		line["path"] != "/api/auth/reset-password/[redacted]" || strings.Contains(buf.String(), "SECRET") {
		t.Fatalf("log line %v", line)
	}
}

func TestRecoveryStep(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	rec := serveStep(recovery{log}, func(http.ResponseWriter, *http.Request) { panic("boom") }, httptest.NewRequest("GET", "/", nil))
	if rec.Code != 500 || errorCode(t, rec) != "INTERNAL_ERROR" {
		t.Fatalf("panic answered %d %s", rec.Code, rec.Body)
	}
	rec = serveStep(recovery{log}, func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusAccepted)
		panic("late")
	}, httptest.NewRequest("GET", "/", nil))
	if rec.Code != http.StatusAccepted || rec.Body.Len() != 0 {
		t.Fatalf("panic after the headers: %d %q; want the headers as sent and nothing more", rec.Code, rec.Body)
	}
	defer func() {
		if p := recover(); p != http.ErrAbortHandler {
			t.Fatalf("recovered %v, want http.ErrAbortHandler passed on", p)
		}
	}()
	serveStep(recovery{log}, func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) }, httptest.NewRequest("GET", "/", nil))
	t.Fatal("http.ErrAbortHandler was swallowed")
}

func TestBodyLimitStep(t *testing.T) {
	called := false
	r := httptest.NewRequest("POST", "/", strings.NewReader("{}"))
	r.ContentLength = maxBodyBytes + 1
	rec := serveStep(negroni.HandlerFunc(bodyLimit), func(http.ResponseWriter, *http.Request) { called = true }, r)
	if called || rec.Code != http.StatusRequestEntityTooLarge || errorCode(t, rec) != codePayloadTooLarge {
		t.Fatalf("declared oversized body: handler called %v, answered %d %s", called, rec.Code, rec.Body)
	}
	r = httptest.NewRequest("POST", "/", strings.NewReader(strings.Repeat("x", maxBodyBytes+10)))
	r.ContentLength = -1 // chunked: the size is found by reading
	var readErr error
	serveStep(negroni.HandlerFunc(bodyLimit), func(_ http.ResponseWriter, r *http.Request) {
		_, readErr = io.ReadAll(r.Body)
	}, r)
	if _, ok := readErr.(*http.MaxBytesError); !ok {
		t.Fatalf("reading an undeclared oversized body: %v, want *http.MaxBytesError", readErr)
	}
}

func TestDeadlineStep(t *testing.T) {
	step := deadline{timeout: time.Minute, exempt: func(r *http.Request) bool { return r.URL.Path == eventsPath }}
	var got time.Time
	var has bool
	final := func(_ http.ResponseWriter, r *http.Request) { got, has = r.Context().Deadline() }
	serveStep(step, final, httptest.NewRequest("GET", "/api/health", nil))
	if !has || time.Until(got) > time.Minute || time.Until(got) < 50*time.Second {
		t.Fatalf("deadline %v (%v), want about a minute from now", got, has)
	}
	serveStep(step, final, httptest.NewRequest("GET", eventsPath, nil))
	if has {
		t.Fatalf("a stream got the request deadline %v", got)
	}
	var ctx context.Context
	serveStep(step, func(_ http.ResponseWriter, r *http.Request) { ctx = r.Context() }, httptest.NewRequest("GET", "/", nil))
	if ctx.Err() == nil {
		t.Fatal("the request's context outlives the request")
	}
}

func TestRouteMetricsStep(t *testing.T) {
	reg := prometheus.NewRegistry()
	table := NewMetrics(reg).forRoutes([]string{"GET /a/{id}"})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /a/{id}", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
	n := negroni.New(table, muxErrors{mux})
	for _, path := range []string{"/a/1", "/a/2", "/b"} {
		n.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", path, nil))
	}
	got := map[string]float64{}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			if f.GetName() == "platform_http_requests_total" {
				l := m.GetLabel()
				got[l[1].GetValue()+" "+l[0].GetValue()+" "+l[2].GetValue()] = m.GetCounter().GetValue()
			}
		}
	}
	if len(got) != 2 || got["/a/{id} GET 418"] != 2 || got["unmatched GET 404"] != 1 {
		t.Fatalf("counted %v", got)
	}
}

func TestAuthPathGuardStep(t *testing.T) {
	called := false
	rec := serveStep(negroni.HandlerFunc(authPathGuard), func(http.ResponseWriter, *http.Request) { called = true },
		httptest.NewRequest("POST", "/api/auth/update-user", nil))
	if called || rec.Code != 404 || errorCode(t, rec) != codeAccountMutationBlocked {
		t.Fatalf("blocked path: handler called %v, answered %d %s", called, rec.Code, rec.Body)
	}
	serveStep(negroni.HandlerFunc(authPathGuard), func(http.ResponseWriter, *http.Request) { called = true },
		httptest.NewRequest("GET", "/api/auth/get-session", nil))
	if !called {
		t.Fatal("an allowed auth path did not reach the handler")
	}
}

func TestMuxErrorsStep(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /x", func(w http.ResponseWriter, _ *http.Request) { http.NotFound(w, nil) })
	n := negroni.New(muxErrors{mux})
	for _, tc := range []struct {
		method, path string
		status       int
		code, allow  string
	}{
		{"GET", "/nowhere", 404, "NOT_FOUND", ""},
		{"POST", "/x", 405, codeMethodNotAllowed, "GET, HEAD"},
	} {
		rec := httptest.NewRecorder()
		n.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
		if rec.Code != tc.status || errorCode(t, rec) != tc.code || rec.Header().Get("Allow") != tc.allow {
			t.Fatalf("%s %s: %d %v %s", tc.method, tc.path, rec.Code, rec.Header(), rec.Body)
		}
	}
	// A matched handler's own 404 passes untouched.
	rec := httptest.NewRecorder()
	n.ServeHTTP(rec, httptest.NewRequest("GET", "/x", nil))
	if rec.Code != 404 || !strings.HasPrefix(rec.Body.String(), "404 page not found") {
		t.Fatalf("a handler's own 404 was replaced: %s", rec.Body)
	}
}
