package httpapi

import (
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/urfave/negroni/v3"

	"github.com/towerdefence/platformctl/internal/platform"
)

// pipelineConfig is what the middleware needs to know of the service.
type pipelineConfig struct {
	log *slog.Logger
	// accessJSON, when set, takes the access log's info lines as JSON
	// (see accessLog).
	accessJSON io.Writer
	// timeout is the request deadline (none when zero); exempt tells the
	// requests that do without it (routeTable.HandleWithoutDeadline).
	timeout time.Duration
	exempt  func(*http.Request) bool
	metrics *routeMetricsTable // nil: no metrics
}

// newPipeline returns the middleware every request passes through, in
// this order, around the mux:
//
//  1. the request id, accepted from the caller or made (requestID)
//  2. the access log, one line per request (accessLog)
//  3. panic recovery (recovery)
//  4. the body limit (bodyLimit)
//  5. the deadline (deadline)
//  6. the metrics, by the route the mux matched (routeMetrics)
//  7. the guard of blocked auth paths (authPathGuard)
//  8. the mux, whose own 404 and 405 replies become the error model
//     (muxErrors)
//
// negroni hands every step the same negroni.ResponseWriter, which records
// the status and size the log and the metrics report.
func newPipeline(c pipelineConfig, mux *http.ServeMux) *negroni.Negroni {
	steps := []negroni.Handler{
		negroni.HandlerFunc(requestID),
		accessLog{log: c.log, json: c.accessJSON},
		recovery{c.log},
		negroni.HandlerFunc(bodyLimit),
		deadline{timeout: c.timeout, exempt: c.exempt},
	}
	if c.metrics != nil {
		steps = append(steps, c.metrics)
	}
	steps = append(steps, negroni.HandlerFunc(authPathGuard), muxErrors{mux})
	return negroni.New(steps...)
}

// requestIDHeader carries the request id, in the request from a caller
// that has one and in every answer.
const requestIDHeader = "X-Request-Id" // canonical, for direct map access

// requestIDOf returns the id of the request being answered on w. The id
// lives in the answer's header, where every log line of the request finds
// it: keeping it in the request's context as well would cost a copy of
// the request on every request, a sixth of the pipeline's CPU time in
// BenchmarkQueuesPipeline.
func requestIDOf(w http.ResponseWriter) string {
	if v := w.Header()[requestIDHeader]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// requestID accepts a well-formed X-Request-Id from the caller (so a load
// balancer's id follows the request) or makes one, and answers with it.
func requestID(w http.ResponseWriter, r *http.Request, next http.HandlerFunc) {
	var id string
	if v := r.Header[requestIDHeader]; len(v) > 0 { // net/http canonicalised the key
		id = v[0]
	}
	if !validRequestID(id) {
		id = rand.Text()
	}
	w.Header()[requestIDHeader] = []string{id}
	next(w, r)
}

func validRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':') {
			return false
		}
	}
	return true
}

// recovery turns a panic into a logged INTERNAL_ERROR instead of a
// dropped connection. http.ErrAbortHandler keeps its meaning. negroni's
// own Recovery answers in plain text; this one answers in the error model.
type recovery struct{ log *slog.Logger }

func (rc recovery) ServeHTTP(w http.ResponseWriter, r *http.Request, next http.HandlerFunc) {
	defer func() {
		p := recover()
		if p == nil {
			return
		}
		if p == http.ErrAbortHandler {
			panic(p)
		}
		rc.log.ErrorContext(r.Context(), "panic serving request", "request_id", requestIDOf(w),
			"method", r.Method, "path", loggedPath(r.URL.Path), "panic", p, "stack", string(debug.Stack()))
		if w.(negroni.ResponseWriter).Written() {
			return // headers are gone; the client sees a cut response
		}
		respond(w, http.StatusInternalServerError, errorBody{Code: platform.CodeInternal, Message: "internal error"})
	}()
	next(w, r)
}

// bodyLimit caps every request body; decode reports the overflow as 413.
// A body declared too large is refused at once.
func bodyLimit(w http.ResponseWriter, r *http.Request, next http.HandlerFunc) {
	if r.ContentLength > maxBodyBytes {
		respond(w, http.StatusRequestEntityTooLarge, errorBody{Code: codePayloadTooLarge,
			Message: "request body exceeds 1048576 bytes"})
		return
	}
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
	}
	next(w, r)
}

