package events

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Why a stream ended, as platform_events_streams_closed_total names it:
// the reasons of stream.closed (ClosedReplaced, ClosedShutdown,
// ClosedLagging), and these.
const (
	// EndedClientGone: a write failed or outlived its deadline, because the
	// client went away or stopped reading.
	EndedClientGone = "client_gone"
	// EndedSession: the session was signed out, revoked, ended by a
	// password change, or expired (session.ended).
	EndedSession = "session_ended"
	// EndedSetup: the stream could not start (its snapshot was not read or
	// not written).
	EndedSetup = "setup_failed"
)

// endReasons are the label values of platform_events_streams_closed_total.
var endReasons = []string{EndedClientGone, ClosedReplaced, ClosedShutdown, ClosedLagging, EndedSession, EndedSetup}

// eventTypes are the label values of platform_events_delivered_total.
var eventTypes = []string{TypeSnapshot, TypeLobbyUpdated, TypeSocialUpdated, TypeSessionEnded, TypeStreamClosed}

// Why an event was not delivered, as platform_events_dropped_total names
// it.
const (
	droppedLagging = "lagging" // its stream had the whole buffer waiting and was closed
	droppedStale   = "stale"   // it showed a lobby older than one its stream had been sent
)

// Metrics are the event streams' figures of this process. Counters only go
// up while the process lives; sum them over replicas.
type Metrics struct {
	open       prometheus.Gauge
	opened     prometheus.Counter
	closed     *prometheus.CounterVec
	refused    prometheus.Counter
	delivered  *prometheus.CounterVec
	dropped    *prometheus.CounterVec
	reconnects prometheus.Counter
	lag        prometheus.Histogram
}

// NewMetrics registers the event stream metrics on reg. Every label value
// is there from the start, at zero, so that the first occurrence of each
// shows in rate() and increase().
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		open: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "platform_events_streams_open",
			Help: "Event streams open in this process.",
		}),
		opened: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "platform_events_streams_opened_total",
			Help: "Event streams this process opened.",
		}),
		closed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "platform_events_streams_closed_total",
			Help: "Event streams of this process that ended, by reason.",
		}, []string{"reason"}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "platform_events_streams_refused_total",
			Help: "Event streams refused with 503 because this process had PLATFORM_EVENTS_MAX_STREAMS open.",
		}),
		delivered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "platform_events_delivered_total",
			Help: "Events this process wrote to clients, by type.",
		}, []string{"type"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "platform_events_dropped_total",
			Help: "Events this process did not deliver, by reason: lagging (the stream's client fell a whole buffer behind), stale (a newer state of the lobby was sent first).",
		}, []string{"reason"}),
		reconnects: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "platform_events_listener_reconnects_total",
			Help: "Times this process listened for notices again after a gap in which some may have been lost; each sends its streams a fresh snapshot.",
		}),
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "platform_events_delivery_lag_seconds",
			Help:    "Time from a change's publication, just after its commit, to its event's write to a client.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}),
	}
	for _, r := range endReasons {
		m.closed.WithLabelValues(r)
	}
	for _, t := range eventTypes {
		m.delivered.WithLabelValues(t)
	}
	for _, r := range []string{droppedLagging, droppedStale} {
		m.dropped.WithLabelValues(r)
	}
	reg.MustRegister(m.open, m.opened, m.closed, m.refused, m.delivered, m.dropped, m.reconnects, m.lag)
	return m
}

// The methods below do nothing on a nil *Metrics, for hubs and streams
// built without them.

func (m *Metrics) streamOpened(open int) {
	if m != nil {
		m.opened.Inc()
		m.open.Set(float64(open))
	}
}

func (m *Metrics) streamGone(open int) {
	if m != nil {
		m.open.Set(float64(open))
	}
}

func (m *Metrics) streamEnded(reason string) {
	if m != nil {
		m.closed.WithLabelValues(reason).Inc()
	}
}

func (m *Metrics) streamRefused() {
	if m != nil {
		m.refused.Inc()
	}
}

func (m *Metrics) eventDropped(reason string) {
	if m != nil {
		m.dropped.WithLabelValues(reason).Inc()
	}
}

func (m *Metrics) listenerReconnected() {
	if m != nil {
		m.reconnects.Inc()
	}
}

func (m *Metrics) eventWritten(ev Event) {
	if m == nil {
		return
	}
	m.delivered.WithLabelValues(ev.Type).Inc()
	if ev.shows != nil && !ev.shows.at.IsZero() {
		m.lag.Observe(time.Since(ev.shows.at).Seconds())
	}
}
