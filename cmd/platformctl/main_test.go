package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/towerdefence/platformctl/internal/store"
	"github.com/towerdefence/platformctl/internal/storetest"
	"github.com/towerdefence/platformctl/internal/testwait"
)

// binary is platformctl built once for these tests: exit codes, refusals
// and lock release are properties of the real process.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "platformctl-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "platformctl")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build platformctl:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	code           int
	stdout, stderr string
}

// command prepares platformctl with only the PLATFORM_* variables given,
// run in a fresh working directory, stdin not a terminal.
func command(t *testing.T, env map[string]string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), binary, args...)
	cmd.Dir = t.TempDir()
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PLATFORM") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	return cmd
}

func run(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	cmd := command(t, env, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("run %v: %v", args, err)
	}
	return result{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
}

func TestUnknownCommandsAreUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"migrate", "upp"}, {"map", "generat"}, {"bogus"}, {"sessions", "lst"}} {
		r := run(t, nil, args...)
		if r.code != 2 || !strings.Contains(r.stderr, "unknown command") || !strings.Contains(r.stderr, "did you mean") && args[0] != "bogus" {
			t.Errorf("platformctl %v: exit %d, stderr %q; want exit 2 naming the unknown command and a suggestion", args, r.code, r.stderr)
		}
	}
	if r := run(t, nil, "migrate", "status", "extra"); r.code != 2 {
		t.Errorf("migrate status extra: exit %d, want 2", r.code)
	}
}

