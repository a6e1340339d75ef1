package app_test

import (
	"errors"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/towerdefence/platformctl/internal/apitest"
	"github.com/towerdefence/platformctl/internal/mail"
	"github.com/towerdefence/platformctl/internal/mailtest"
	"github.com/towerdefence/platformctl/internal/testwait"
)

// gauge returns the value of the metric name whose labels include want,
// and whether it is there at all.
func gauge(t *testing.T, families []*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	t.Helper()
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			for k, v := range want {
				found := false
				for _, l := range m.GetLabel() {
					if l.GetName() == k && l.GetValue() == v {
						found = true
					}
				}
				if !found {
					continue next
				}
			}
			switch {
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue(), true
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue(), true
			}
		}
	}
	return 0, false
}

// TestMonitorMetrics checks the outbox and session figures on the
// metrics registry against what the test put into the database once the
// counter job ran, and that
// a database outage leaves them out of the scrape rather than failing it.
func TestMonitorMetrics(t *testing.T) {
	// Mail goes to a port nobody listens on: every attempt fails.
	srv := apitest.New(t,
		apitest.WithEnv("PLATFORM_SMTP_URL", "smtp://"+mailtest.ReserveAddr(t)+"?tls=none"),
		apitest.WithEnv("PLATFORM_MAIL_POLL_INTERVAL", "20ms"),
		apitest.WithEnv("PLATFORM_MAIL_RETRY_BASE", "20ms"))
	a := srv.App
	srv.SignUpPlayer(t)
	srv.SignUpPlayer(t)
	srv.CreateAdmin(t)

	out, err := a.MailComposer.Compose(mail.TemplateVerifyEmail, "someone@example.com",
		mail.Data{Name: "Someone", Link: "http://127.0.0.1/verify?token=x", ExpiresAt: time.Now().Add(time.Hour)}, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.DB.Mail().EnqueueMail(t.Context(), out); err != nil {
		t.Fatal(err)
	}
	a.MailWorker.Wake()

	var families []*dto.MetricFamily
	testwait.Nil(t, 10*time.Second, func() error {
		// The figures come from the counter job's snapshot: run the job
		// as its ticker would.
		if err := a.Gauges.Refresh(t.Context()); err != nil {
			t.Fatal(err)
		}
		var err error
		if families, err = a.Metrics.Gather(); err != nil {
			t.Fatal(err)
		}
		if failures, _ := gauge(t, families, "platform_mail_delivery_failures_total", nil); failures < 1 {
			return errors.New("no failed delivery attempt counted")
		}
		return nil
	})
	checks := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"platform_sessions_active", map[string]string{"realm": "player"}, 2},
		{"platform_sessions_active", map[string]string{"realm": "admin"}, 1},
		{"platform_mail_outbox_depth", nil, 1},
		{"platform_mail_outbox_messages", map[string]string{"status": "sent"}, 0},
		{"platform_monitor_up", nil, 1},
	}
	for _, c := range checks {
		got, ok := gauge(t, families, c.name, c.labels)
		if !ok || got != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	pending, _ := gauge(t, families, "platform_mail_outbox_messages", map[string]string{"status": "pending"})
	sending, _ := gauge(t, families, "platform_mail_outbox_messages", map[string]string{"status": "sending"})
	if pending+sending != 1 {
		t.Errorf("pending %v + sending %v, want 1", pending, sending)
	}

	a.DB.Close()
	families, err = a.Metrics.Gather()
	if err != nil {
		t.Fatalf("a scrape with the database gone must still succeed: %v", err)
	}
	if up, _ := gauge(t, families, "platform_monitor_up", nil); up != 0 {
		t.Errorf("platform_monitor_up = %v with the database gone, want 0", up)
	}
	if _, ok := gauge(t, families, "platform_sessions_active", nil); ok {
		t.Errorf("session figures reported with the database gone")
	}
}
