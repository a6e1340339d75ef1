package cli

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/app"
	"github.com/towerdefence/platformctl/internal/audit"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/config"
	"github.com/towerdefence/platformctl/internal/mail"
	"github.com/towerdefence/platformctl/internal/mailtest"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/profile"
	"github.com/towerdefence/platformctl/internal/storetest"
)

const supportCallback = "https://play.example.com/account/confirm"

// supportEnv is a database with one player, the environment that points
// the CLI at it, and the App a running serve would have, for checking
// what the commands did.
type supportEnv struct {
	env    map[string]string
	app    *app.App
	player *account.User
	smtp   *mailtest.Server
}

func newSupportEnv(t *testing.T, smtpOpts mailtest.Options) *supportEnv {
	t.Helper()
	smtp := mailtest.Start(t, smtpOpts)
	env := map[string]string{
		"PLATFORM_DATA_DIR":        t.TempDir(),
		"PLATFORM_DATABASE_URL":    storetest.URL(t),
		"PLATFORM_SECRET":          "cli-test-secret-0123456789abcdef0123456789",
		"PLATFORM_TRUSTED_ORIGINS": "https://play.example.com",
		"PLATFORM_SMTP_URL":        smtp.URL(),
		"PLATFORM_MIGRATE":         "true",
		"PLATFORM_LOG_LEVEL":       "warn",
		"USER":                     "alice",
	}
	cfg, err := config.Load(func(k string) string { return env[k] }, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.New(t.Context(), cfg, slog.New(slog.DiscardHandler), platform.Build{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	// "ada" is a player of the development world the SQLite database seeds itself with.
	p, err := a.Auth.SignUp(t.Context(), account.RealmPlayer, account.NewUser{
		Email: "ada@example.com", Name: "Ada", Nickname: "ada_cli", Password: "correct horse battery"}, true, auth.Client{})
	if err != nil {
		t.Fatal(err)
	}
	return &supportEnv{env: env, app: a, player: p.User, smtp: smtp}
}

func (s *supportEnv) run(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Run(t.Context(), platform.Build{Version: "test"}, args,
		func(k string) string { return s.env[k] }, strings.NewReader(stdin), &out, &errOut)
	return result{code, out.String(), errOut.String()}
}

func (s *supportEnv) runJSON(t *testing.T, v any, stdin string, args ...string) {
	t.Helper()
	r := s.run(t, stdin, append(args, "--output", "json")...)
	if r.code != 0 {
		t.Fatalf("%v: exit %d, stderr %q", args, r.code, r.stderr)
	}
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		t.Fatalf("%v: %v in %q", args, err, r.stdout)
	}
}

func (s *supportEnv) auditActions(t *testing.T) map[string][]audit.Entry {
	t.Helper()
	entries, err := s.app.Audit.List(t.Context(), audit.Filter{Actor: "break-glass:alice", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]audit.Entry{}
	for _, e := range entries {
		out[e.Action] = append(out[e.Action], e)
	}
	return out
}

var hexToken = regexp.MustCompile(`^[0-9a-f]{64}$`)

func TestTokenIssueAndInspect(t *testing.T) {
	s := newSupportEnv(t, mailtest.Options{})
	ctx := t.Context()

	var issued profile.Issued
	s.runJSON(t, &issued, "", "token", "issue", "--user", "ADA@example.com", "--type", "profile", "--nickname", "ada_l",
		"--callback-url", supportCallback, "--reason", "ticket 7")
	if !hexToken.MatchString(issued.Token) || !strings.Contains(issued.Link, "token="+issued.Token) || issued.Sent {
		t.Fatalf("issued %+v", issued)
	}
	var info profile.TokenInfo
	s.runJSON(t, &info, "", "token", "inspect", issued.Token)
	if info.Status != "pending" || info.Type != "profile" || info.Email != "ada@example.com" || info.RequestedBy != "break-glass:alice" {
		t.Fatalf("inspect %+v", info)
	}
	if _, err := s.app.Profile.Confirm(ctx, issued.Token); err != nil {
		t.Fatalf("the inspected token no longer confirms: %v", err)
	}
	// From stdin, as a table.
	r := s.run(t, issued.Token+"\n", "token", "inspect", "-")
	if r.code != 0 || !strings.Contains(r.stdout, "used") || !strings.Contains(r.stdout, "ada_l") {
		t.Fatalf("inspect -: %d %q %q", r.code, r.stdout, r.stderr)
	}

	// A password change: the password comes from stdin only.
	var pw profile.Issued
	s.runJSON(t, &pw, "a fresh password\n", "token", "issue", "--user", s.player.ID.String(), "--type", "password", "--callback-url", supportCallback)
	if _, err := s.app.Profile.Confirm(ctx, pw.Token); err != nil {
		t.Fatal(err)
	}
	if _, err := s.app.Accounts.Authenticate(ctx, account.RealmPlayer, "ada@example.com", "a fresh password"); err != nil {
		t.Fatalf("the issued password: %v", err)
	}
	if r := s.run(t, "", "token", "issue", "--user", "ada@example.com", "--type", "password", "--password", "x", "--callback-url", supportCallback); r.code != ExitUsage {
		t.Fatalf("--password flag: exit %d", r.code)
	}
	if r := s.run(t, "short\n", "token", "issue", "--user", "ada@example.com", "--type", "password", "--callback-url", supportCallback); r.code != ExitUsage || !strings.Contains(r.stderr, "stdin") {
		t.Fatalf("short password: exit %d, stderr %q", r.code, r.stderr)
	}

	// --send mails the link and does not show it.
	var sent profile.Issued
	s.runJSON(t, &sent, "", "token", "issue", "--user", "ada@example.com", "--type", "email", "--new-email", "ada@new.example.com",
		"--send", "--callback-url", supportCallback)
	if !sent.Sent || sent.Token != "" || sent.Link != "" || sent.MessageID == nil || sent.Recipient != "ada@example.com" {
		t.Fatalf("issued with --send: %+v", sent)
	}
	if _, err := s.app.MailWorker.DeliverDue(ctx); err != nil {
		t.Fatal(err)
	}
	m := s.smtp.WaitFor(t, 5*time.Second, func(m mailtest.Message) bool { return m.MessageID == sent.MessageID.String()+"@localhost" })
	if !hexToken.MatchString(m.Token()) || !mailtest.To("ada@example.com")(m) {
		t.Fatalf("mailed %q, message id %q", m.Token(), m.MessageID)
	}

	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"token", "issue", "--user", "nobody@example.com", "--type", "profile", "--callback-url", supportCallback}, ExitNotFound},
		{[]string{"token", "issue", "--user", "ada@example.com", "--type", "profile", "--callback-url", "https://evil.example.com/"}, ExitRefused},
		{[]string{"token", "issue", "--user", "ada@example.com", "--type", "nickname", "--callback-url", supportCallback}, ExitUsage},
		{[]string{"token", "issue", "--user", "ada@example.com", "--callback-url", supportCallback}, ExitUsage},
		{[]string{"token", "issue", "--user", "ada@example.com", "--type", "email", "--callback-url", supportCallback}, ExitUsage},
		{[]string{"token", "inspect", "not-a-token"}, ExitUsage},
		{[]string{"token", "inspect", strings.Repeat("ab", 32)}, ExitNotFound},
	} {
		if r := s.run(t, "", tc.args...); r.code != tc.code {
			t.Errorf("%v: exit %d, want %d (stderr %q)", tc.args, r.code, tc.code, r.stderr)
		}
	}

	actions := s.auditActions(t)
	if len(actions["token.issue"]) != 3 || len(actions["token.inspect"]) != 3 {
		t.Fatalf("audited %d issues and %d inspections, want 3 and 3", len(actions["token.issue"]), len(actions["token.inspect"]))
	}
	var withReason bool
	for _, e := range actions["token.issue"] {
		withReason = withReason || e.Reason == "ticket 7"
		if e.Target != s.player.ID.String() {
			t.Errorf("issue audited against %q", e.Target)
		}
	}
	if !withReason {
		t.Error("the --reason of an issue is not in the audit log")
	}
}

