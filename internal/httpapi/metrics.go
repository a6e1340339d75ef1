package httpapi

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/urfave/negroni/v3"
)

// Metrics counts requests by route, method and status. Labelling by the
// mux pattern rather than the raw path keeps the label set bounded no
// matter what paths clients send; the route label is the pattern's path
// alone ("/api/player/lobbies/{id}"), since the method has its own label.
//
// promhttp's InstrumentHandler* middleware would need one curried vector
// per route, wrapped around each route at registration; one middleware in
// front of the mux reads the matched pattern after the fact instead, with
// the same metric names and types.
type Metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewMetrics registers the HTTP metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "platform_http_requests_total",
			Help: "HTTP requests of this process by route, method and status.",
		}, []string{"route", "method", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "platform_http_request_duration_seconds",
			Help:    "HTTP request latency by route.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"route"}),
	}
	reg.MustRegister(m.requests, m.duration)
	return m
}

// middleware must sit directly in front of the mux: the mux records the
// matched pattern on the very *http.Request it is handed.
func (m *Metrics) middleware() negroni.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, next http.HandlerFunc) {
		start := time.Now()
		next(w, r)
		route := routeLabel(r.Pattern)
		m.requests.WithLabelValues(route, r.Method, statusLabel(w.(negroni.ResponseWriter).Status())).Inc()
		m.duration.WithLabelValues(route).Observe(time.Since(start).Seconds())
	}
}

// routeLabel is the path of a mux pattern ("GET /api/x" -> "/api/x"), or
// "unmatched" when no route matched.
func routeLabel(pattern string) string {
	if pattern == "" {
		return "unmatched"
	}
	if _, path, ok := strings.Cut(pattern, " "); ok {
		return path
	}
	return pattern
}

// statusLabels holds the label of every status code, so counting a
// request formats nothing.
var statusLabels = func() (l [600]string) {
	for i := range l {
		l[i] = strconv.Itoa(i)
	}
	return l
}()

func statusLabel(status int) string {
	if status >= 0 && status < len(statusLabels) {
		return statusLabels[status]
	}
	return strconv.Itoa(status)
}
