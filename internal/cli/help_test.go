package cli

import (
	"strings"
	"testing"
)

// A support command's --help lists the flags it reads, no more: its own,
// where the database is, and the few settings its work takes, with the
// database flags in a section of their own.
func TestSupportHelpShowsTheFlagsTheCommandReads(t *testing.T) {
	commands := map[string]int{ // the most flags --help may list, --help and --actor included
		"sessions list": 15, "sessions revoke": 15, "token inspect": 15, "mail outbox": 15, "mail show": 15,
		"mail retry": 15, "audit list": 15, "admin create": 16, "admin set-role": 15, "liveops show": 15,
		"liveops set-seed": 15, "prune": 15, "migrate status": 15, "migrate up": 15,
		// token issue has twelve flags of its own.
		"token issue": 22,
	}
	for command, most := range commands {
		r := run(t, t.Context(), nil, append(strings.Fields(command), "--help")...)
		if r.code != 0 {
			t.Fatalf("%s --help: exit %d, stderr %q", command, r.code, r.stderr)
		}
		flags := 0
		for _, line := range strings.Split(r.stdout, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "-") {
				flags++
			}
		}
		if flags > most {
			t.Errorf("%s --help lists %d flags, want at most %d:\n%s", command, flags, most, r.stdout)
		}
		for _, unread := range []string{"--db-max-conns", "--addr", "--smtp-url", "--session-ttl", "--hash-wait"} {
			if strings.Contains(r.stdout, unread) {
				t.Errorf("%s --help lists %s, which the command does not read", command, unread)
			}
		}
		if !strings.Contains(r.stdout, "Database flags:\n") || !strings.Contains(r.stdout, "--database-url") {
			t.Errorf("%s --help has no database section:\n%s", command, r.stdout)
		}
	}
}

// A setting a support command does not read is no flag of it: giving one
// is a usage error, while its variable is still taken from the environment.
func TestSupportCommandRefusesUnreadSettingFlags(t *testing.T) {
	r := run(t, t.Context(), nil, "sessions", "list", "--user", "ada@example.com", "--argon2-iterations", "3")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "unknown flag: --argon2-iterations") {
		t.Fatalf("sessions list --argon2-iterations: exit %d, stderr %q; want a usage error", r.code, r.stderr)
	}
}
