package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/urfave/negroni/v3"

	"github.com/towerdefence/platformctl/internal/platform"
)

type requestIDKey struct{}

// RequestID returns the id of the request being served, or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// withRequestID accepts a well-formed X-Request-Id from the caller (so a
// load balancer's id follows the request) or makes one, and returns it.
func withRequestID() negroni.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, next http.HandlerFunc) {
		id := r.Header.Get("X-Request-Id")
		if !validRequestID(id) {
			var b [12]byte
			rand.Read(b[:])
			id = hex.EncodeToString(b[:])
		}
		w.Header().Set("X-Request-Id", id)
		next(w, r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id)))
	}
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
			slog.Duration("duration", time.Since(start)),
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
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, limit)
		}
		next(w, r)
	}
}

// jsonMuxErrors answers the mux's own 404 and 405 replies in the error
// model. It asks the mux whether a pattern matches first, so matched
// handlers are served untouched.
func jsonMuxErrors(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
		mux.ServeHTTP(&muxErrorWriter{ResponseWriter: w}, r)
	})
}

// muxErrorWriter replaces the plain-text body of the mux's 404/405 with
// a JSON error body, keeping headers such as Allow.
type muxErrorWriter struct {
	http.ResponseWriter
	replaced bool
}

func (m *muxErrorWriter) WriteHeader(status int) {
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

// limitDuration gives every request a deadline. Handlers pass the
// request's context to the services and so to the database driver, which
// gives up at the deadline; the store reports that as SERVICE_UNAVAILABLE.
// Without it, a database that stops answering without closing its
// connections (a network partition, a hung server) would hold every
// request until the client gave up. Streams (long) bound only their
// setup; see setupDeadline.
func limitDuration(d time.Duration, long func(*http.Request) bool) negroni.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, next http.HandlerFunc) {
		if long(r) {
			next(w, r)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), d)
		defer cancel()
		next(w, r.WithContext(ctx))
	}
}