// deadline bounds a request by the configured timeout. Handlers pass the
// request's context to the services and so to the database driver, which
// gives up at the deadline; the store reports that as
// SERVICE_UNAVAILABLE. Without it, a database that stops answering
// without closing its connections (a network partition, a hung server)
// would hold every request until the client gave up. Requests exempt do
// without it: streams, and routes served from memory (see
// routeTable.HandleWithoutDeadline).
type deadline struct {
	timeout time.Duration
	exempt  func(*http.Request) bool
}

func (d deadline) ServeHTTP(w http.ResponseWriter, r *http.Request, next http.HandlerFunc) {
	if d.timeout <= 0 || d.exempt != nil && d.exempt(r) {
		next(w, r)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), d.timeout)
	defer cancel()
	next(w, r.WithContext(ctx))
}

// ServeHTTP makes the table a negroni.Handler: it counts and times each
// request by the pattern the mux recorded on the request it was handed
// (the same request: no later step copies it). A request that panics is
// not observed, and one refused by bodyLimit never gets here.
func (t *routeMetricsTable) ServeHTTP(w http.ResponseWriter, r *http.Request, next http.HandlerFunc) {
	start := time.Now()
	next(w, r)
	t.observe(r.Pattern, r.Method, w.(negroni.ResponseWriter).Status(), time.Since(start).Seconds())
}

// authPathGuard answers blocked and unclean auth paths before the mux
// (see guardAuthPath).
func authPathGuard(w http.ResponseWriter, r *http.Request, next http.HandlerFunc) {
	if guardAuthPath(w, r) {
		return
	}
	next(w, r)
}

// muxErrors serves the mux, turning its own 404 and 405 replies (for
// requests it found no pattern for) into the error model.
type muxErrors struct{ mux *http.ServeMux }

func (m muxErrors) ServeHTTP(w http.ResponseWriter, r *http.Request, _ http.HandlerFunc) {
	m.mux.ServeHTTP(&muxReplyWriter{ResponseWriter: w, r: r}, r)
}

// muxReplyWriter is the writer handed to the mux. A 404 or 405 from the
// mux for a request it found no pattern for is its own reply, which
// becomes a JSON error (keeping headers such as Allow); replies of
// matched handlers pass untouched.
type muxReplyWriter struct {
	http.ResponseWriter
	r        *http.Request
	replaced bool
}

func (x *muxReplyWriter) WriteHeader(status int) {
	if x.r.Pattern != "" || x.replaced || status != http.StatusNotFound && status != http.StatusMethodNotAllowed {
		x.ResponseWriter.WriteHeader(status)
		return
	}
	x.replaced = true // what follows is the mux's plain text, answered here as JSON
	if status == http.StatusNotFound {
		x.Header().Del("X-Content-Type-Options")
		respond(x.ResponseWriter, status, errorBody{Code: platform.CodeNotFound, Message: "no such route"})
		return
	}
	respond(x.ResponseWriter, status, errorBody{Code: codeMethodNotAllowed,
		Message: "method not allowed; allowed: " + x.Header().Get("Allow")})
}

func (x *muxReplyWriter) Write(b []byte) (int, error) {
	if x.replaced {
		return len(b), nil
	}
	return x.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the server's writer.
func (x *muxReplyWriter) Unwrap() http.ResponseWriter { return x.ResponseWriter }

// resetLinkSegment starts the path segment that carries a password reset
// token (better-auth's GET reset-password/{token} link).
const resetLinkSegment = "/reset-password/"

// loggedPath returns path fit for a log: whatever follows a reset link's
// segment is replaced, in any letter case, since it is a live secret.
func loggedPath(path string) string {
	for i := 0; i+len(resetLinkSegment) <= len(path); i++ {
		if path[i] == '/' && strings.EqualFold(path[i:i+len(resetLinkSegment)], resetLinkSegment) {
			return path[:i+len(resetLinkSegment)] + "[redacted]"
		}
	}
	return path
}
