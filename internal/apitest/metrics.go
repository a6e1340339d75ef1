package apitest

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// Scrape reads the server's Prometheus metrics over HTTP, as a monitoring
// system would from serve's metrics address, and returns the value of each
// series keyed as the text format writes it: name{label="value",...}, or
// the bare name of a series without labels.
func (s *Server) Scrape(tb testing.TB) map[string]float64 {
	tb.Helper()
	s.metricsOnce.Do(func() {
		ms := httptest.NewServer(s.App.MetricsHandler())
		s.metricsURL = ms.URL
		tb.Cleanup(ms.Close)
	})
	res, err := http.Get(s.metricsURL + "/metrics")
	if err != nil {
		tb.Fatalf("scrape metrics: %v", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		tb.Fatalf("scrape metrics: %s", res.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ') // label values may hold spaces
		if i < 0 {
			tb.Fatalf("scrape metrics: unreadable line %q", line)
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			tb.Fatalf("scrape metrics: unreadable line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	if err := sc.Err(); err != nil {
		tb.Fatalf("scrape metrics: %v", err)
	}
	return out
}
