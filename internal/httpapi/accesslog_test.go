package httpapi

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// FuzzAccessJSONMatchesSlog holds appendAccessJSON to what slog's JSON
// handler writes for the same record, byte for byte, whatever the strings
// hold: quotes, control characters, invalid UTF-8, line separators.
func FuzzAccessJSONMatchesSlog(f *testing.F) {
	f.Add("GET", "/api/matchmaking/queues", "127.0.0.1:5555", "6BANP5RP2INTZVC2LZO2QFBOLG", 200, 3736, int64(1234567))
	f.Add("POST", "/api/a\"b\\c\n\r\t\x00\x1f\x7f", "[::1]:1", "id", 404, 0, int64(0))
	f.Add("GET", "/api/\xff\xfe<>&\u2028\u2029é😀", "x", "", 0, -1, int64(999))
	f.Add("DELETE", "", "", "a-b_c.d:e", 599, 1<<40, int64(time.Hour))
	f.Fuzz(func(t *testing.T, method, path, remote, id string, status, size int, micros int64) {
		rec := accessRecord{
			end:       time.Date(2026, 11, 27, 8, 57, 22, 960123456, time.UTC),
			level:     slog.LevelInfo,
			requestID: id, method: method, path: path, remote: remote,
			status: status, bytes: size, duration: time.Duration(micros%int64(24*time.Hour/time.Microsecond)) * time.Microsecond,
		}
		if rec.duration < 0 {
			rec.duration = -rec.duration
		}
		var want bytes.Buffer
		logAccess(context.Background(), slog.NewJSONHandler(&want, nil), &rec)
		if got := appendAccessJSON(nil, &rec); string(got) != want.String() {
			t.Fatalf("access line\n got %s\nwant %s", got, want.Bytes())
		}
	})
}

func TestAccessLogStepWritesJSONDirectly(t *testing.T) {
	var viaLog, direct strings.Builder
	log := slog.New(slog.NewJSONHandler(&viaLog, nil))
	step := accessLog{log: log, json: &direct}
	serveStep(step, func(w http.ResponseWriter, r *http.Request) { respond(w, http.StatusOK, map[string]int{}) },
		httptest.NewRequest("GET", "/api/ok", nil))
	if viaLog.Len() != 0 || !strings.Contains(direct.String(), `"level":"INFO","msg":"request"`) ||
		!strings.Contains(direct.String(), `"path":"/api/ok","status":200,"bytes":3,`) {
		t.Fatalf("info line: through slog %q, directly %q", viaLog.String(), direct.String())
	}
	// A warning goes through the logger, which flushes it at once.
	direct.Reset()
	serveStep(step, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) },
		httptest.NewRequest("GET", "/api/down", nil))
	if direct.Len() != 0 || !strings.Contains(viaLog.String(), `"level":"WARN"`) {
		t.Fatalf("warning: through slog %q, directly %q", viaLog.String(), direct.String())
	}
	// Below the logger's level nothing is written either way.
	quiet := accessLog{log: slog.New(slog.NewJSONHandler(&viaLog, &slog.HandlerOptions{Level: slog.LevelWarn})), json: &direct}
	viaLog.Reset()
	serveStep(quiet, func(w http.ResponseWriter, r *http.Request) {}, httptest.NewRequest("GET", "/api/ok", nil))
	if viaLog.Len() != 0 || direct.Len() != 0 {
		t.Fatalf("below the level: through slog %q, directly %q", viaLog.String(), direct.String())
	}
}
