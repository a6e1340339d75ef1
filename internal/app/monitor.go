package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/towerdefence/platformctl/internal/admin"
	"github.com/towerdefence/platformctl/internal/mail"
)

// monitorTimeout bounds the database read of one scrape, so that a slow
// or unreachable database leaves these figures out of the scrape instead
// of hanging it.
const monitorTimeout = 2 * time.Second

// monitorCollector exports figures that live in the database — the
// outbox and the sessions — from the gauge snapshot the counter job
// (admin.Gauges.Refresh) keeps, so a scrape reads one row whatever the
// size of the tables. They are database-wide, so every serve process on
// one database reports the same values; they are gauges. Counters (which
// only go up) are kept per process by the code that does the counted
// work: see processMetrics.
type monitorCollector struct {
	// ctx is the App's: Prometheus calls Collect without a context, and
	// a scrape should not outlive the process's own lifetime.
	ctx    context.Context
	log    *slog.Logger
	gauges *admin.Gauges

	outboxMessages *prometheus.Desc
	outboxDepth    *prometheus.Desc
	failedMessages *prometheus.Desc
	activeSessions *prometheus.Desc
	refreshed      *prometheus.Desc
	up             *prometheus.Desc
}

func newMonitorCollector(ctx context.Context, log *slog.Logger, gauges *admin.Gauges) *monitorCollector {
	return &monitorCollector{
		ctx: ctx, log: log, gauges: gauges,
		outboxMessages: prometheus.NewDesc("platform_mail_outbox_messages",
			"Messages in the mail outbox by status (database-wide).", []string{"status"}, nil),
		outboxDepth: prometheus.NewDesc("platform_mail_outbox_depth",
			"Messages waiting to be delivered: pending or being sent (database-wide).", nil, nil),
		failedMessages: prometheus.NewDesc("platform_mail_failed_messages",
			"Messages in the outbox that failed for good and wait for support (database-wide).", nil, nil),
		activeSessions: prometheus.NewDesc("platform_sessions_active",
			"Unexpired sessions by realm (database-wide).", []string{"realm"}, nil),
		refreshed: prometheus.NewDesc("platform_gauges_refreshed_timestamp_seconds",
			"When the counter job last measured the database-wide figures (0: not yet).", nil, nil),
		up: prometheus.NewDesc("platform_monitor_up",
			"1 when the database answered the monitoring read of this scrape, else 0.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *monitorCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.outboxMessages, c.outboxDepth, c.failedMessages, c.activeSessions, c.refreshed, c.up} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *monitorCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(c.ctx, monitorTimeout)
	defer cancel()
	s, err := c.gauges.Snapshot(ctx)
	if err != nil {
		c.log.Warn("metrics: reading the gauge snapshot failed", "error", err)
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	for _, status := range mail.Statuses {
		ch <- prometheus.MustNewConstMetric(c.outboxMessages, prometheus.GaugeValue, float64(s.Outbox[string(status)]), string(status))
	}
	depth := s.Outbox[string(mail.StatusPending)] + s.Outbox[string(mail.StatusSending)]
	ch <- prometheus.MustNewConstMetric(c.outboxDepth, prometheus.GaugeValue, float64(depth))
	ch <- prometheus.MustNewConstMetric(c.failedMessages, prometheus.GaugeValue, float64(s.Outbox[string(mail.StatusFailed)]))
	ch <- prometheus.MustNewConstMetric(c.activeSessions, prometheus.GaugeValue, float64(s.Accounts.PlayerSessions), "player")
	ch <- prometheus.MustNewConstMetric(c.activeSessions, prometheus.GaugeValue, float64(s.Accounts.AdminSessions), "admin")
	refreshed := 0.0
	if !s.RefreshedAt.IsZero() {
		refreshed = float64(s.RefreshedAt.Unix())
	}
	ch <- prometheus.MustNewConstMetric(c.refreshed, prometheus.GaugeValue, refreshed)
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
}
