package cli

import (
	"strings"
	"testing"

	"github.com/towerdefence/platformctl/internal/mailtest"
)

// A support command never migrates, on SQLite as on PostgreSQL: a database
// behind the binary is an error that says to run `migrate up`, and stays
// as it was.
func TestSupportCommandRefusesPendingMigrations(t *testing.T) {
	s := newSupportEnv(t, mailtest.Options{})
	if r := s.run(t, "", "migrate", "down", "--steps", "1", "--yes"); r.code != 0 {
		t.Fatalf("migrate down: exit %d, stderr %q", r.code, r.stderr)
	}
	r := s.run(t, "", "sessions", "list", "--user", "ada@example.com")
	if r.code != ExitFailure || !strings.Contains(r.stderr, "pending migration") ||
		!strings.Contains(r.stderr, "run `platformctl migrate up`") || strings.Contains(r.stderr, "--migrate") {
		t.Fatalf("sessions list on a database behind the binary: exit %d, stderr %q; want exit %d naming `migrate up`",
			r.code, r.stderr, ExitFailure)
	}
	st := s.run(t, "", "migrate", "status", "--output", "json")
	if st.code != 0 || !strings.Contains(st.stdout, `"applied": false`) {
		t.Fatalf("migrate status after the refused command: exit %d, stdout %q; want one migration still pending", st.code, st.stdout)
	}
}
