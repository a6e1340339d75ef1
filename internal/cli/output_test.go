package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/charmbracelet/lipgloss"
	"github.com/spf13/cobra"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/audit"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/mailtest"
)

// TestSupportTablesFitEightyColumns lists sessions with a long user agent
// at COLUMNS=80: every line fits, cut cells end in an ellipsis, times are
// ages; wide keeps every cell whole.
func TestSupportTablesFitEightyColumns(t *testing.T) {
	s := newSupportEnv(t, mailtest.Options{})
	agent := "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
	if _, err := s.app.Auth.SignIn(t.Context(), account.RealmPlayer, "ada@example.com", "correct horse battery", false,
		auth.Client{IPAddress: "203.0.113.7", UserAgent: agent}); err != nil {
		t.Fatal(err)
	}
	s.env["COLUMNS"] = "80"
	r := s.run(t, "", "sessions", "list", "--user", "ada@example.com")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	if len(lines) < 2 {
		t.Fatalf("no rows:\n%s", r.stdout)
	}
	for _, l := range lines {
		if n := utf8.RuneCountInString(l); n > 80 {
			t.Errorf("line of %d columns at COLUMNS=80: %q", n, l)
		}
	}
	if !strings.Contains(r.stdout, "…") || !strings.Contains(r.stdout, "just now") || !strings.Contains(r.stdout, "in 23h") ||
		!regexp.MustCompile(`(?m)^[0-9a-f-]{36}  `).MatchString(r.stdout) {
		t.Errorf("want whole session ids, a cut user agent and relative ages:\n%s", r.stdout)
	}
	wide := s.run(t, "", "sessions", "list", "--user", "ada@example.com", "--output", "wide")
	if !strings.Contains(wide.stdout, agent) || !strings.Contains(wide.stdout, time.Now().UTC().Format("2006-01-02T")) {
		t.Errorf("wide output lacks the whole user agent or RFC 3339 times:\n%s", wide.stdout)
	}
	yaml := s.run(t, "", "sessions", "list", "--user", "ada@example.com", "--output", "yaml")
	if yaml.code != 0 || !strings.Contains(yaml.stdout, "userAgent: Mozilla/5.0 (X11") {
		t.Errorf("yaml output (exit %d) lacks userAgent with the JSON field name:\n%s", yaml.code, yaml.stdout)
	}
	if r := s.run(t, "", "sessions", "list", "--user", "ada@example.com", "--output", "xml"); r.code != ExitUsage {
		t.Errorf("--output xml: exit %d, want %d", r.code, ExitUsage)
	}
}

// TestAuditFiltersAndActor records actions on the database directly and
// finds them again by user, action and age: whatever --actor or
// PLATFORM_ACTOR claim, the trail names break-glass and the
// operating-system user, and the command says so on stderr.
func TestAuditFiltersAndActor(t *testing.T) {
	s := newSupportEnv(t, mailtest.Options{})
	if r := s.run(t, "", "sessions", "list", "--user", "ada@example.com", "--actor", "bob"); r.code != 0 ||
		!strings.Contains(r.stderr, "audited as break-glass:alice") || !strings.Contains(r.stderr, "not recorded") {
		t.Fatalf("sessions list --actor bob: exit %d %s", r.code, r.stderr)
	}
	s.env["PLATFORM_ACTOR"] = "carol@example.com"
	if r := s.run(t, "", "sessions", "revoke", "--user", "ada@example.com"); r.code != 0 {
		t.Fatalf("sessions revoke: exit %d %s", r.code, r.stderr)
	}
	if r := s.run(t, "", "sessions", "list", "--user", "ada@example.com", "--actor", "no spaces"); r.code != ExitUsage {
		t.Errorf("--actor with a space: exit %d, want %d", r.code, ExitUsage)
	}

	var byUser []audit.Entry
	s.runJSON(t, &byUser, "", "audit", "list", "--user", "ada@example.com", "--since", "7d")
	if len(byUser) != 2 || byUser[0].Actor != "break-glass:alice" || byUser[1].Actor != "break-glass:alice" {
		t.Fatalf("audit list --user: %+v", byUser)
	}
	var byAction []audit.Entry
	s.runJSON(t, &byAction, "", "audit", "list", "--action", auth.ActionSessionsRevoke, "--since", "24h")
	if len(byAction) != 1 || byAction[0].Target != s.player.ID.String() {
		t.Fatalf("audit list --action: %+v", byAction)
	}
	var none []audit.Entry
	s.runJSON(t, &none, "", "audit", "list", "--user", s.player.ID.String(), "--since", time.Now().Add(time.Hour).Format(time.RFC3339))
	if len(none) != 0 {
		t.Fatalf("entries from the future: %+v", none)
	}
	for _, bad := range []string{"7x", "-3d", "0d"} {
		if r := s.run(t, "", "audit", "list", "--since", bad); r.code != ExitUsage {
			t.Errorf("--since %s: exit %d, want %d", bad, r.code, ExitUsage)
		}
	}
}

