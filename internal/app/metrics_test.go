package app_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/towerdefence/platformctl/internal/apitest"
	"github.com/towerdefence/platformctl/internal/mail"
	"github.com/towerdefence/platformctl/internal/mailtest"
	"github.com/towerdefence/platformctl/internal/testwait"
)

// TestMailFailureCounterSurvivesPurge refuses a message for good, checks
// the failure counter and the failed-messages gauge, then purges the
// outbox: the gauge follows the database down, the counter never does.
func TestMailFailureCounterSurvivesPurge(t *testing.T) {
	smtpSrv := mailtest.Start(t, mailtest.Options{Reject: func(string) error { return mailtest.Refuse(550, "mailbox unavailable") }})
	srv := apitest.New(t,
		apitest.WithEnv("PLATFORM_SMTP_URL", smtpSrv.URL()),
		apitest.WithEnv("PLATFORM_MAIL_POLL_INTERVAL", "20ms"))
	a := srv.App
	for _, to := range []string{"gone@example.com", "left@example.com"} {
		out, err := a.MailComposer.Compose(mail.TemplateVerifyEmail, to,
			mail.Data{Name: "Someone", Link: "http://127.0.0.1/verify?token=x", ExpiresAt: time.Now().Add(time.Hour)}, time.Now().Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if err := a.DB.Mail().EnqueueMail(t.Context(), out); err != nil {
			t.Fatal(err)
		}
	}
	a.MailWorker.Wake()

	// scrape measures the database-wide gauges first, as the counter job
	// does every period, then reads one figure.
	scrape := func(name string) float64 {
		t.Helper()
		if err := a.Gauges.Refresh(t.Context()); err != nil {
			t.Fatal(err)
		}
		families, err := a.Metrics.Gather()
		if err != nil {
			t.Fatal(err)
		}
		v, ok := gauge(t, families, name, nil)
		if !ok {
			t.Fatalf("%s missing from the scrape", name)
		}
		return v
	}
	testwait.For(t, 10*time.Second, "two failed messages", func() bool { return scrape("platform_mail_failed_messages") >= 2 })
	before := scrape("platform_mail_delivery_failures_total")
	if before != 2 {
		t.Fatalf("platform_mail_delivery_failures_total = %v after two refused messages, want 2", before)
	}

	n, err := a.DB.Sweeps().FinishedMail(t.Context(), time.Now().Add(time.Hour), false)
	if err != nil || n != 2 {
		t.Fatalf("FinishedMail sweep = %d, %v; want both failed messages purged", n, err)
	}
	if got := scrape("platform_mail_failed_messages"); got != 0 {
		t.Errorf("platform_mail_failed_messages = %v after the purge, want 0", got)
	}
	if after := scrape("platform_mail_delivery_failures_total"); after != before {
		t.Errorf("platform_mail_delivery_failures_total went from %v to %v across a purge; a counter only goes up", before, after)
	}
}

// TestBuildInfo checks platform_build_info names the binary's version,
// commit and Go version.
func TestBuildInfo(t *testing.T) {
	srv := apitest.New(t)
	families, err := srv.App.Metrics.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"version": "test", "commit": "test", "goversion": runtime.Version()}
	if v, ok := gauge(t, families, "platform_build_info", want); !ok || v != 1 {
		t.Fatalf("platform_build_info%v = %v (present %v), want 1", want, v, ok)
	}
}
