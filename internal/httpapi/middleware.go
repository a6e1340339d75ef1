package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/towerdefence/platformctl/internal/platform"
)

// stack is the middleware every request passes through, in this order:
//
//  1. the request context: the request id and the deadline (requestCtx)
//  2. the access log, one line per request
//  3. panic recovery
//  4. the body limit
//  5. the metrics, by the route the mux matched
//  6. the guard of blocked auth paths (guardAuthPath)
//  7. the mux, whose own 404 and 405 replies become the error model
//
// The steps are plain calls on one exchange per request instead of a
// chain of middleware handlers: they all need the same state (the id, the
// start time, the status and size written), and one value holding it,
// with the request copied once, costs a request a fraction of what a
// wrapper per step did.
type stack struct {
	log *slog.Logger
	// timeout is the request deadline (none when zero); long tells the
	// requests that do without it (streams, which bound their setup with
	// setupDeadline).
	timeout time.Duration
	long    func(*http.Request) bool
	metrics *routeMetricsTable // nil: no metrics
	exact   map[string][]exactRoute
	mux     *http.ServeMux
}

func (s *stack) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	x := s.begin(w, r)
	r = r.WithContext(&x.ctx)
	defer x.ctx.end()
	s.serve(x, r)
	s.logAccess(x, r)
}

// begin makes the request's exchange: it accepts a well-formed
// X-Request-Id from the caller (so a load balancer's id follows the
// request) or makes one, and answers with it; when the stack has a
// timeout and the request is not a stream, the context gets a deadline.
// Handlers pass the request's context to the services and so to the
// database driver, which gives up at the deadline; the store reports that
// as SERVICE_UNAVAILABLE. Without it, a database that stops answering
// without closing its connections (a network partition, a hung server)
// would hold every request until the client gave up.
func (s *stack) begin(w http.ResponseWriter, r *http.Request) *exchange {
	var id string
	if v := r.Header["X-Request-Id"]; len(v) > 0 { // net/http canonicalised the key
		id = v[0]
	}
	if !validRequestID(id) {
		id = newRequestID()
	}
	x := &exchange{w: w, start: time.Now()}
	x.ctx.parent, x.ctx.id, x.ctx.header[0] = r.Context(), id, id
	if s.timeout > 0 && !s.long(r) {
		x.ctx.deadline = x.start.Add(s.timeout)
	}
	w.Header()["X-Request-Id"] = x.ctx.header[:]
	return x
}

// serve runs the steps that recoverPanic guards.
func (s *stack) serve(x *exchange, r *http.Request) {
	defer s.recoverPanic(x, r)
	if !limitBody(x, r) {
		return
	}
	if guardAuthPath(x, r) {
		s.observe(x, r, nil)
		return
	}
	if rt := s.exactRoute(r); rt != nil {
		r.Pattern = rt.pattern
		rt.handler.ServeHTTP(x, r)
		s.observe(x, r, rt.metrics)
		return
	}
	// The mux records the matched pattern on the very request it is
	// handed, before it calls the handler: the exchange tells the mux's
	// own replies apart by it, and the metrics label by it.
	x.muxReq = r
	s.mux.ServeHTTP(x, r)
	s.observe(x, r, nil)
}

// exactRoute finds the route of a request whose path is, letter for
// letter, the path of a route without wildcards registered for its
// method. The mux would pick that very route (a literal path is the most
// specific match, and a clean path is not redirected) after cleaning the
// path and walking its tree; anything else (escapes, wildcards, HEAD for
// a GET route, a wrong method) goes to the mux.
func (s *stack) exactRoute(r *http.Request) *exactRoute {
	if r.URL.RawPath != "" {
		return nil
	}
	routes := s.exact[r.URL.Path]
	for i := range routes {
		if routes[i].method == r.Method {
			return &routes[i]
		}
	}
	return nil
}

// observe counts and times the request when the stack has metrics, by
// the route's series when it is known (rm) or else by the pattern the
// mux recorded. A request that panics is not observed, and one refused by
// limitBody never gets here.
func (s *stack) observe(x *exchange, r *http.Request, rm *routeMetrics) {
	if s.metrics == nil {
		return
	}
	x.end = time.Now()
	seconds := x.end.Sub(x.start).Seconds()
	if rm != nil {
		rm.observe(s.metrics.m, r.Method, x.status, seconds)
		return
	}
	s.metrics.observe(r.Pattern, r.Method, x.status, seconds)
}

