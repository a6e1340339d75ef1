package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/storetest"
	"github.com/towerdefence/platformctl/internal/testwait"
)

type result struct {
	code           int
	stdout, stderr string
}

// run executes the CLI in-process with env as its whole environment.
func run(t *testing.T, ctx context.Context, env map[string]string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Run(ctx, platform.Build{Version: "v1.2.3", Commit: "abc123", Date: "2026-11-21"}, args,
		func(k string) string { return env[k] }, strings.NewReader(""), &out, &errOut)
	return result{code, out.String(), errOut.String()}
}

func testEnv(t *testing.T) map[string]string {
	return map[string]string{
		"PLATFORM_DATA_DIR":     t.TempDir(),
		"PLATFORM_DATABASE_URL": storetest.URL(t),
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		r := run(t, t.Context(), nil, args...)
		if r.code != 0 || !strings.Contains(r.stdout, "v1.2.3") || !strings.Contains(r.stdout, "abc123") {
			t.Fatalf("%v: code %d stdout %q", args, r.code, r.stdout)
		}
	}
}

func TestBadConfigurationExitsTwoWithOneLine(t *testing.T) {
	env := testEnv(t)
	env["PLATFORM_LOG_FORMAT"] = "xml"
	r := run(t, t.Context(), env, "serve")
	if r.code != ExitUsage {
		t.Fatalf("code %d, want %d; stderr %q", r.code, ExitUsage, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "PLATFORM_LOG_FORMAT") {
		t.Fatalf("stderr %q, want one line naming the setting", r.stderr)
	}
	if r := run(t, t.Context(), testEnv(t), "serve", "--addr", "nope"); r.code != ExitUsage || !strings.Contains(r.stderr, "PLATFORM_ADDR") {
		t.Fatalf("bad flag value: code %d stderr %q", r.code, r.stderr)
	}
	if r := run(t, t.Context(), testEnv(t), "serve", "--no-such-flag"); r.code != ExitUsage {
		t.Fatalf("unknown flag: code %d", r.code)
	}
}

func TestServeHelpNamesEveryVariable(t *testing.T) {
	r := run(t, t.Context(), nil, "serve", "--help")
	for _, v := range []string{"PLATFORM_ENV", "PLATFORM_ADDR", "PLATFORM_BASE_URL", "PLATFORM_DATA_DIR", "PLATFORM_DATABASE_URL",
		"PLATFORM_SECRET", "PLATFORM_TRUSTED_ORIGINS", "PLATFORM_SMTP_URL", "PLATFORM_MAIL_FROM", "PLATFORM_LOG_FORMAT", "PLATFORM_LOG_LEVEL"} {
		if !strings.Contains(r.stdout, v) {
			t.Errorf("serve --help does not mention %s", v)
		}
	}
}

func TestMigrateStatusUpDown(t *testing.T) {
	ctx := t.Context()
	env := testEnv(t)
	var st []struct {
		Version int64
		Applied bool
	}
	if !strings.HasPrefix(env["PLATFORM_DATABASE_URL"], "postgres") {
		r := run(t, ctx, env, "migrate", "status", "--output", "json")
		if r.code != ExitUsage || !strings.Contains(r.stderr, "does not exist") || !strings.Contains(r.stderr, "PLATFORM_DATABASE_URL") {
			t.Fatalf("status on a missing database: %d %s", r.code, r.stderr)
		}
	}
	if r := run(t, ctx, env, "migrate", "up"); r.code != 0 || !strings.Contains(r.stderr, "applied") {
		t.Fatalf("up: %d %s", r.code, r.stderr)
	}
	r := run(t, ctx, env, "migrate", "status")
	if r.code != 0 || strings.Contains(r.stdout, "pending") || !strings.Contains(r.stdout, "applied") {
		t.Fatalf("status table after up: %s", r.stdout)
	}
	if r := run(t, ctx, env, "migrate", "down"); r.code != ExitRefused || !strings.Contains(r.stderr, "--yes") {
		t.Fatalf("down without a terminal or --yes: %d %s", r.code, r.stderr)
	}
	if r := run(t, ctx, env, "migrate", "down", "--yes"); r.code != 0 || strings.Count(r.stderr, "rolled back") != 1 {
		t.Fatalf("down: %d %s", r.code, r.stderr)
	}
	r = run(t, ctx, env, "migrate", "status", "--output", "json")
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || len(st) < 2 || !st[0].Applied || st[len(st)-1].Applied {
		t.Fatalf("status after down: only the newest migration should be pending: %v %s", err, r.stdout)
	}
	if r := run(t, ctx, env, "migrate", "status", "--output", "yaml"); r.code != ExitUsage {
		t.Fatalf("bad --output: code %d", r.code)
	}
	bad := testEnv(t)
	bad["PLATFORM_DATABASE_URL"] = "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=1"
	if r := run(t, ctx, bad, "migrate", "up"); r.code != ExitUnavailable || !strings.Contains(r.stderr, "127.0.0.1:1") {
		t.Fatalf("migrate up against an unreachable database: code %d stderr %q", r.code, r.stderr)
	}
}

func TestMigrateCreateWritesBothDialects(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"postgres", "sqlite"} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
	}
	r := run(t, t.Context(), nil, "migrate", "create", "add_widgets", "--dir", dir)
	if r.code != 0 || strings.Count(r.stdout, "\n") != 2 {
		t.Fatalf("create: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r := run(t, t.Context(), nil, "migrate", "create", "Bad Name", "--dir", dir); r.code != ExitUsage {
		t.Fatalf("bad name: code %d", r.code)
	}
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Serve refuses a PostgreSQL database with pending migrations unless
// --migrate is given; on SQLite it migrates by itself.
func TestServeMigrationPolicyAndShutdown(t *testing.T) {
	env := testEnv(t)
	postgres := strings.HasPrefix(env["PLATFORM_DATABASE_URL"], "postgres")
	metricsAddr := freeAddr(t)
	args := []string{"serve", "--addr", freeAddr(t), "--metrics-addr", metricsAddr}
	if postgres {
		r := run(t, t.Context(), env, args...)
		if r.code == 0 || !strings.Contains(r.stderr, "migrate up") {
			t.Fatalf("serve on unmigrated PostgreSQL: code %d stderr %q", r.code, r.stderr)
		}
		args = append(args, "--migrate")
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan result, 1)
	go func() { done <- run(t, ctx, env, args...) }()
	url := "http://" + args[2] + "/api/health"
	testwait.Nil(t, 90*time.Second, func() error {
		select {
		case r := <-done:
			t.Fatalf("serve ended before answering: %+v", r)
		default:
		}
		res, err := http.Get(url)
		if err != nil {
			return err
		}
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("health %d", res.StatusCode)
		}
		return nil
	})
	metrics, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(metrics.Body)
	metrics.Body.Close()
	for _, want := range []string{`platform_http_requests_total{method="GET",route="/api/health",status="200"}`, "go_sql_max_open_connections", "process_resident_memory_bytes"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	cancel()
	r := <-done
	if r.code != 0 || !strings.Contains(r.stderr, "stopped") {
		t.Fatalf("shutdown: code %d stderr %s", r.code, r.stderr)
	}
}
