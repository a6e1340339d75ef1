package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"github.com/urfave/negroni/v3"

	"github.com/towerdefence/platformctl/internal/platform"
)

type requestIDKey struct{}

// RequestID returns the id of the request being served, or "".
func RequestID(ctx context.Context) string {
	if c, ok := ctx.Value(requestIDKey{}).(*requestCtx); ok {
		return c.id
	}
	return ""
}

// requestCtx carries the request id. It is context.WithValue and the
// X-Request-Id header value in one allocation: this runs on every request.
type requestCtx struct {
	context.Context
	id     string
	header [1]string
}

// Value implements context.Context.
func (c *requestCtx) Value(key any) any {
	if key == (requestIDKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// withRequestContext gives the request its id and its deadline in one
// step, so the request is copied once: it accepts a well-formed
// X-Request-Id from the caller (so a load balancer's id follows the
// request) or makes one, and, when timeout is positive, gives the request
// a deadline. Handlers pass the request's context to the services and so
// to the database driver, which gives up at the deadline; the store
// reports that as SERVICE_UNAVAILABLE. Without it, a database that stops
// answering without closing its connections (a network partition, a hung
// server) would hold every request until the client gave up. Streams
// (long) get no deadline here: they bound only their setup (setupDeadline).
func withRequestContext(timeout time.Duration, long func(*http.Request) bool) negroni.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, next http.HandlerFunc) {
		id := r.Header.Get("X-Request-Id")
		if !validRequestID(id) {
			id = newRequestID()
		}
		rc := &requestCtx{Context: r.Context(), id: id, header: [1]string{id}}
		w.Header()["X-Request-Id"] = rc.header[:]
		var ctx context.Context = rc
		if timeout > 0 && !long(r) {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, timeout)
			defer cancel()
		}
		next(w, r.WithContext(ctx))
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

// recoverPanics turns a panic into a logged INTERNAL_ERROR instead of a
// dropped connection. http.ErrAbortHandler keeps its meaning.
func recoverPanics(log *slog.Logger) negroni.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, next http.HandlerFunc) {
		defer func() {
			p := recover()
			if p == nil {
				return
			}
			if p == http.ErrAbortHandler {
				panic(p)
			}
			log.ErrorContext(r.Context(), "panic serving request", "request_id", RequestID(r.Context()),
				"method", r.Method, "path", loggedPath(r.URL.Path), "panic", p, "stack", string(debug.Stack()))
			if rw, ok := w.(negroni.ResponseWriter); ok && rw.Written() {
				return // headers are gone; the client sees a cut response
			}
			respond(w, http.StatusInternalServerError, errorBody{Code: platform.CodeInternal, Message: "internal error"})
		}()
		next(w, r)
	}
}

// accessLog logs one line per request. Tokens travel in URLs (verify-email
// links in the query string, reset-password links in the path), so it logs
// the path without the query string and with any reset token cut.
func accessLog(log *slog.Logger) negroni.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, next http.HandlerFunc) {
		start := time.Now()
		next(w, r)
		rw := w.(negroni.ResponseWriter)
		level := slog.LevelInfo
		if rw.Status() >= 500 {
			level = slog.LevelWarn
		}
		log.LogAttrs(r.Context(), level, "request",
			slog.String("request_id", RequestID(r.Context())),
			slog.String("method", r.Method),
			slog.String("path", loggedPath(r.URL.Path)),
			slog.Int("status", rw.Status()),
			slog.Int("bytes", rw.Size()),
			slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000),
			slog.String("remote", r.RemoteAddr),
		)
	}
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

// limitBody caps every request body; decode reports the overflow as 413.
func limitBody(limit int64) negroni.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, next http.HandlerFunc) {
		if r.ContentLength > limit {
			respond(w, http.StatusRequestEntityTooLarge, errorBody{Code: codePayloadTooLarge,
				Message: "request body exceeds 1048576 bytes"})
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = http.MaxBytesReader(w, r.Body, limit)
		}
		next(w, r)
	}
}

// jsonMuxErrors answers the mux's own 404 and 405 replies in the error
// model. The mux records the matched pattern on the request it is handed
// before it calls the handler, so a reply to a request without a pattern
// is the mux's own; replies of matched handlers pass untouched.
func jsonMuxErrors(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mux.ServeHTTP(&muxErrorWriter{ResponseWriter: w, r: r}, r)
	})
}

// muxErrorWriter replaces the plain-text body of the mux's 404/405 with
// a JSON error body, keeping headers such as Allow.
type muxErrorWriter struct {
	http.ResponseWriter
	r        *http.Request
	replaced bool
}

// Unwrap lets http.ResponseController reach the server's writer.
func (m *muxErrorWriter) Unwrap() http.ResponseWriter { return m.ResponseWriter }

func (m *muxErrorWriter) WriteHeader(status int) {
	if m.r.Pattern != "" {
		m.ResponseWriter.WriteHeader(status)
		return
	}
	switch status {
	case http.StatusNotFound:
		m.replaced = true
		m.Header().Del("X-Content-Type-Options")
		respond(m.ResponseWriter, status, errorBody{Code: platform.CodeNotFound, Message: "no such route"})
	case http.StatusMethodNotAllowed:
		m.replaced = true
		respond(m.ResponseWriter, status, errorBody{Code: codeMethodNotAllowed,
			Message: "method not allowed; allowed: " + m.Header().Get("Allow")})
	default:
		m.ResponseWriter.WriteHeader(status)
	}
}

func (m *muxErrorWriter) Write(b []byte) (int, error) {
	if m.replaced {
		return len(b), nil
	}
	return m.ResponseWriter.Write(b)
}
