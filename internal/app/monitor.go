package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/mail"
)

// monitorTimeout bounds the database queries of one scrape, so that a
// slow or unreachable database leaves these figures out of the scrape
// instead of hanging it.
const monitorTimeout = 2 * time.Second

// monitorCollector exports figures that live in the database — the
// outbox and the sessions — read through the services at scrape time.
// They are database-wide, so every serve process on one database reports
// the same values; they are gauges. Counters (which only go up) are kept
// per process by the code that does the counted work: see processMetrics.
type monitorCollector struct {
	// ctx is the App's: Prometheus calls Collect without a context, and
	// a scrape should not outlive the process's own lifetime.
	ctx      context.Context
	log      *slog.Logger
	outbox   *mail.Monitor
	sessions *auth.Monitor

	outboxMessages *prometheus.Desc
	outboxDepth    *prometheus.Desc
	failedMessages *prometheus.Desc
	activeSessions *prometheus.Desc
	up             *prometheus.Desc
}

func newMonitorCollector(ctx context.Context, log *slog.Logger, outbox *mail.Monitor, sessions *auth.Monitor) *monitorCollector {
	return &monitorCollector{
		ctx: ctx, log: log, outbox: outbox, sessions: sessions,
		outboxMessages: prometheus.NewDesc("platform_mail_outbox_messages",
			"Messages in the mail outbox by status (database-wide).", []string{"status"}, nil),
		outboxDepth: prometheus.NewDesc("platform_mail_outbox_depth",
			"Messages waiting to be delivered: pending or being sent (database-wide).", nil, nil),
		failedMessages: prometheus.NewDesc("platform_mail_failed_messages",
			"Messages in the outbox that failed for good and wait for support (database-wide).", nil, nil),
		activeSessions: prometheus.NewDesc("platform_sessions_active",
			"Unexpired sessions by realm (database-wide).", []string{"realm"}, nil),
		up: prometheus.NewDesc("platform_monitor_up",
			"1 when the database answered the monitoring queries of this scrape, else 0.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *monitorCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.outboxMessages, c.outboxDepth, c.failedMessages, c.activeSessions, c.up} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *monitorCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(c.ctx, monitorTimeout)
	defer cancel()
	up := 1.0
	if counts, err := c.outbox.Counts(ctx); err != nil {
		up = 0
		c.log.Warn("metrics: counting the outbox failed", "error", err)
	} else {
		for status, n := range counts.ByStatus {
			ch <- prometheus.MustNewConstMetric(c.outboxMessages, prometheus.GaugeValue, float64(n), string(status))
		}
		ch <- prometheus.MustNewConstMetric(c.outboxDepth, prometheus.GaugeValue, float64(counts.Depth()))
		ch <- prometheus.MustNewConstMetric(c.failedMessages, prometheus.GaugeValue, float64(counts.ByStatus[mail.StatusFailed]))
	}
	if active, err := c.sessions.ActiveSessions(ctx); err != nil {
		up = 0
		c.log.Warn("metrics: counting sessions failed", "error", err)
	} else {
		for realm, n := range active {
			ch <- prometheus.MustNewConstMetric(c.activeSessions, prometheus.GaugeValue, float64(n), string(realm))
		}
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up)
}
