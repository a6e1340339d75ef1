package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/towerdefence/platformctl/internal/apitest"
	"github.com/towerdefence/platformctl/internal/mail"
	"github.com/towerdefence/platformctl/internal/mailtest"
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
	if err := a.DB.Mail().EnqueueMail(context.Background(), out); err != nil {
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
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(srv.Logs(), out.ID.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("message %s never logged:\n%s", out.ID, srv.Logs())
		}
		time.Sleep(20 * time.Millisecond)
	}
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
