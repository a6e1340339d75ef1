package httpapi_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/towerdefence/platformctl/internal/apitest"
	"github.com/towerdefence/platformctl/internal/httpapi"
)

// discardWriter is a ResponseWriter that keeps nothing, so the benchmark
// measures the pipeline rather than a recorder's buffers.
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardWriter) WriteHeader(int)             {}

// BenchmarkQueuesPipeline serves GET /api/matchmaking/queues through the
// whole middleware stack as serve runs it (JSON access log written
// directly, metrics, request id, deadline), through the same stack with
// the access log going through slog (how the text format and a 5xx are
// logged), and, for comparison, from a bare handler writing the same
// bytes: the difference is what the pipeline costs per request. Besides
// the time per request it reports the process's CPU time per request
// (cpu-ns/op), which other work on a shared machine moves less than time.
// Throughput against a real server comes from `scripts/bench.sh side`.
func BenchmarkQueuesPipeline(b *testing.B) {
	srv := apitest.New(b)
	handler := func(accessLog io.Writer) http.Handler {
		return httpapi.NewHandler(httpapi.Deps{
			Log:         slog.New(slog.NewJSONHandler(io.Discard, nil)),
			AccessLog:   accessLog,
			Config:      srv.Config,
			Matchmaking: srv.App.Matchmaking,
			Metrics:     httpapi.NewMetrics(prometheus.NewRegistry()),
		})
	}
	h := handler(io.Discard)
	req := httptest.NewRequest(http.MethodGet, "/api/matchmaking/queues", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		b.Fatalf("status %d", rec.Code)
	}
	body, header := rec.Body.Bytes(), rec.Header()
	bare := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		for _, k := range []string{"Content-Type", "Content-Encoding", "Content-Length", "Etag", "Cache-Control", "Vary"} {
			w.Header().Set(k, header.Get(k))
		}
		w.Write(body) //nolint:errcheck // discarded
	})
	for _, tc := range []struct {
		name string
		h    http.Handler
	}{{"stack", h}, {"stack-slog-access-log", handler(nil)}, {"bare", bare}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			w := &discardWriter{}
			start := processCPU()
			for b.Loop() {
				w.h = http.Header{}
				tc.h.ServeHTTP(w, req)
			}
			b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkPublicRoutes serves each public GET route answered from
// memory through the whole stack, as BenchmarkQueuesPipeline does the
// queues: the in-process cost of a route, to set beside its
// `scripts/bench.sh side public` ratio. A capital letter in the path
// (/api/schemas/Health) once sent the auth path guard down its decoding
// road: 4 allocations and about 0.3 µs more per request.
func BenchmarkPublicRoutes(b *testing.B) {
	srv := apitest.NewWithContent(b)
	h := httpapi.NewHandler(httpapi.Deps{
		Log:         slog.New(slog.NewJSONHandler(io.Discard, nil)),
		AccessLog:   io.Discard,
		Config:      srv.Config,
		System:      srv.App.System,
		Players:     srv.App.Players,
		Matchmaking: srv.App.Matchmaking,
		Metrics:     httpapi.NewMetrics(prometheus.NewRegistry()),
	})
	for _, path := range []string{"/api", "/api/health", "/api/meta", "/api/schemas", "/api/schemas/Health", "/api/content/catalog"} {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
		}
		b.Run(path, func(b *testing.B) {
			b.ReportAllocs()
			w := &discardWriter{}
			for b.Loop() {
				w.h = http.Header{}
				h.ServeHTTP(w, req)
			}
		})
	}
}
