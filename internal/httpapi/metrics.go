package httpapi

import (
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics counts requests by route, method and status. Labelling by the
// mux pattern rather than the raw path keeps the label set bounded no
// matter what paths clients send; the route label is the pattern's path
// alone ("/api/player/lobbies/{id}"), since the method has its own label.
//
// promhttp's InstrumentHandler* middleware would wrap every route in its
// own handler and writer; the pipeline's metrics step reads the matched
// pattern after the mux instead and keeps each route's series at hand
// (routeMetricsTable), with the same metric names and types.
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

// routeMetricsTable holds the series of every registered route, by mux
// pattern, made when the routes are registered and only read afterwards.
// Finding a vector's child by label values hashes the values and takes
// the vector's lock on every request; a route's entry keeps its children
// once it has them.
type routeMetricsTable struct {
	m      *Metrics
	routes map[string]*routeMetrics // "" is the requests no route matched
}

func (m *Metrics) forRoutes(patterns []string) *routeMetricsTable {
	t := &routeMetricsTable{m: m, routes: make(map[string]*routeMetrics, len(patterns)+1)}
	t.routes[""] = &routeMetrics{route: routeLabel(""), method: "GET"}
	for _, p := range patterns {
		method, _, ok := strings.Cut(p, " ")
		if !ok {
			method = "" // a pattern for every method
		}
		t.routes[p] = &routeMetrics{route: routeLabel(p), method: method}
	}
	return t
}

// observe counts a request and records its duration. Patterns the table
// does not know (the mux names a redirect's target path) look their
// series up each time.
func (t *routeMetricsTable) observe(pattern, method string, status int, seconds float64) {
	rm := t.routes[pattern]
	if rm == nil {
		route := routeLabel(pattern)
		t.m.requests.WithLabelValues(route, method, statusLabel(status)).Inc()
		t.m.duration.WithLabelValues(route).Observe(seconds)
		return
	}
	rm.observe(t.m, method, status, seconds)
}

// routeMetrics are one route's series. They are made on the route's
// first request, as looking them up by label values would, so that
// /metrics lists no series for routes nobody called.
type routeMetrics struct {
	route  string
	method string // the pattern's method; other methods (HEAD) look theirs up
	timing atomic.Pointer[observerRef]
	counts [len(countedStatuses)]atomic.Pointer[counterRef]
}

func (rm *routeMetrics) observe(m *Metrics, method string, status int, seconds float64) {
	rm.counter(m, method, status).Inc()
	rm.observer(m).Observe(seconds)
}

type observerRef struct{ prometheus.Observer }

type counterRef struct{ prometheus.Counter }

func (rm *routeMetrics) observer(m *Metrics) prometheus.Observer {
	if o := rm.timing.Load(); o != nil {
		return o.Observer
	}
	o := &observerRef{m.duration.WithLabelValues(rm.route)}
	rm.timing.Store(o) // a race stores the same child twice
	return o.Observer
}

func (rm *routeMetrics) counter(m *Metrics, method string, status int) prometheus.Counter {
	slot := statusSlot(status)
	if method != rm.method || slot < 0 {
		return m.requests.WithLabelValues(rm.route, method, statusLabel(status))
	}
	if c := rm.counts[slot].Load(); c != nil {
		return c.Counter
	}
	c := &counterRef{m.requests.WithLabelValues(rm.route, method, statusLabel(status))}
	rm.counts[slot].Store(c)
	return c.Counter
}

// countedStatuses are the statuses this API answers with, whose counters
// each route keeps at hand; any other status is looked up each time.
var countedStatuses = [...]int{200, 201, 204, 301, 302, 303, 304, 307, 308,
	400, 401, 403, 404, 405, 409, 410, 413, 415, 422, 429, 500, 502, 503, 504}

// statusSlots maps a status to its index in countedStatuses, or -1.
var statusSlots = func() (s [600]int8) {
	for i := range s {
		s[i] = -1
	}
	for i, st := range countedStatuses {
		s[st] = int8(i)
	}
	return s
}()

func statusSlot(status int) int {
	if status < 0 || status >= len(statusSlots) {
		return -1
	}
	return int(statusSlots[status])
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
