package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/auth"
)

// hostileUA carries a C1 control sequence introducer (U+009B, a terminal
// CSI), an ESC sequence, a right-to-left override and a zero-width space.
const hostileUA = "Mozilla\u009b2J\x1b]0;owned\x07 \u202egnp.exe\u200b"

// rawUnsafe reports the first raw control or format character in s.
func rawUnsafe(s string) (rune, bool) {
	for _, r := range s {
		if r != '\n' && unsafeRune(r) {
			return r, true
		}
	}
	return 0, false
}

// A User-Agent a client chose reaches a support person's terminal escaped,
// in every output format, and JSON still decodes to what was sent.
func TestSessionsListEscapesControlAndBidiCharacters(t *testing.T) {
	env, a := accountsEnv(t)
	if _, err := a.Auth.SignUp(t.Context(), account.RealmPlayer, account.NewUser{Email: "ua@example.com", Name: "Ua", Nickname: "uaua", Password: "correct horse"},
		true, auth.Client{IPAddress: "192.0.2.9", UserAgent: hostileUA}); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"table", "wide", "json", "yaml"} {
		r := runIn(t, env, "", "sessions", "list", "--user", "ua@example.com", "--output", format)
		if r.code != 0 {
			t.Fatalf("sessions list -o %s: code %d stderr %q", format, r.code, r.stderr)
		}
		if c, found := rawUnsafe(r.stdout); found {
			t.Errorf("sessions list -o %s prints %U raw:\n%q", format, c, r.stdout)
		}
		if format == "json" {
			var list []struct {
				UserAgent string `json:"userAgent"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list) != 1 || list[0].UserAgent != hostileUA {
				t.Errorf("-o json does not decode to the User-Agent sent: %v %q", err, r.stdout)
			}
		} else if !strings.Contains(r.stdout, `\u009b`) || !strings.Contains(r.stdout, `\u202e`) || !strings.Contains(r.stdout, `\x1b`) {
			t.Errorf("-o %s does not show the escapes:\n%s", format, r.stdout)
		}
	}
}

func TestSafeText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain text, Zoë 🙂", "plain text, Zoë 🙂"},
		{"a\x1b[31mb", `a\x1b[31mb`},
		{"a\u009bb", `a\u009bb`},
		{"\u202eab\u2066", `\u202eab\u2066`},
		{"tab\tnl\n", `tab\x09nl\x0a`},
		{"bad\xffutf8", "bad\uFFFDutf8"},
		{"tag\U000E0041", `tag\U000e0041`},
	}
	for _, tt := range tests {
		if got := safeText(tt.in); got != tt.want {
			t.Errorf("safeText(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	doc := []byte(`{"a":"x` + "\u009b\u202e\U000E0041" + `"}`)
	var v struct{ A string }
	if err := json.Unmarshal(escapeJSONText(doc), &v); err != nil || v.A != "x\u009b\u202e\U000E0041" {
		t.Fatalf("escaped JSON decodes to %q, %v", v.A, err)
	}
}
