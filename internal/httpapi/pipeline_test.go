package httpapi_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/towerdefence/platformctl/internal/apitest"
	"github.com/towerdefence/platformctl/internal/httpapi"
)

// TestPipelineLogsAndCountsEveryRequest pins what the middleware stack
// records for each kind of answer: a matched route, HEAD, the mux's own
// 404 and 405, a redirect to the clean path, a blocked auth path and an
// oversized body. Each gets one JSON access log line with the same fields;
// all but the oversized body (refused before the metrics step) are
// counted by route, method and status, and timed by route.
func TestPipelineLogsAndCountsEveryRequest(t *testing.T) {
	srv := apitest.New(t)
	logs := &apitest.LogBuffer{}
	reg := prometheus.NewRegistry()
	h := httpapi.NewHandler(httpapi.Deps{
		Log:         slog.New(slog.NewJSONHandler(logs, nil)),
		Config:      srv.Config,
		Matchmaking: srv.App.Matchmaking,
		Metrics:     httpapi.NewMetrics(reg),
	})
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	cases := []struct {
		method, path string
		body         io.Reader
		length       int64
		status       int
		wantLogged   int // the status the access log and the counter show
		code         string
	}{
		{"GET", "/api/matchmaking/queues", nil, 0, 200, 200, ""},
		{"HEAD", "/api/matchmaking/queues", nil, 0, 200, 200, ""},
		{"GET", "/api/no-such-route", nil, 0, 404, 404, "NOT_FOUND"},
		{"DELETE", "/api/matchmaking/queues", nil, 0, 405, 405, "METHOD_NOT_ALLOWED"},
		{"GET", "/api//matchmaking/queues", nil, 0, 307, 307, ""},
		{"POST", "/api/auth/update-user", strings.NewReader("{}"), 2, 404, 404, "ACCOUNT_MUTATION_BLOCKED"},
		{"POST", "/api/profile/confirm-change", strings.NewReader(strings.Repeat(" ", 2<<20)), 2 << 20, 413, 413, "PAYLOAD_TOO_LARGE"},
	}
	for i, tc := range cases {
		req, err := http.NewRequestWithContext(t.Context(), tc.method, ts.URL+tc.path, tc.body)
		if err != nil {
			t.Fatal(err)
		}
		if tc.length > 0 {
			req.ContentLength = tc.length
			req.Header.Set("Content-Type", "application/json")
		}
		id := "pipeline-test-" + string(rune('a'+i))
		req.Header.Set("X-Request-Id", id)
		req.Header.Set("Accept-Encoding", "gzip") // so the client leaves the body as sent
		res, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", tc.method, tc.path, err)
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusCode != tc.status || res.Header.Get("X-Request-Id") != id {
			t.Fatalf("%s %s: status %d, X-Request-Id %q; want %d, %q", tc.method, tc.path, res.StatusCode,
				res.Header.Get("X-Request-Id"), tc.status, id)
		}
		if tc.code != "" {
			var e struct{ Code string }
			if err := json.Unmarshal(body, &e); err != nil || e.Code != tc.code {
				t.Fatalf("%s %s: body %s, want code %s", tc.method, tc.path, body, tc.code)
			}
			if res.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("%s %s: headers %v, want a JSON error", tc.method, tc.path, res.Header)
			}
		}
		line := accessLine(t, logs, id)
		want := map[string]any{"level": "INFO", "msg": "request", "request_id": id, "method": tc.method,
			"path": tc.path, "status": float64(tc.wantLogged), "bytes": float64(len(body))}
		if tc.method == "HEAD" {
			want["bytes"] = float64(0)
		}
		for k, v := range want {
			if line[k] != v {
				t.Errorf("%s %s: log field %s = %v, want %v (line %v)", tc.method, tc.path, k, line[k], v, line)
			}
		}
		keys := make([]string, 0, len(line))
		for k := range line {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if got := strings.Join(keys, ","); got != "bytes,duration_ms,level,method,msg,path,remote,request_id,status,time" {
			t.Errorf("%s %s: log fields %s", tc.method, tc.path, got)
		}
		if d, ok := line["duration_ms"].(float64); !ok || d < 0 {
			t.Errorf("%s %s: duration_ms %v", tc.method, tc.path, line["duration_ms"])
		}
		if r, _ := line["remote"].(string); !strings.HasPrefix(r, "127.0.0.1:") {
			t.Errorf("%s %s: remote %v", tc.method, tc.path, line["remote"])
		}
	}

	wantCounts := map[string]float64{
		`/api/matchmaking/queues GET 200`:      1,
		`/api/matchmaking/queues HEAD 200`:     1,
		`unmatched GET 404`:                    1,
		`/api/matchmaking/queues DELETE 405`:   0, // the mux's 405 has no pattern
		`unmatched DELETE 405`:                 1,
		`/api/matchmaking/queues GET 307`:      1, // the mux names the pattern it redirects to
		`unmatched POST 404`:                   1,
		`/api/profile/confirm-change POST 413`: 0,
	}
	counts, timed := requestMetrics(t, reg)
	for series, want := range wantCounts {
		if counts[series] != want {
			t.Errorf("platform_http_requests_total{%s} = %v, want %v (all: %v)", series, counts[series], want, counts)
		}
	}
	if len(counts) != 6 {
		t.Errorf("counter series %v, want exactly the six non-zero ones above", counts)
	}
	wantTimed := map[string]uint64{"/api/matchmaking/queues": 3, "unmatched": 3}
	if !maps.Equal(timed, wantTimed) {
		t.Errorf("request durations by route %v, want %v", timed, wantTimed)
	}
}

// accessLine returns the access log line of the request with id.
func accessLine(t *testing.T, logs *apitest.LogBuffer, id string) map[string]any {
	t.Helper()
	for _, raw := range strings.Split(logs.String(), "\n") {
		var line map[string]any
		if raw == "" || json.Unmarshal([]byte(raw), &line) != nil {
			continue
		}
		if line["msg"] == "request" && line["request_id"] == id {
			return line
		}
	}
	t.Fatalf("no access log line for %s in:\n%s", id, logs.String())
	return nil
}

// requestMetrics gathers the request counter by "route method status" and
// the number of timed requests by route.
func requestMetrics(t *testing.T, reg *prometheus.Registry) (map[string]float64, map[string]uint64) {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counts, timed := map[string]float64{}, map[string]uint64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			switch f.GetName() {
			case "platform_http_requests_total":
				counts[labels["route"]+" "+labels["method"]+" "+labels["status"]] = m.GetCounter().GetValue()
			case "platform_http_request_duration_seconds":
				timed[labels["route"]] = m.GetHistogram().GetSampleCount()
			}
		}
	}
	return counts, timed
}
