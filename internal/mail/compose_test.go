package mail_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/mail"
)

const testSecret = "0123456789abcdef0123456789abcdef-test"

func newComposer(t *testing.T) *mail.Composer {
	t.Helper()
	c, err := mail.NewComposer(testSecret, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func sampleData() mail.Data {
	return mail.Data{
		Name:        "Ada <script>",
		Link:        "https://play.example.com/confirm?token=" + strings.Repeat("ab", 32),
		ExpiresAt:   time.Date(2026, 11, 21, 20, 0, 0, 0, time.UTC),
		Email:       "ada@example.com",
		NewEmail:    "ada@new.example.com",
		Nickname:    "ada",
		Change:      "An authenticator app was added to your account.",
		NewName:     "Ada L.",
		NewNickname: "lovelace",
		Provider:    "Google",
	}
}

func TestComposeSealsAndOpens(t *testing.T) {
	c := newComposer(t)
	data := sampleData()
	out, err := c.Compose(mail.TemplateProfileChange, "ada@example.com", data, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out.Payload, []byte("token=")) || bytes.Contains(out.Payload, []byte(data.NewNickname)) {
		t.Fatal("payload holds the link or data in clear")
	}
	if out.Subject == "" || strings.Contains(out.Subject, "token") {
		t.Fatalf("subject %q", out.Subject)
	}
	r, err := c.Open(out.ID, out.Template, out.To, out.Payload)
	if err != nil {
		t.Fatal(err)
	}
	if r.Link != data.Link || !strings.Contains(r.Text, data.Link) {
		t.Fatalf("opened message lost the link: link %q, text %q", r.Link, r.Text)
	}
	// The payload is bound to its message id and to the secret.
	if _, err := c.Open(uuid.New(), out.Template, out.To, out.Payload); err == nil {
		t.Fatal("payload opened under another message id")
	}
	other, err := mail.NewComposer(testSecret+"x", time.Now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Open(out.ID, out.Template, out.To, out.Payload); err == nil {
		t.Fatal("payload opened with another secret")
	}
	tampered := bytes.Clone(out.Payload)
	tampered[len(tampered)-1] ^= 1
	if _, err := c.Open(out.ID, out.Template, out.To, tampered); err == nil {
		t.Fatal("tampered payload opened")
	}
	if _, err := c.Open(out.ID, out.Template, out.To, nil); err == nil {
		t.Fatal("purged payload opened")
	}
}

func TestComposeRefuses(t *testing.T) {
	c := newComposer(t)
	later := time.Now().Add(time.Hour)
	for _, tc := range []struct {
		name    string
		tmpl    mail.Template
		to      string
		expires time.Time
	}{
		{"unknown template", "nope", "a@example.com", later},
		{"display name", mail.TemplateVerifyEmail, "Ada <a@example.com>", later},
		{"header injection", mail.TemplateVerifyEmail, "a@example.com\r\nBcc: b@example.com", later},
		{"empty", mail.TemplateVerifyEmail, "", later},
		{"no domain", mail.TemplateVerifyEmail, "ada", later},
		{"too long", mail.TemplateVerifyEmail, strings.Repeat("a", 250) + "@example.com", later},
		{"already expired", mail.TemplateVerifyEmail, "a@example.com", time.Now().Add(-time.Second)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := c.Compose(tc.tmpl, tc.to, sampleData(), tc.expires); err == nil {
				t.Fatalf("Compose(%q, %q) succeeded", tc.tmpl, tc.to)
			}
		})
	}
}

// Every template renders both parts, says what changes, and carries its
// link; mail to an address that is losing the account says what to do if
// it was not its owner.
func TestTemplates(t *testing.T) {
	c := newComposer(t)
	data := sampleData()
	notYou := map[mail.Template]bool{
		mail.TemplateProfileChange: true, mail.TemplateEmailChangeOld: true, mail.TemplatePasswordChange: true,
		mail.TemplateEmailChanged: true, mail.TemplatePasswordChanged: true, mail.TemplateResetPassword: true,
		mail.TemplateAccountLinked: true, mail.TemplateAccountUnlinked: true,
		mail.TemplateSecurityChange: true,
		mail.TemplateDeleteAccount:  true, mail.TemplateAccountDeleted: true,
	}
	mentions := map[mail.Template][]string{
		mail.TemplateProfileChange:   {data.NewName, data.NewNickname, data.Nickname},
		mail.TemplateEmailChangeOld:  {data.Email, data.NewEmail, "Step 1 of 2"},
		mail.TemplateEmailChangeNew:  {data.Email, data.NewEmail, "Step 2 of 2"},
		mail.TemplatePasswordChange:  {"signed out"},
		mail.TemplateEmailChanged:    {data.Email, data.NewEmail},
		mail.TemplatePasswordChanged: {"signed out"},
		mail.TemplateVerifyEmail:     {data.Email},
		mail.TemplateResetPassword:   {data.Email},
		mail.TemplateAccountLinked:   {data.Provider},
		mail.TemplateAccountUnlinked: {data.Provider},
		mail.TemplateSecurityChange:  {data.Change},
		mail.TemplateDeleteAccount:   {data.Email, "cannot be undone"},
		mail.TemplateAccountDeleted:  {data.Email, "deleted"},
	}
	noLink := map[mail.Template]bool{mail.TemplateEmailChanged: true, mail.TemplatePasswordChanged: true,
		mail.TemplateAccountLinked: true, mail.TemplateAccountUnlinked: true, mail.TemplateSecurityChange: true,
		mail.TemplateAccountDeleted: true}
	for _, tmpl := range mail.Templates {
		t.Run(string(tmpl), func(t *testing.T) {
			d := data
			if noLink[tmpl] {
				d.Link = ""
			}
			out, err := c.Compose(tmpl, "ada@example.com", d, time.Now().Add(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			r, err := c.Open(out.ID, tmpl, out.To, out.Payload)
			if err != nil {
				t.Fatal(err)
			}
			if r.Subject == "" || strings.Contains(r.Subject, "\n") {
				t.Errorf("subject %q", r.Subject)
			}
			for _, part := range []struct{ name, body string }{{"text", r.Text}, {"html", r.HTML}} {
				if !noLink[tmpl] && !strings.Contains(part.body, strings.ReplaceAll(d.Link, "&", "&amp;")) {
					t.Errorf("%s part lacks the link:\n%s", part.name, part.body)
				}
				if !noLink[tmpl] && !strings.Contains(part.body, "21 Nov 2026 20:00 UTC") {
					t.Errorf("%s part lacks the expiry:\n%s", part.name, part.body)
				}
				if got := strings.Contains(part.body, "This wasn't you?") || strings.Contains(part.body, "This wasn&#39;t you?"); got != notYou[tmpl] {
					t.Errorf("%s part: \"This wasn't you?\" present = %v, want %v", part.name, got, notYou[tmpl])
				}
			}
			for _, want := range mentions[tmpl] {
				if !strings.Contains(r.Text, want) {
					t.Errorf("text part does not mention %q:\n%s", want, r.Text)
				}
			}
			if strings.Contains(r.HTML, "<script>") {
				t.Error("HTML part does not escape the name")
			}
			if strings.Contains(r.Text, "<no value>") || strings.Contains(r.HTML, "<no value>") {
				t.Error("a template refers to a missing field")
			}
		})
	}
}

func TestLogSender(t *testing.T) {
	c := newComposer(t)
	out, err := c.Compose(mail.TemplateVerifyEmail, "ada@example.com", sampleData(), time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Open(out.ID, out.Template, out.To, out.Payload)
	if err != nil {
		t.Fatal(err)
	}
	for _, show := range []bool{true, false} {
		var buf bytes.Buffer
		s := mail.LogSender{Log: slog.New(slog.NewTextHandler(&buf, nil)), ShowLinks: show}
		if err := s.Send(t.Context(), r); err != nil {
			t.Fatal(err)
		}
		logged := buf.String()
		if !strings.Contains(logged, "level=INFO") || !strings.Contains(logged, "ada@example.com") || !strings.Contains(logged, r.Subject) {
			t.Errorf("ShowLinks=%v: log lacks level, recipient or subject: %s", show, logged)
		}
		if got := strings.Contains(logged, "token="); got != show {
			t.Errorf("ShowLinks=%v: token logged = %v: %s", show, got, logged)
		}
	}
}
