package app

import (
	"runtime"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/towerdefence/platformctl/internal/mail"
	"github.com/towerdefence/platformctl/internal/platform"
)

// processMetrics are the figures this process counts itself: counters
// that only go up while the process lives (Prometheus' rate() handles
// restarts), summed across replicas by the query, never by the database.
type processMetrics struct {
	mailFailures prometheus.Counter
}

// newProcessMetrics registers the process's own metrics on reg, with
// platform_build_info describing the running binary.
func newProcessMetrics(reg prometheus.Registerer, build platform.Build) *processMetrics {
	info := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "platform_build_info",
		Help: "Always 1; the labels describe the running binary.",
	}, []string{"version", "commit", "goversion"})
	info.WithLabelValues(build.Version, build.Commit, runtime.Version()).Set(1)
	m := &processMetrics{
		mailFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "platform_mail_delivery_failures_total",
			Help: "Delivery attempts of this process that failed, temporarily or for good.",
		}),
	}
	reg.MustRegister(info, m.mailFailures)
	return m
}

// observeMailAttempt counts a finished delivery attempt.
func (m *processMetrics) observeMailAttempt(o mail.Outcome) {
	if o == mail.OutcomeRetry || o == mail.OutcomeFailed {
		m.mailFailures.Inc()
	}
}