// recoverPanic turns a panic into a logged INTERNAL_ERROR instead of a
// dropped connection. http.ErrAbortHandler keeps its meaning, and the
// request then gets no access log line.
func (s *stack) recoverPanic(x *exchange, r *http.Request) {
	p := recover()
	if p == nil {
		return
	}
	if p == http.ErrAbortHandler {
		panic(p)
	}
	s.log.ErrorContext(r.Context(), "panic serving request", "request_id", x.ctx.id,
		"method", r.Method, "path", loggedPath(r.URL.Path), "panic", p, "stack", string(debug.Stack()))
	if x.written() {
		return // headers are gone; the client sees a cut response
	}
	x.muxReq = nil // the reply is ours, whatever the mux matched
	respond(x, http.StatusInternalServerError, errorBody{Code: platform.CodeInternal, Message: "internal error"})
}

// logAccess logs one line per request. Tokens travel in URLs (verify-email
// links in the query string, reset-password links in the path), so it logs
// the path without the query string and with any reset token cut.
//
// It hands the record to the handler itself, as slog.Logger.LogAttrs
// would but without looking up the caller's program counter (no handler
// here logs the source), and with the time the metrics step took. The
// last three fields travel as a group with an empty key, which every
// slog handler inlines: a record holds five attributes without
// allocating, and the group's own three live in the exchange.
func (s *stack) logAccess(x *exchange, r *http.Request) {
	level := slog.LevelInfo
	if x.status >= 500 {
		level = slog.LevelWarn
	}
	ctx := r.Context()
	h := s.log.Handler()
	if !h.Enabled(ctx, level) {
		return
	}
	end := x.end
	if end.IsZero() {
		end = time.Now()
	}
	x.logTail = [3]slog.Attr{
		slog.Int("bytes", x.size),
		slog.Float64("duration_ms", float64(end.Sub(x.start).Microseconds())/1000),
		slog.String("remote", r.RemoteAddr),
	}
	rec := slog.NewRecord(end, level, "request", 0)
	rec.AddAttrs(
		slog.String("request_id", x.ctx.id),
		slog.String("method", r.Method),
		slog.String("path", loggedPath(r.URL.Path)),
		slog.Int("status", x.status),
		slog.Attr{Value: slog.GroupValue(x.logTail[:]...)},
	)
	h.Handle(ctx, rec) //nolint:errcheck // as slog.Logger does: a log that cannot be written has no one to tell
}

// limitBody caps every request body; decode reports the overflow as 413.
// A body declared too large is refused at once.
func limitBody(w http.ResponseWriter, r *http.Request) bool {
	if r.ContentLength > maxBodyBytes {
		respond(w, http.StatusRequestEntityTooLarge, errorBody{Code: codePayloadTooLarge,
			Message: "request body exceeds 1048576 bytes"})
		return false
	}
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
	}
	return true
}

// exchange is one request's state in the stack: its context, and the
// response writer that every step and handler writes through, which
// records the status and size for the log and the metrics and turns the
// mux's own 404 and 405 replies into the error model.
type exchange struct {
	ctx   requestCtx
	w     http.ResponseWriter
	start time.Time
	end   time.Time // when the metrics step timed the request; zero without one
	// status is the status written (0 while none is), size the body bytes.
	status, size int
	// muxReq is the request handed to the mux, set just before; replaced
	// says the mux's plain-text reply was swapped for the error model.
	muxReq   *http.Request
	replaced bool
	logTail  [3]slog.Attr
}

func (x *exchange) Header() http.Header { return x.w.Header() }

// WriteHeader records the status. A 404 or 405 from the mux for a request
// it found no pattern for is its own reply, which becomes a JSON error
// (keeping headers such as Allow); replies of matched handlers, and of the
// steps before the mux, pass untouched.
func (x *exchange) WriteHeader(status int) {
	if x.muxReq == nil || x.muxReq.Pattern != "" || status != http.StatusNotFound && status != http.StatusMethodNotAllowed {
		x.writeHeader(status)
		return
	}
	x.muxReq = nil // what follows is the error model, not the mux's reply
	if status == http.StatusNotFound {
		x.Header().Del("X-Content-Type-Options")
		respond(x, status, errorBody{Code: platform.CodeNotFound, Message: "no such route"})
	} else {
		respond(x, status, errorBody{Code: codeMethodNotAllowed,
			Message: "method not allowed; allowed: " + x.Header().Get("Allow")})
	}
	x.replaced = true
}