func TestMailOutboxAndRetry(t *testing.T) {
	var refuse atomic.Bool
	refuse.Store(true)
	s := newSupportEnv(t, mailtest.Options{Reject: func(rcpt string) error {
		if refuse.Load() && rcpt == "full@example.com" {
			return mailtest.Refuse(552, "mailbox full")
		}
		return nil
	}})
	ctx := t.Context()
	var issued profile.Issued
	s.runJSON(t, &issued, "", "token", "issue", "--user", "ada@example.com", "--type", "email", "--new-email", "full@example.com",
		"--skip-old-email", "--send", "--callback-url", supportCallback)
	if _, err := s.app.MailWorker.DeliverDue(ctx); err != nil {
		t.Fatal(err)
	}
	id := issued.MessageID.String()

	var failed []mail.Message
	s.runJSON(t, &failed, "", "mail", "outbox", "--status", "failed")
	if len(failed) != 1 || failed[0].ID.String() != id || failed[0].To != "full@example.com" || !strings.Contains(failed[0].LastError, "552") {
		t.Fatalf("failed messages %+v", failed)
	}
	if r := s.run(t, "", "mail", "outbox"); r.code != 0 || !strings.Contains(r.stdout, id) || !strings.Contains(r.stdout, "failed") {
		t.Fatalf("outbox table: %d %q", r.code, r.stdout)
	}
	if r := s.run(t, "", "mail", "show", id); r.code != 0 || !strings.Contains(r.stdout, "552") || !strings.Contains(r.stdout, "failed") {
		t.Fatalf("mail show: %d %q %q", r.code, r.stdout, r.stderr)
	}

	refuse.Store(false)
	if r := s.run(t, "", "mail", "retry", id, "--reason", "mailbox emptied"); r.code != 0 {
		t.Fatalf("retry: exit %d, stderr %q", r.code, r.stderr)
	}
	if _, err := s.app.MailWorker.DeliverDue(ctx); err != nil {
		t.Fatal(err)
	}
	var sent []mail.Message
	s.runJSON(t, &sent, "", "mail", "outbox", "--status", "sent")
	if len(sent) != 1 || sent[0].ID.String() != id || sent[0].Attempts != 2 {
		t.Fatalf("sent messages %+v", sent)
	}
	if m := s.smtp.WaitFor(t, 5*time.Second, mailtest.To("full@example.com")); !hexToken.MatchString(m.Token()) || m.MessageID != id+"@localhost" {
		t.Fatalf("the retried message: id %q, token %q", m.MessageID, m.Token())
	}

	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"mail", "retry", id}, ExitRefused},
		{[]string{"mail", "retry", "not-a-uuid"}, ExitUsage},
		{[]string{"mail", "retry", "0190a6c4-0000-7000-8000-000000000000"}, ExitNotFound},
		{[]string{"mail", "outbox", "--status", "bogus"}, ExitUsage},
		{[]string{"mail", "outbox", "--output", "xml"}, ExitUsage},
	} {
		if r := s.run(t, "", tc.args...); r.code != tc.code {
			t.Errorf("%v: exit %d, want %d (stderr %q)", tc.args, r.code, tc.code, r.stderr)
		}
	}
	actions := s.auditActions(t)
	if len(actions["mail.retry"]) != 1 || actions["mail.retry"][0].Reason != "mailbox emptied" || len(actions["mail.outbox.list"]) < 3 || len(actions["mail.show"]) != 1 {
		t.Fatalf("audit %v", actions)
	}
}
