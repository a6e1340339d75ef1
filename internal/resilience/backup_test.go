package resilience_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/towerdefence/platformctl/internal/apitest"
	"github.com/towerdefence/platformctl/internal/cli"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/store"
	"github.com/towerdefence/platformctl/internal/testwait"
)

// platformctl runs a command line in this process with env as its whole
// environment and returns its exit code, stdout and stderr.
func platformctl(ctx context.Context, env map[string]string, args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := cli.Run(ctx, platform.Build{Version: "test"}, args, func(k string) string { return env[k] },
		strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestBackupWhileServing backs up the embedded database while a serve
// process signs players up: every sign-up acknowledged before the backup
// began is in it, and it passes PRAGMA integrity_check. Restore refuses
// while that serve runs and works once it has stopped.
func TestBackupWhileServing(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{
		"PLATFORM_DATA_DIR":                 dir,
		"PLATFORM_DATABASE_URL":             "file:" + filepath.Join(dir, "platform.db"),
		"PLATFORM_RATE_LIMIT_LOGIN_IP":      "off",
		"PLATFORM_RATE_LIMIT_LOGIN_ACCOUNT": "off",
		"PLATFORM_RATE_LIMIT_MAIL_IP":       "off",
	}
	srv := startServe(t, env)

	var mu sync.Mutex
	var acked []string
	ctx, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				nick := fmt.Sprintf("bk%d_%d", w, i)
				status, body := call(t, srv.URL, "POST", "/api/auth/player/sign-up/email", "", map[string]any{
					"name": "Backup " + nick, "nickname": nick, "email": nick + "@example.com", "password": apitest.DefaultPassword})
				if status != 200 {
					if ctx.Err() == nil {
						t.Errorf("sign-up %s: %d %s", nick, status, body)
					}
					return
				}
				mu.Lock()
				acked = append(acked, nick+"@example.com")
				mu.Unlock()
			}
		})
	}
	ackedSoFar := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), acked...)
	}
	testwait.For(t, 30*time.Second, "ten sign-ups", func() bool { return len(ackedSoFar()) >= 10 })
	backup := filepath.Join(t.TempDir(), "backup.db")
	before := ackedSoFar()
	code, stdout, stderr := platformctl(t.Context(), env, "backup", "--to", backup, "--output", "json")
	if code != 0 {
		t.Fatalf("backup: exit %d: %s", code, stderr)
	}
	var info store.BackupInfo
	if err := json.Unmarshal([]byte(stdout), &info); err != nil || info.Path != backup || info.Version == 0 {
		t.Fatalf("backup output %q: %v", stdout, err)
	}
	testwait.For(t, 30*time.Second, "sign-ups after the backup", func() bool { return len(ackedSoFar()) >= len(before)+5 })
	stop()
	wg.Wait()

	emails := usersIn(t, backup)
	for _, e := range before {
		if !emails[e] {
			t.Fatalf("%s signed up before the backup began but is not in it (%d users there)", e, len(emails))
		}
	}
	code, _, stderr = platformctl(t.Context(), env, "restore", "--from", backup)
	if code != cli.ExitRefused || !strings.Contains(stderr, store.CodeDatabaseInUse) || strings.Count(stderr, "\n") != 1 {
		t.Fatalf("restore beside a running serve: exit %d: %q", code, stderr)
	}
	srv.signal(syscall.SIGTERM)
	if code := srv.wait(30 * time.Second); code != 0 {
		t.Fatalf("serve exited with %d", code)
	}
	if code, _, stderr := platformctl(t.Context(), env, "restore", "--from", backup); code != 0 {
		t.Fatalf("restore after serve stopped: exit %d: %s", code, stderr)
	}
	if got := usersIn(t, filepath.Join(dir, "platform.db")); len(got) != len(emails) {
		t.Fatalf("restored database has %d users, the backup %d", len(got), len(emails))
	}
	startServe(t, env) // serves the restored database
}

func TestBackupAndRestoreUsage(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"PLATFORM_DATA_DIR": dir}
	if code, _, stderr := platformctl(t.Context(), env, "migrate", "up"); code != 0 {
		t.Fatalf("migrate up: %s", stderr)
	}
	pg := map[string]string{"PLATFORM_DATABASE_URL": "postgres://nobody@127.0.0.1:1/none"}
	for _, tc := range []struct {
		env  map[string]string
		args []string
		want int
	}{
		{env, []string{"backup"}, cli.ExitUsage},
		{env, []string{"backup", "--to", dir}, cli.ExitUsage},
		{env, []string{"backup", "--to", "/dev/null"}, cli.ExitUsage},
		{env, []string{"backup", "--to", "x.db", "extra"}, cli.ExitUsage},
		{pg, []string{"backup", "--to", filepath.Join(dir, "b.db")}, cli.ExitUsage},
		{env, []string{"restore"}, cli.ExitUsage},
		{env, []string{"restore", "--from", filepath.Join(dir, "missing.db")}, cli.ExitNotFound},
		{env, []string{"restore", "--from", dir}, cli.ExitUsage},
		{pg, []string{"restore", "--from", filepath.Join(dir, "platform.db")}, cli.ExitUsage},
	} {
		code, _, stderr := platformctl(t.Context(), tc.env, tc.args...)
		if code != tc.want || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, want %d; stderr %q", tc.args, code, tc.want, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "b.db")); !os.IsNotExist(err) {
		t.Fatalf("a refused backup wrote a file: %v", err)
	}
}

// usersIn returns the email addresses of the users in the SQLite file at
// path, after checking its integrity.
func usersIn(t *testing.T, path string) map[string]bool {
	t.Helper()
	if _, err := store.InspectBackup(t.Context(), path); err != nil {
		t.Fatal(err)
	}
	db := openStore(t, "file:"+path)
	rows, err := db.SQL().QueryContext(t.Context(), "SELECT email FROM users")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var e string
		if err := rows.Scan(&e); err != nil {
			t.Fatal(err)
		}
		out[e] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