// writeHeader sends status unless a final status went out already; an
// informational one (1xx but 101) may precede it.
func (x *exchange) writeHeader(status int) {
	if x.written() {
		return
	}
	x.status = status
	x.w.WriteHeader(status)
}

func (x *exchange) written() bool {
	return x.status >= http.StatusOK || x.status == http.StatusSwitchingProtocols
}

func (x *exchange) Write(b []byte) (int, error) {
	if x.replaced {
		return len(b), nil // the mux's plain text, already answered as JSON
	}
	if !x.written() {
		x.writeHeader(http.StatusOK)
	}
	n, err := x.w.Write(b)
	x.size += n
	return n, err
}

// Flush sends what was written so far, with status 200 if none was set
// (a stream's first events).
func (x *exchange) Flush() {
	if !x.written() {
		x.writeHeader(http.StatusOK)
	}
	http.NewResponseController(x.w).Flush() //nolint:errcheck // http.Flusher has no error to give
}

// Unwrap lets http.ResponseController reach the server's writer.
func (x *exchange) Unwrap() http.ResponseWriter { return x.w }

type requestIDKey struct{}

// RequestID returns the id of the request being served, or "".
func RequestID(ctx context.Context) string {
	if c, ok := ctx.Value(requestIDKey{}).(*requestCtx); ok {
		return c.id
	}
	return ""
}

// requestCtx is a request's context: the request id, the X-Request-Id
// header value, and the request deadline, in the exchange's one
// allocation. The deadline's timer is made only when something waits for
// it (Done, Err or a value lookup): a request served from memory never
// asks, and so never pays for a timer.
type requestCtx struct {
	parent   context.Context
	id       string
	header   [1]string
	deadline time.Time // zero: none

	timed atomic.Pointer[timedCtx] // set once, by withDeadline
	mu    sync.Mutex               // guards making timed, and ended
	ended bool
}

// timedCtx is the parent with the deadline.
type timedCtx struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// Deadline implements context.Context without making the timer.
func (c *requestCtx) Deadline() (time.Time, bool) {
	d, ok := c.parent.Deadline()
	if c.deadline.IsZero() || ok && d.Before(c.deadline) {
		return d, ok
	}
	return c.deadline, true
}

// Done implements context.Context.
func (c *requestCtx) Done() <-chan struct{} { return c.withDeadline().Done() }

// Err implements context.Context.
func (c *requestCtx) Err() error { return c.withDeadline().Err() }

// Value implements context.Context. Other keys go to the context with the
// deadline, since the context package finds a parent's cancellation (for
// context.Cause and for children) by a value lookup.
func (c *requestCtx) Value(key any) any {
	if key == (requestIDKey{}) {
		return c
	}
	return c.withDeadline().Value(key)
}

// withDeadline returns the parent with the deadline, making it on first
// use; the parent itself when the request has no deadline.
func (c *requestCtx) withDeadline() context.Context {
	if c.deadline.IsZero() {
		return c.parent
	}
	if t := c.timed.Load(); t != nil {
		return t.ctx
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if t := c.timed.Load(); t != nil {
		return t.ctx
	}
	ctx, cancel := context.WithDeadline(c.parent, c.deadline)
	if c.ended {
		cancel() // asked after the request: canceled, as it would be by now
	}
	c.timed.Store(&timedCtx{ctx: ctx, cancel: cancel})
	return ctx
}

// end cancels the context when the request is done, as a deadline's
// cancel function would.
func (c *requestCtx) end() {
	if c.deadline.IsZero() {
		return
	}
	c.mu.Lock()
	c.ended = true
	t := c.timed.Load()
	c.mu.Unlock()
	if t != nil {
		t.cancel()
	}
}

// requestIDs makes request ids: a random prefix per process and a
// counter, which is unique without asking the system for randomness on
// every request. Ids only correlate log lines; they guard nothing.
var requestIDs struct {
	prefix [12]byte
	n      atomic.Uint64
}

func init() {
	var b [6]byte
	rand.Read(b[:])
	hex.Encode(requestIDs.prefix[:], b[:])
}

// newRequestID returns the next id: 24 hex digits.
func newRequestID() string {
	var buf [24]byte
	copy(buf[:], requestIDs.prefix[:])
	n := requestIDs.n.Add(1)
	const digits = "0123456789abcdef"
	for i := len(buf) - 1; i >= len(requestIDs.prefix); i-- {
		buf[i] = digits[n&0xf]
		n >>= 4
	}
	return string(buf[:])
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
