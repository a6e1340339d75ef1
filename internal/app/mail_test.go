package app_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/towerdefence/platformctl/internal/apitest"
	"github.com/towerdefence/platformctl/internal/app"
	"github.com/towerdefence/platformctl/internal/config"
	"github.com/towerdefence/platformctl/internal/mail"
	"github.com/towerdefence/platformctl/internal/mailtest"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/storetest"
	"github.com/towerdefence/platformctl/internal/testwait"
)

func enqueue(t *testing.T, srv *apitest.Server, to string) *mail.Outgoing {
	t.Helper()
	a := srv.App
	out, err := a.MailComposer.Compose(mail.TemplateVerifyEmail, to,
		mail.Data{Email: to, Link: srv.URL + "/verify?token=" + strings.Repeat("0f", 32), ExpiresAt: time.Now().Add(time.Hour)},
		time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.DB.Mail().EnqueueMail(t.Context(), out); err != nil {
		t.Fatal(err)
	}
	a.MailWorker.Wake()
	return out
}

// serve's background work includes the mail worker, configured from
// PLATFORM_SMTP_URL and PLATFORM_MAIL_FROM.
func TestServeDeliversOutbox(t *testing.T) {
	smtp := mailtest.Start(t, mailtest.Options{})
	srv := apitest.New(t,
		apitest.WithEnv("PLATFORM_SMTP_URL", smtp.URL()),
		apitest.WithEnv("PLATFORM_MAIL_FROM", "Tower Defence <accounts@td.example>"))
	out := enqueue(t, srv, "ada@example.com")
	got := smtp.WaitFor(t, 10*time.Second, mailtest.To("ada@example.com"))
	if got.MessageID != out.ID.String()+"@td.example" || got.Token() == "" {
		t.Fatalf("delivered %q with token %q", got.MessageID, got.Token())
	}
	if !strings.Contains(got.Header.Get("From"), "accounts@td.example") {
		t.Fatalf("From %q", got.Header.Get("From"))
	}
}

// In development without an SMTP server the message and its link are
// logged, never dropped.
func TestDevelopmentLogsMail(t *testing.T) {
	srv := apitest.New(t)
	out := enqueue(t, srv, "ada@example.com")
	testwait.Nil(t, 10*time.Second, func() error {
		if logs := srv.Logs(); !strings.Contains(logs, out.ID.String()) {
			return fmt.Errorf("message %s not logged:\n%s", out.ID, logs)
		}
		return nil
	})
	for _, line := range strings.Split(srv.Logs(), "\n") {
		if strings.Contains(line, out.ID.String()) && strings.Contains(line, "level=INFO") {
			if !strings.Contains(line, "ada@example.com") || !strings.Contains(line, "token="+strings.Repeat("0f", 32)) {
				t.Fatalf("log line lacks recipient or link: %s", line)
			}
			return
		}
	}
	t.Fatalf("no info line for the message:\n%s", srv.Logs())
}

// `serve` is stopped while its worker is in the middle of an SMTP
// conversation: the message goes back to the outbox, and the next `serve`
// on the same database delivers it, once.
func TestServeStoppedMidDelivery(t *testing.T) {
	smtp := mailtest.Start(t, mailtest.Options{})
	stalled := smtp.StallRecipients()
	env := map[string]string{
		"PLATFORM_DATA_DIR":     t.TempDir(),
		"PLATFORM_DATABASE_URL": storetest.URL(t),
		"PLATFORM_SECRET":       apitest.Secret,
		"PLATFORM_MIGRATE":      "true",
		"PLATFORM_SMTP_URL":     smtp.URL(),
	}
	cfg, err := config.Load(func(k string) string { return env[k] }, nil)
	if err != nil {
		t.Fatal(err)
	}
	start := func() (*app.App, func()) {
		a, err := app.New(t.Context(), cfg, slog.New(slog.DiscardHandler), platform.Build{Version: "test"})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { a.Run(ctx); close(done) }()
		return a, sync.OnceFunc(func() { cancel(); <-done; a.Close() })
	}

	first, stop := start()
	out, err := first.MailComposer.Compose(mail.TemplateVerifyEmail, "ada@example.com",
		mail.Data{Email: "ada@example.com", Link: "http://x.example/?token=" + strings.Repeat("0f", 32), ExpiresAt: time.Now().Add(time.Hour)},
		time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := first.DB.Mail().EnqueueMail(t.Context(), out); err != nil {
		t.Fatal(err)
	}
	first.MailWorker.Wake()
	select {
	case <-stalled:
	case <-time.After(10 * time.Second):
		t.Fatal("the worker never reached RCPT TO")
	}
	stop()
	smtp.Release()

	second, stop := start()
	smtp.WaitFor(t, 10*time.Second, mailtest.To("ada@example.com"))
	defer stop()
	var atts []mail.Attempt
	testwait.Nil(t, 10*time.Second, func() error {
		m, a, err := second.DB.Mail().GetMail(t.Context(), out.ID)
		if err != nil {
			t.Fatal(err)
		}
		if atts = a; m.Status != mail.StatusSent {
			return fmt.Errorf("message still %s after delivery (attempts %+v)", m.Status, atts)
		}
		return nil
	})
	if len(atts) != 2 || atts[0].Outcome != mail.OutcomeInterrupted || atts[1].Outcome != mail.OutcomeSent {
		t.Errorf("attempts %+v; want one interrupted, then one sent", atts)
	}
	stop() // no worker runs now, so the count below is final
	if n := len(smtp.Messages()); n != 1 {
		t.Fatalf("%d deliveries, want 1", n)
	}
}
