package httpapi

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/urfave/negroni/v3"
)

// accessLog logs one line per request, warning on 5xx. Tokens travel in
// URLs (verify-email links in the query string, reset-password links in
// the path), so it logs the path without the query string and with any
// reset token cut. A request that panics with http.ErrAbortHandler gets
// no line.
//
// With a JSON writer (serve in JSON log format) an info line is appended
// to it directly, byte for byte as log's JSON handler would write it
// (appendAccessJSON). Going through slog cost 6.8 µs of the 73 µs of CPU
// time GET /api/matchmaking/queues took in `scripts/bench.sh side`, the
// largest step of the pipeline; BenchmarkQueuesPipeline measures the
// stack both ways (about 35% more requests/s through the handler).
// Warnings go through log, which flushes them at once, as does every
// line without a JSON writer (text format, tests).
type accessLog struct {
	log  *slog.Logger
	json io.Writer // nil: every line through log
}

// accessRecord is what one access log line says.
type accessRecord struct {
	end                     time.Time
	level                   slog.Level
	requestID, method, path string
	remote                  string
	status, bytes           int
	duration                time.Duration
}

func (a accessLog) ServeHTTP(w http.ResponseWriter, r *http.Request, next http.HandlerFunc) {
	start := time.Now()
	next(w, r)
	rw := w.(negroni.ResponseWriter)
	rec := accessRecord{level: slog.LevelInfo, status: rw.Status()}
	if rec.status >= 500 {
		rec.level = slog.LevelWarn
	}
	ctx := r.Context()
	if !a.log.Enabled(ctx, rec.level) {
		return
	}
	rec.end = time.Now()
	rec.duration = rec.end.Sub(start)
	rec.requestID, rec.method, rec.path = requestIDOf(w), r.Method, loggedPath(r.URL.Path)
	rec.remote, rec.bytes = r.RemoteAddr, rw.Size()
	if a.json != nil && rec.level < slog.LevelWarn {
		writeAccessJSON(a.json, &rec)
		return
	}
	logAccess(ctx, a.log.Handler(), &rec)
}

// logAccess hands the record to h as slog.Logger.LogAttrs would, but
// without looking up the caller's program counter: nothing here logs the
// source, and the lookup walks the stack per request.
func logAccess(ctx context.Context, h slog.Handler, rec *accessRecord) {
	r := slog.NewRecord(rec.end, rec.level, "request", 0)
	r.AddAttrs(
		slog.String("request_id", rec.requestID),
		slog.String("method", rec.method),
		slog.String("path", rec.path),
		slog.Int("status", rec.status),
		slog.Int("bytes", rec.bytes),
		slog.Float64("duration_ms", durationMillis(rec.duration)),
		slog.String("remote", rec.remote),
	)
	h.Handle(ctx, r) //nolint:errcheck // as slog.Logger does: a log that cannot be written has no one to tell
}

// durationMillis is d in milliseconds to the microsecond.
func durationMillis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// accessLineBuffers recycles the buffers lines are formatted in.
var accessLineBuffers = sync.Pool{New: func() any {
	b := make([]byte, 0, 512)
	return &b
}}

// writeAccessJSON writes rec to w as one JSON line. The writer takes a
// whole line per call, as it does from slog's handlers.
func writeAccessJSON(w io.Writer, rec *accessRecord) {
	bp := accessLineBuffers.Get().(*[]byte)
	line := appendAccessJSON((*bp)[:0], rec)
	w.Write(line) //nolint:errcheck // as slog does: a log that cannot be written has no one to tell
	*bp = line
	accessLineBuffers.Put(bp)
}

// appendAccessJSON appends rec as slog.JSONHandler formats the record
// logAccess makes of it: the same keys in the same order, the same
// number and string encodings (FuzzAccessJSONMatchesSlog holds the two
// together).
func appendAccessJSON(b []byte, rec *accessRecord) []byte {
	b = append(b, `{"time":"`...)
	b = rec.end.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","level":"`...)
	b = append(b, rec.level.String()...)
	b = append(b, `","msg":"request","request_id":"`...)
	b = appendJSONString(b, rec.requestID)
	b = append(b, `","method":"`...)
	b = appendJSONString(b, rec.method)
	b = append(b, `","path":"`...)
	b = appendJSONString(b, rec.path)
	b = append(b, `","status":`...)
	b = strconv.AppendInt(b, int64(rec.status), 10)
	b = append(b, `,"bytes":`...)
	b = strconv.AppendInt(b, int64(rec.bytes), 10)
	b = append(b, `,"duration_ms":`...)
	// encoding/json's float format, which slog uses: the shortest
	// decimal, without an exponent between 1e-6 and 1e21 (always, for a
	// duration in milliseconds to the microsecond).
	b = strconv.AppendFloat(b, durationMillis(rec.duration), 'f', -1, 64)
	b = append(b, `,"remote":"`...)
	b = appendJSONString(b, rec.remote)
	return append(b, "\"}\n"...)
}

// appendJSONString appends s escaped for a JSON string as slog does:
// quotes, backslashes and control characters escaped, invalid UTF-8 as
// U+FFFD, and U+2028 and U+2029 escaped; HTML characters as they are.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		var esc string
		size := 1
		switch {
		case c == '"' || c == '\\':
			esc = `\` + string(c)
		case c == '\n':
			esc = `\n`
		case c == '\r':
			esc = `\r`
		case c == '\t':
			esc = `\t`
		case c < 0x20:
			esc = `\u00` + string(hex[c>>4]) + string(hex[c&0xF])
		default:
			var r rune
			r, size = utf8.DecodeRuneInString(s[i:])
			switch {
			case r == utf8.RuneError && size == 1:
				esc = `\ufffd`
			case r == '\u2028' || r == '\u2029':
				esc = `\u202` + string(hex[r&0xF])
			default:
				i += size
				continue
			}
		}
		b = append(b, s[start:i]...)
		b = append(b, esc...)
		i += size
		start = i
	}
	return append(b, s[start:]...)
}
