package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/lifecycle"
	"github.com/towerdefence/platformctl/internal/mailtest"
	"github.com/towerdefence/platformctl/internal/platform"
)

// The support commands of an account's life: show, find, suspend (sign-in
// refused with ACCOUNT_SUSPENDED), unsuspend, export and delete, with
// their exit codes.
func TestUsersCommands(t *testing.T) {
	s := newSupportEnv(t, mailtest.Options{})
	ctx := t.Context()
	ada := s.player.ID.String()

	var st lifecycle.AccountStatus
	s.runJSON(t, &st, "", "users", "show", "--user", "ada@example.com")
	if st.Status != lifecycle.StatusActive || st.User.ID != s.player.ID {
		t.Fatalf("show: %+v", st)
	}
	var found []account.User
	s.runJSON(t, &found, "", "users", "find", "--query", "ada_c")
	if len(found) != 1 || found[0].ID != s.player.ID {
		t.Errorf("find by nickname: %+v", found)
	}

	var susp auth.Suspension
	s.runJSON(t, &susp, "", "users", "suspend", "--user", ada, "--reason", "spam", "--until", "2d")
	if susp.Until == nil || susp.Until.Before(time.Now().Add(47*time.Hour)) {
		t.Errorf("suspension: %+v", susp)
	}
	_, err := s.app.Auth.SignIn(ctx, account.RealmPlayer, "ada@example.com", "correct horse battery", true, auth.Client{})
	if pe, _ := platform.As(err); platform.ErrorCode(err) != platform.CodeAccountSuspended || pe.Details["until"] == nil {
		t.Errorf("sign-in while suspended = %v", err)
	}
	s.runJSON(t, &st, "", "users", "show", "--user", ada)
	if st.Status != lifecycle.StatusSuspended || st.Suspension.Reason != "spam" {
		t.Errorf("show while suspended: %+v", st)
	}
	var lifted map[string]bool
	s.runJSON(t, &lifted, "", "users", "unsuspend", "--user", ada, "--reason", "appeal")
	if !lifted["lifted"] {
		t.Errorf("unsuspend: %v", lifted)
	}
	if _, err := s.app.Auth.SignIn(ctx, account.RealmPlayer, "ada@example.com", "correct horse battery", true, auth.Client{}); err != nil {
		t.Errorf("sign-in after unsuspend: %v", err)
	}

	r := s.run(t, "", "users", "export", "--user", ada)
	if r.code != 0 || !strings.Contains(r.stdout, `"pendingChanges"`) || !strings.Contains(r.stdout, "ada@example.com") {
		t.Errorf("export: exit %d %q %q", r.code, r.stdout, r.stderr)
	}

	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"users", "delete", "--user", ada}, ExitUsage},
		{[]string{"users", "suspend", "--user", ada, "--reason", "x", "--until", "yesterday"}, ExitUsage},
		{[]string{"users", "suspend", "--user", ada, "--reason", "x", "--until", "2001-01-01T00:00:00Z"}, ExitUsage},
		{[]string{"users", "find", "--query", "ada", "--limit", "1000"}, ExitUsage},
		{[]string{"users", "show", "--user", "nobody@example.com"}, ExitNotFound},
		{[]string{"users", "show", "--user", ada, "--realm", "moon"}, ExitUsage},
	} {
		if r := s.run(t, "", tc.args...); r.code != tc.code || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
			t.Errorf("%v: exit %d (want %d), stderr %q", tc.args, r.code, tc.code, r.stderr)
		}
	}

	var ts lifecycle.Tombstone
	s.runJSON(t, &ts, "", "users", "delete", "--user", "ada@example.com", "--reason", "asked by mail")
	if ts.ID != s.player.ID {
		t.Errorf("delete: %+v", ts)
	}
	s.runJSON(t, &st, "", "users", "show", "--user", ada)
	if st.Status != lifecycle.StatusDeleted || st.Tombstone.Reason != "asked by mail" {
		t.Errorf("show after delete: %+v", st)
	}
	if r := s.run(t, "", "users", "delete", "--user", ada, "--reason", "again"); r.code != ExitNotFound {
		t.Errorf("delete again: exit %d %q", r.code, r.stderr)
	}
}
