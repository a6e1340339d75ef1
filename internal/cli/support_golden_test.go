package cli

import (
	"regexp"
	"strings"
	"testing"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/mailtest"
)

// What changes from run to run in a support table: ids, times and the
// hexadecimal tokens. Each becomes a placeholder, so the goldens pin the
// columns, their order and their alignment.
var (
	goldenUUID = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	goldenTime = regexp.MustCompile(`\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2})?Z?`)
	goldenAgo  = regexp.MustCompile(`\b\d+(s|m|h|d) ago\b`)
)

func normalizeTable(s string) string {
	s = goldenUUID.ReplaceAllStringFunc(s, func(m string) string { return "<id" + strings.Repeat(" ", len(m)-4) + ">" })
	s = goldenTime.ReplaceAllStringFunc(s, func(m string) string { return "<time" + strings.Repeat(" ", max(len(m)-6, 0)) + ">" })
	return goldenAgo.ReplaceAllString(s, "<ago>")
}

// The support commands' tables, as support staff read them, pinned by
// golden files under testdata/support (go test -update rewrites them).
func TestSupportTablesGolden(t *testing.T) {
	s := newSupportEnv(t, mailtest.Options{})
	// One session, so that the listing's order is not left to equal times.
	if r := s.run(t, "", "sessions", "revoke", "--user", "ada@example.com", "--reason", "golden"); r.code != 0 {
		t.Fatalf("sessions revoke: exit %d, stderr %q", r.code, r.stderr)
	}
	if _, err := s.app.Auth.SignIn(t.Context(), account.RealmPlayer, "ada@example.com", "correct horse battery", true,
		auth.Client{IPAddress: "192.0.2.7", UserAgent: "Firefox"}); err != nil {
		t.Fatal(err)
	}
	if r := s.run(t, "", "token", "issue", "--user", "ada@example.com", "--type", "profile", "--nickname", "ada_l",
		"--callback-url", supportCallback, "--reason", "ticket 7", "--send"); r.code != 0 {
		t.Fatalf("token issue: exit %d, stderr %q", r.code, r.stderr)
	}
	for _, c := range []struct{ name, args string }{
		{"sessions-list.txt", "sessions list --user ada@example.com"},
		{"audit-list.txt", "audit list --action token.issue"},
		{"mail-outbox.txt", "mail outbox"},
	} {
		r := s.run(t, "", strings.Fields(c.args)...)
		if r.code != 0 {
			t.Fatalf("%s: exit %d, stderr %q", c.args, r.code, r.stderr)
		}
		goldenIn(t, "support", c.name, normalizeTable(r.stdout))
	}
}
