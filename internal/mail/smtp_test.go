package mail_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/towerdefence/platformctl/internal/mail"
	"github.com/towerdefence/platformctl/internal/mailtest"
)

func TestSMTPURL(t *testing.T) {
	for _, tc := range []struct {
		url  string
		want string // String() of the sender, or "" for an error
	}{
		{"smtp://user:pass@mail.example.com:587", "smtp mail.example.com:587 (starttls)"},
		{"smtp://mail.example.com", "smtp mail.example.com:587 (starttls)"},
		{"smtp://mail.example.com?tls=starttls", "smtp mail.example.com:587 (starttls)"},
		{"smtps://mail.example.com", "smtp mail.example.com:465 (implicit)"},
		{"smtps://u:p@mail.example.com:2465", "smtp mail.example.com:2465 (implicit)"},
		{"smtp://127.0.0.1:25?tls=none", "smtp 127.0.0.1:25 (none)"},
		{"smtp://[::1]:2525?tls=none", "smtp [::1]:2525 (none)"},
		{"smtps://mail.example.com?tls=none", ""},
		{"smtp://mail.example.com?tls=maybe", ""},
		{"smtp://mail.example.com?debug=1", ""},
		{"http://mail.example.com", ""},
		{"smtp://:25", ""},
		{"smtp://mail.example.com:0", ""},
		{"smtp://mail.example.com:99999", ""},
		{"::not a url", ""},
	} {
		s, err := mail.NewSMTPSender(mail.SMTPConfig{URL: tc.url, From: "Platform <no-reply@example.com>"})
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("%q: accepted as %s, want an error", tc.url, s)
		case tc.want != "" && err != nil:
			t.Errorf("%q: %v", tc.url, err)
		case tc.want != "" && s.String() != tc.want:
			t.Errorf("%q: got %s, want %s", tc.url, s, tc.want)
		}
		if s != nil && strings.Contains(s.String(), "pass") {
			t.Errorf("%q: String() shows the password", tc.url)
		}
	}
	if _, err := mail.NewSMTPSender(mail.SMTPConfig{URL: "smtp://h:25", From: "not an address"}); err == nil {
		t.Error("a bad From address was accepted")
	}
}

func rendered(t *testing.T, to string) *mail.Rendered {
	t.Helper()
	c := newComposer(t)
	out, err := c.Compose(mail.TemplateVerifyEmail, to, sampleData(), time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Open(out.ID, out.Template, out.To, out.Payload)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Each TLS mode against a real server speaking it, with authentication.
func TestSMTPSenderModes(t *testing.T) {
	for _, mode := range []string{mailtest.TLSNone, mailtest.TLSStartTLS, mailtest.TLSImplicit} {
		t.Run(mode, func(t *testing.T) {
			srv := mailtest.Start(t, mailtest.Options{TLS: mode, Username: "relay", Password: "s3cret"})
			s, err := mail.NewSMTPSender(mail.SMTPConfig{URL: srv.URL(), From: "Platform <no-reply@example.com>", TLSConfig: srv.ClientTLS()})
			if err != nil {
				t.Fatal(err)
			}
			r := rendered(t, "ada@example.com")
			if err := s.Send(t.Context(), r); err != nil {
				t.Fatal(err)
			}
			got := srv.WaitForCount(t, 5*time.Second, 1)[0]
			if got.MessageID != r.ID.String()+"@example.com" {
				t.Errorf("Message-ID %q, want the outbox id", got.MessageID)
			}
			if got.Subject != r.Subject || got.Token() == "" || !strings.Contains(got.HTML, "<a href=") {
				t.Errorf("delivered message lost parts: subject %q, text %q, html %q", got.Subject, got.Text, got.HTML)
			}
			if got.From != "no-reply@example.com" || len(got.To) != 1 || got.To[0] != "ada@example.com" {
				t.Errorf("envelope from %q to %v", got.From, got.To)
			}
			if got.Header.Get("Auto-Submitted") != "auto-generated" {
				t.Errorf("Auto-Submitted header %q", got.Header.Get("Auto-Submitted"))
			}
		})
	}
}

// smtp:// without tls=none must never fall back to a plain connection.
func TestSMTPSenderRequiresSTARTTLS(t *testing.T) {
	srv := mailtest.Start(t, mailtest.Options{TLS: mailtest.TLSNone})
	s, err := mail.NewSMTPSender(mail.SMTPConfig{URL: "smtp://" + srv.Addr(), From: "no-reply@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Send(t.Context(), rendered(t, "ada@example.com"))
	var de *mail.DeliveryError
	if !errors.As(err, &de) || de.Permanent {
		t.Fatalf("got %v, want a temporary delivery error", err)
	}
	if n := len(srv.Messages()); n != 0 {
		t.Fatalf("%d messages went out over plain SMTP", n)
	}
}

// Wrong credentials are a configuration problem, retried rather than
// failing the message for good; a refused recipient is permanent.
func TestSMTPSenderErrorClasses(t *testing.T) {
	srv := mailtest.Start(t, mailtest.Options{Username: "relay", Password: "right",
		Reject: func(rcpt string) error {
			switch rcpt {
			case "gone@example.com":
				return mailtest.Refuse(550, "no such user")
			case "busy@example.com":
				return mailtest.Refuse(451, "try later")
			}
			return nil
		}})
	send := func(url, to string) error {
		s, err := mail.NewSMTPSender(mail.SMTPConfig{URL: url, From: "no-reply@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		return s.Send(t.Context(), rendered(t, to))
	}
	for _, tc := range []struct {
		name      string
		url, to   string
		permanent bool
		code      int
	}{
		{"bad credentials", "smtp://relay:wrong@" + srv.Addr() + "?tls=none", "ada@example.com", false, 0},
		{"refused recipient", srv.URL(), "gone@example.com", true, 550},
		{"greylisted recipient", srv.URL(), "busy@example.com", false, 451},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := send(tc.url, tc.to)
			var de *mail.DeliveryError
			if !errors.As(err, &de) {
				t.Fatalf("got %v, want a DeliveryError", err)
			}
			if de.Permanent != tc.permanent || de.Code != tc.code {
				t.Fatalf("got permanent=%v code=%d (%v), want permanent=%v code=%d", de.Permanent, de.Code, err, tc.permanent, tc.code)
			}
		})
	}
	if n := len(srv.Messages()); n != 0 {
		t.Fatalf("%d messages delivered, want none", n)
	}
}

// Cancelling the context aborts a conversation the server is holding up.
func TestSMTPSenderCancel(t *testing.T) {
	srv := mailtest.Start(t, mailtest.Options{})
	stalled := srv.StallRecipients()
	s, err := mail.NewSMTPSender(mail.SMTPConfig{URL: srv.URL(), From: "no-reply@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Send(ctx, rendered(t, "ada@example.com")) }()
	<-stalled
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a cancelled send reported success")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Send did not return after cancel")
	}
	srv.Release()
	srv.WaitSessionsEnded(t, 5*time.Second, 1)
	if n := len(srv.Messages()); n != 0 {
		t.Fatalf("%d messages delivered after cancel", n)
	}
}