// TestTokenIssueNamesTrustedOrigins checks a refused callback URL says
// which origins are trusted and where they come from.
func TestTokenIssueNamesTrustedOrigins(t *testing.T) {
	s := newSupportEnv(t, mailtest.Options{})
	r := s.run(t, "", "token", "issue", "--user", "ada@example.com", "--type", "profile", "--nickname", "ada_x",
		"--callback-url", "https://evil.example.net/confirm")
	if r.code == 0 || !strings.Contains(r.stderr, "https://play.example.com (PLATFORM_TRUSTED_ORIGINS") ||
		!strings.Contains(r.stderr, "(PLATFORM_BASE_URL") {
		t.Fatalf("exit %d, stderr %q; want the trusted origins and their sources", r.code, r.stderr)
	}
}

func TestRelativeAge(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for d, want := range map[time.Duration]string{
		-3 * time.Hour: "3h ago", -90 * time.Second: "1m ago", -10 * time.Second: "just now",
		-72 * time.Hour: "3d ago", 2 * time.Hour: "in 2h", -800 * 24 * time.Hour: "2y ago",
	} {
		if got := relativeAge(now.Add(d), now); got != want {
			t.Errorf("relativeAge(%v) = %q, want %q", d, got, want)
		}
	}
}

// TestTerminalAndColour: /dev/null is not a terminal; colour follows
// NO_COLOR and CLICOLOR_FORCE.
func TestTerminalAndColour(t *testing.T) {
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	if isTerminal(devNull) {
		t.Error("/dev/null reported as a terminal")
	}
	var buf bytes.Buffer
	for _, c := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, false},
		{map[string]string{"CLICOLOR_FORCE": "1"}, true},
		{map[string]string{"CLICOLOR_FORCE": "0"}, false},
		{map[string]string{"CLICOLOR_FORCE": "1", "NO_COLOR": "1"}, false},
	} {
		e := &env{getenv: func(k string) string { return c.env[k] }, stdout: &buf}
		if got := e.styled(&buf); got != c.want {
			t.Errorf("env %v: styled %v, want %v", c.env, got, c.want)
		}
	}
	forced := &env{getenv: func(k string) string { return map[string]string{"CLICOLOR_FORCE": "1"}[k] }}
	if s := forced.renderer(&buf).NewStyle().Foreground(lipgloss.Color("1")).Render("x"); !strings.Contains(s, "\x1b[") {
		t.Errorf("CLICOLOR_FORCE=1 rendered %q without colour", s)
	}
}

// TestFlagCompletion walks the command tree: every enumerated flag offers
// its values, and -o means the output format wherever it exists.
func TestFlagCompletion(t *testing.T) {
	e := &env{getenv: func(string) string { return "" }, stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
	root := newRootCmd(e)
	want := map[string][]string{"output": {"table", "json"}, "realm": {"player", "admin"}, "size": {"short", "long"},
		"format": {"ascii", "png"}, "type": {"profile", "password"}, "status": {"failed"}, "role": {"admin"}}
	seen := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for name, values := range want {
			f := c.Flags().Lookup(name)
			if f == nil {
				continue
			}
			seen[name] = true
			fn, ok := c.GetFlagCompletionFunc(name)
			if !ok {
				t.Errorf("%s --%s: no value completion", c.CommandPath(), name)
				continue
			}
			got, _ := fn(c, nil, "")
			for _, v := range values {
				if !strings.Contains(strings.Join(got, " "), v) {
					t.Errorf("%s --%s completes %v, missing %s", c.CommandPath(), name, got, v)
				}
			}
		}
		if f := c.Flags().ShorthandLookup("o"); f != nil && f.Name != "output" {
			t.Errorf("%s: -o is --%s, want --output", c.CommandPath(), f.Name)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	for name := range want {
		if !seen[name] {
			t.Errorf("no command has --%s", name)
		}
	}
}

func TestOutputYAMLUsesJSONNames(t *testing.T) {
	var buf bytes.Buffer
	ok, err := writeData(&buf, outputYAML, struct {
		UserID string `json:"userId"`
	}{"u1"})
	if !ok || err != nil || buf.String() != "userId: u1\n" {
		t.Fatalf("yaml = %q, %v, %v", buf.String(), ok, err)
	}
	buf.Reset()
	if ok, _ := writeData(&buf, outputTable, 1); ok {
		t.Fatal("table treated as data")
	}
	var v any
	if _, err := writeData(&buf, outputJSON, map[string]int{"a": 1}); err != nil || json.Unmarshal(buf.Bytes(), &v) != nil {
		t.Fatalf("json: %v %q", err, buf.String())
	}
}
