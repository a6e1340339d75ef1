package resilience_test

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/fixtures"
	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/apitest"
	"github.com/towerdefence/platformctl/internal/app"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/cli"
	"github.com/towerdefence/platformctl/internal/config"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/seed"
	"github.com/towerdefence/platformctl/internal/testwait"
)

// childEnv makes the test binary act as `platformctl` (see TestMain), so
// that the process tests signal and kill a real server process without
// building a separate binary.
const childEnv = "PLATFORMCTL_RESILIENCE_CHILD"

// TestMain runs the command line exactly as cmd/platformctl does when
// started as a child by startServe.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := cli.Run(ctx, platform.Build{Version: "test", Commit: "test", Date: "2026-01-01T00:00:00Z"},
			os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	flag.Parse()
	if testing.Short() {
		// The suite starts, signals and kills server processes for tens of
		// seconds: -short is the quick pass, so it leaves the suite out.
		fmt.Println("skipping the resilience suite under -short")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// serveProc is a `platformctl serve` child process.
type serveProc struct {
	t    *testing.T
	cmd  *exec.Cmd
	URL  string
	env  map[string]string
	logs *apitest.LogBuffer
	done chan struct{}
	err  error
}

// startServe starts `platformctl serve` with env (PLATFORM_* variables)
// on a free loopback port and waits until it answers.
func startServe(t *testing.T, env map[string]string) *serveProc {
	t.Helper()
	addr := env["PLATFORM_ADDR"]
	if addr == "" {
		addr = freeAddr(t)
	}
	full := map[string]string{
		"PLATFORM_ADDR":       addr,
		"PLATFORM_BASE_URL":   "http://" + addr,
		"PLATFORM_SECRET":     apitest.Secret,
		"PLATFORM_MIGRATE":    "true",
		"PLATFORM_LOG_FORMAT": "json",
		childEnv:              "1",
	}
	for k, v := range env {
		full[k] = v
	}
	cmd := exec.Command(os.Args[0], "serve")
	// Only what the test sets: the parent's PLATFORM_* must not leak in.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PLATFORM") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	for k, v := range full {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	p := &serveProc{t: t, cmd: cmd, URL: "http://" + addr, env: full, logs: &apitest.LogBuffer{}, done: make(chan struct{})}
	cmd.Stdout = p.logs
	cmd.Stderr = p.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill() //nolint:errcheck // already gone is fine
		<-p.done
		if t.Failed() {
			t.Logf("serve %s log:\n%s", p.URL, p.logs.String())
		}
	})
	testwait.Nil(t, 60*time.Second, func() error {
		if res, err := http.Get(p.URL + "/api"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.done:
			t.Fatalf("serve exited before answering (%v):\n%s", p.err, p.logs.String())
		default:
		}
		return fmt.Errorf("serve does not answer:\n%s", p.logs.String())
	})
	return p
}

// signUpWithEmail creates a player through the services, on the server's
// own database and configuration, and returns the Cookie header of its
// session — what a browser holds after signing up — and the player's email
// address. It publishes the embedded content first (idempotently), as an
// operator does on PostgreSQL, so that the player routes have a catalog.
func (p *serveProc) signUpWithEmail(t *testing.T) (cookie, email string) {
	t.Helper()
	ctx := t.Context()
	cfg, err := config.Load(func(k string) string { return p.env[k] }, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.New(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), platform.Build{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	set, problems := seed.Load(fixtures.FS())
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	if _, err := a.Seeder.Seed(ctx, set, seed.Options{}); err != nil {
		t.Fatal(err)
	}
	nick := "r" + strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
	email = nick + "@example.com"
	pr, err := a.Auth.SignUp(ctx, account.RealmPlayer, account.NewUser{
		Email: email, Name: "Resilience", Nickname: nick, Password: apitest.DefaultPassword,
	}, true, auth.Client{UserAgent: "resilience test"})
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, c := range a.Auth.Cookies().SessionCookies(account.RealmPlayer, pr.Token, true) {
		parts = append(parts, c.Name+"="+c.Value)
	}
	return strings.Join(parts, "; "), email
}

// signal sends sig to the process.
func (p *serveProc) signal(sig os.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatal(err)
	}
}

// wait waits for the process to exit and returns its exit code.
func (p *serveProc) wait(within time.Duration) int {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(within):
		p.t.Fatalf("serve still running %s after the signal", within)
	}
	return p.cmd.ProcessState.ExitCode()
}

// logLines returns the JSON log lines whose msg is msg.
func (p *serveProc) logLines(msg string) []map[string]any {
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(p.logs.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line map[string]any
		if json.Unmarshal(sc.Bytes(), &line) == nil && line["msg"] == msg {
			out = append(out, line)
		}
	}
	return out
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
