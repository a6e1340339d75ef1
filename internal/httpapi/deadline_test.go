package httpapi

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
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
// registered with HandleWithoutDeadline (an exact path, or one segment
// under a final wildcard), refuses a pattern its lookup could not honour,
// and refuses a route with the deadline that an exemption would cover.
func TestRoutesWithoutDeadline(t *testing.T) {
	routes := newRouteTable()
	deadlines := map[string]bool{}
	record := http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		_, deadlines[r.URL.Path] = r.Context().Deadline()
	})
	routes.Handle("GET /bounded", record)
	routes.HandleWithoutDeadline("GET /memory", record)
	routes.HandleWithoutDeadline("GET /docs/{name}", record)
	routes.Handle("GET /docs/{name}/versions", record)
	routes.checkExemptions()
	n := newPipeline(pipelineConfig{log: slog.New(slog.NewTextHandler(io.Discard, nil)), timeout: time.Minute,
		exempt: routes.exempt}, routes.ServeMux)
	for _, path := range []string{"/bounded", "/memory", "/docs/a", "/docs/a/versions"} {
		n.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", path, nil))
	}
	want := map[string]bool{"/bounded": true, "/memory": false, "/docs/a": false, "/docs/a/versions": true}
	if !maps.Equal(deadlines, want) {
		t.Fatalf("request deadlines by path %v, want %v", deadlines, want)
	}

	for _, tc := range []struct {
		name     string
		register func(*routeTable)
	}{
		{"a wildcard before the last segment", func(rt *routeTable) { rt.HandleWithoutDeadline("GET /memory/{id}/x", record) }},
		{"a rest wildcard", func(rt *routeTable) { rt.HandleWithoutDeadline("GET /files/{path...}", record) }},
		{"another method on an exempt path", func(rt *routeTable) {
			rt.HandleWithoutDeadline("GET /memory", record)
			rt.Handle("POST /memory", record)
			rt.checkExemptions()
		}},
		{"a fixed path beside an exempt wildcard", func(rt *routeTable) {
			rt.HandleWithoutDeadline("GET /docs/{name}", record)
			rt.Handle("GET /docs/index", record)
			rt.checkExemptions()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("accepted")
				}
			}()
			tc.register(newRouteTable())
		})
	}
}