func TestConfigurationErrorsComeTogether(t *testing.T) {
	env := map[string]string{"PLATFORM_ENV": "staging", "PLATFORM_LOG_FORMAT": "xml", "PLATFORM_DATABSE_URL": "file:x.db"}
	r := run(t, env, "migrate", "status")
	if r.code != 2 || !strings.Contains(r.stderr, "PLATFORM_ENV") || !strings.Contains(r.stderr, "PLATFORM_LOG_FORMAT") {
		t.Fatalf("two bad settings: exit %d, stderr %q; want exit 2 naming both", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "PLATFORM_DATABSE_URL is not a setting") || !strings.Contains(r.stderr, "did you mean PLATFORM_DATABASE_URL") {
		t.Fatalf("misspelt variable not warned about: %q", r.stderr)
	}
	// Server settings are serve's business: a bad rate limit and a missing
	// SMTP URL in production do not stop a migration job.
	dir := t.TempDir()
	env = map[string]string{"PLATFORM_ENV": "production", "PLATFORM_RATE_LIMIT_LOGIN_IP": "lots",
		"PLATFORM_DATABASE_URL": "file:" + filepath.Join(dir, "platform.db")}
	if r := run(t, env, "migrate", "up"); r.code != 0 {
		t.Fatalf("migrate up in production with a bad server setting: exit %d %s", r.code, r.stderr)
	}
	if r := run(t, env, "serve"); r.code != 2 || !strings.Contains(r.stderr, "PLATFORM_RATE_LIMIT_LOGIN_IP") || !strings.Contains(r.stderr, "PLATFORM_SMTP_URL") {
		t.Fatalf("serve with bad server settings: exit %d %s", r.code, r.stderr)
	}
	if r := run(t, nil, "migrate", "up", "--lock-timeout", "soon"); r.code != 2 {
		t.Fatalf("a duration flag given a word: exit %d, want 2", r.code)
	}
}

func TestCommandsRefuseToCreateADatabase(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "missing")
	env := map[string]string{"PLATFORM_DATABASE_URL": "file:" + filepath.Join(dir, "platform.db")}
	for _, args := range [][]string{{"migrate", "status"}, {"migrate", "down", "--yes"}, {"migrate", "validate"}, {"sessions", "list", "--user", "a@example.com"}} {
		r := run(t, env, args...)
		if r.code != 2 || !strings.Contains(r.stderr, "does not exist") || !strings.Contains(r.stderr, "PLATFORM_DATABASE_URL") {
			t.Errorf("%v on a missing database: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refusing command created %s (stat: %v)", dir, err)
	}
	// Without any URL the error says it was the default in the data dir.
	if r := run(t, nil, "audit", "list"); r.code != 2 || !strings.Contains(r.stderr, "PLATFORM_DATA_DIR") {
		t.Fatalf("audit list with the default database: exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestMigrateDownGuard(t *testing.T) {
	env := map[string]string{"PLATFORM_DATABASE_URL": storetest.URL(t)}
	if r := run(t, env, "migrate", "up"); r.code != 0 {
		t.Fatalf("up: %d %s", r.code, r.stderr)
	}
	r := run(t, env, "migrate", "down", "--steps", "2")
	if r.code != 4 || !strings.Contains(r.stderr, "--yes") {
		t.Fatalf("down without a terminal: exit %d %s", r.code, r.stderr)
	}
	lines := strings.Split(r.stderr, "\n")
	if len(lines) < 3 || !strings.HasPrefix(lines[0], "will roll back") || lines[1] <= lines[2] {
		t.Fatalf("plan not printed newest first:\n%s", r.stderr)
	}
	prod := map[string]string{"PLATFORM_DATABASE_URL": env["PLATFORM_DATABASE_URL"], "PLATFORM_ENV": "production"}
	if r := run(t, prod, "migrate", "down"); r.code != 4 || !strings.Contains(r.stderr, "production") {
		t.Fatalf("down in production without --yes: exit %d %s", r.code, r.stderr)
	}
	r = run(t, env, "migrate", "down", "--yes", "--steps", "2", "--output", "json")
	var report struct{ RolledBack []store.Migration }
	if err := json.Unmarshal([]byte(r.stdout), &report); r.code != 0 || err != nil || len(report.RolledBack) != 2 ||
		report.RolledBack[0].Version <= report.RolledBack[1].Version {
		t.Fatalf("down --yes --steps 2: exit %d %v %s %s", r.code, err, r.stdout, r.stderr)
	}
	if r := run(t, env, "migrate", "validate", "--output", "json"); r.code != 0 || !strings.Contains(r.stdout, `"ok": true`) {
		t.Fatalf("validate: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := run(t, env, "migrate", "up", "-o", "json"); r.code != 0 || strings.Count(r.stdout, `"version"`) != 2 {
		t.Fatalf("up after down: exit %d %s", r.code, r.stdout)
	}
	if r := run(t, env, "migrate", "redo", "--yes"); r.code != 0 || !strings.Contains(r.stderr, "applied") {
		t.Fatalf("redo: exit %d %s", r.code, r.stderr)
	}
}

// A migrating job killed with SIGKILL leaves no lock behind: the next job
// runs at once. While it lives, a second job says who holds the lock and
// gives up after --lock-timeout with exit 5.
func TestMigrationLockDiesWithItsJob(t *testing.T) {
	url := storetest.URL(t)
	env := map[string]string{"PLATFORM_DATABASE_URL": url}
	if r := run(t, env, "migrate", "up"); r.code != 0 {
		t.Fatalf("up: %d %s", r.code, r.stderr)
	}
	if r := run(t, env, "migrate", "down", "--yes"); r.code != 0 {
		t.Fatalf("down: %d %s", r.code, r.stderr)
	}
	release := blockMigrations(t, url)
	job := command(t, env, "migrate", "up")
	var jobErr bytes.Buffer
	job.Stderr = &jobErr
	if err := job.Start(); err != nil {
		t.Fatal(err)
	}
	waitForLockHolder(t, url)
	r := run(t, env, "migrate", "up", "--lock-timeout", "1s")
	want := fmt.Sprintf("pid %d", job.Process.Pid)
	if r.code != 5 || !strings.Contains(r.stderr, "waiting for the migration lock held by") || !strings.Contains(r.stderr, want) {
		t.Fatalf("second job while the first holds the lock: exit %d, stderr %q; want exit 5 naming %s", r.code, r.stderr, want)
	}
	if err := job.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	job.Wait() //nolint:errcheck // killed on purpose
	release()
	r = run(t, env, "migrate", "up", "--lock-timeout", "10s")
	if r.code != 0 || strings.Contains(r.stderr, "waiting") || !strings.Contains(r.stderr, "applied") {
		t.Fatalf("job after the holder was killed: exit %d %s (killed job said %q)", r.code, r.stderr, jobErr.String())
	}
}

// blockMigrations makes a migration that has taken the lock wait: on
// PostgreSQL by share-locking goose's version table, on SQLite by holding the
// write lock. The returned func lets go.
func blockMigrations(t *testing.T, url string) func() {
	t.Helper()
	driver, dsn := "pgx", url
	if !strings.HasPrefix(url, "postgres") {
		driver, dsn = "sqlite", strings.TrimPrefix(url, "file:")+"?_pragma=busy_timeout(10000)"
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	stmt := "BEGIN IMMEDIATE"
	if driver == "pgx" {
		stmt = "BEGIN; LOCK TABLE goose_db_version IN SHARE MODE" // reads go on, recording a version waits
	}
	if _, err := conn.ExecContext(t.Context(), stmt); err != nil {
		t.Fatal(err)
	}
	return func() {
		if _, err := conn.ExecContext(context.WithoutCancel(t.Context()), "ROLLBACK"); err != nil {
			t.Fatal(err)
		}
		conn.Close()
	}
}

// waitForLockHolder returns once some process holds the migration lock.
func waitForLockHolder(t *testing.T, url string) {
	t.Helper()
	testwait.For(t, 20*time.Second, "the migrating job to take the lock", func() bool { return lockHeld(t, url) })
}

func lockHeld(t *testing.T, url string) bool {
	if strings.HasPrefix(url, "postgres") {
		db, err := sql.Open("pgx", url)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var n int
		if err := db.QueryRowContext(t.Context(), "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n > 0
	}
	f, err := os.Open(strings.TrimPrefix(url, "file:"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if err == nil {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN) //nolint:errcheck // closing releases it too
		return false
	}
	return errors.Is(err, syscall.EWOULDBLOCK)
}

// A rollback whose second step fails stops there and says exactly what was
// rolled back, what failed and what was not touched; status agrees.
func TestFailedRollbackStepIsReportedExactly(t *testing.T) {
	url := storetest.URL(t)
	env := map[string]string{"PLATFORM_DATABASE_URL": url}
	if r := run(t, env, "migrate", "up"); r.code != 0 {
		t.Fatalf("up: %d %s", r.code, r.stderr)
	}
	driver, dsn := "pgx", url
	if !strings.HasPrefix(url, "postgres") {
		driver, dsn = "sqlite", strings.TrimPrefix(url, "file:")
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// The player migration's down drops player_decks last; without it that step fails.
	drop := "DROP TABLE player_decks"
	if driver == "pgx" {
		drop += " CASCADE" // its foreign keys go too; the other tables stay
	}
	if _, err := db.ExecContext(t.Context(), drop); err != nil {
		t.Fatal(err)
	}
	// Ask for every migration newer than player, player itself and one
	// more: the newer ones roll back, player fails, the last is left.
	newer := map[int64]bool{}
	for _, m := range migrateStatus(t, env) {
		if m.Name == "player" {
			clear(newer)
			continue
		}
		newer[m.Version] = true
	}
	steps := fmt.Sprint(len(newer) + 2)
	r := run(t, env, "migrate", "down", "--yes", "--steps", steps, "-o", "json")
	var report struct {
		RolledBack, NotRolledBack []store.Migration
		Failed                    *store.Migration
	}
	if err := json.Unmarshal([]byte(r.stdout), &report); err != nil || r.code != 1 {
		t.Fatalf("down with a failing step: exit %d, %v, stdout %s stderr %s", r.code, err, r.stdout, r.stderr)
	}
	if len(report.RolledBack) != len(newer) || report.Failed == nil || report.Failed.Name != "player" || len(report.NotRolledBack) != 1 {
		t.Fatalf("report %+v, want the %d newer migrations rolled back, player failed, one not rolled back", report, len(newer))
	}
	for _, m := range report.RolledBack {
		if !newer[m.Version] {
			t.Errorf("rolled back %d %s, which is not newer than player", m.Version, m.Name)
		}
	}
	for _, m := range migrateStatus(t, env) {
		wantApplied := !newer[m.Version]
		if m.Applied != wantApplied {
			t.Errorf("status of %d %s: applied %v, want %v", m.Version, m.Name, m.Applied, wantApplied)
		}
	}
}

// migrateStatus runs `migrate status -o json`.
func migrateStatus(t *testing.T, env map[string]string) []store.Migration {
	t.Helper()
	r := run(t, env, "migrate", "status", "-o", "json")
	var st []store.Migration
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatalf("migrate status: %v: %s %s", err, r.stdout, r.stderr)
	}
	return st
}
