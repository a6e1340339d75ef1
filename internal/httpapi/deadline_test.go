package httpapi

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestRequestDeadlineAnswers503 checks that a handler whose wait outlives
// the request deadline answers 503 SERVICE_UNAVAILABLE with Retry-After,
// not a 500, and does so at the deadline.
func TestRequestDeadlineAnswers503(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /wait", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
			respondErr(w, r, log, fmt.Errorf("wait for a slot: %w", r.Context().Err()))
		case <-time.After(10 * time.Second):
			respond(w, http.StatusOK, map[string]bool{"late": true})
		}
	})
	n := newPipeline(pipelineConfig{log: log, timeout: 50 * time.Millisecond}, mux)

	start := time.Now()
	rec := httptest.NewRecorder()
	n.ServeHTTP(rec, httptest.NewRequest("GET", "/wait", nil))
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("answered after %s; the deadline is 50ms", took)
	}
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("status %d, Retry-After %q, body %s; want 503 with Retry-After", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
	var e errorBody
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Code != "SERVICE_UNAVAILABLE" {
		t.Fatalf("body %s, want code SERVICE_UNAVAILABLE", rec.Body)
	}
}

// TestRoutesWithoutDeadline: the route table exempts exactly the paths
// registered with HandleWithoutDeadline, and refuses a pattern with a
// wildcard, which the exact-path lookup could not honour.
func TestRoutesWithoutDeadline(t *testing.T) {
	routes := &routeTable{ServeMux: http.NewServeMux(), withoutDeadline: map[string]bool{}}
	deadlines := map[string]bool{}
	record := http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		_, deadlines[r.URL.Path] = r.Context().Deadline()
	})
	routes.Handle("GET /bounded", record)
	routes.HandleWithoutDeadline("GET /memory", record)
	n := newPipeline(pipelineConfig{log: slog.New(slog.NewTextHandler(io.Discard, nil)), timeout: time.Minute,
		exempt: routes.exempt}, routes.ServeMux)
	for _, path := range []string{"/bounded", "/memory"} {
		n.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", path, nil))
	}
	if !deadlines["/bounded"] || deadlines["/memory"] || len(deadlines) != 2 {
		t.Fatalf("request deadlines by path %v, want /bounded only", deadlines)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a wildcard pattern was accepted without the deadline")
		}
	}()
	routes.HandleWithoutDeadline("GET /memory/{id}", record)
}
