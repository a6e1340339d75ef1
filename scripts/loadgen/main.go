// Command loadgen drives load against a running platformctl server over
// loopback and reports requests/s, latency percentiles, errors and the
// server's RSS, as tables and as JSON.
//
//	loadgen run  -plan scripts/bench.json -base http://127.0.0.1:8080 -c 32 -d 10s [-pid PID] [-smtp 127.0.0.1:2525] [-gobench bench.txt] [-json out.json]
//	loadgen soak -plan scripts/bench.json -base http://127.0.0.1:8080 -c 32 -d 5m -warmup 60s [-pid PID] [-smtp ADDR] [-json out.json]
//	loadgen side -base http://127.0.0.1:8080 -path /api/matchmaking/queues -c 32 -d 5s -rounds 3 [-min 0.8]
//
// Each of the -c connections is one virtual user with its own account,
// cookie jar and keep-alive socket. The plan's setup (a sign-up through
// the API) runs once per user; `run` then measures each scenario in turn
// after a short warm-up, `soak` runs the plan's weighted mix all at once.
// With -smtp, loadgen is also the server's SMTP sink: a flow step
// {"awaitMail": true} waits for the next message to the user and captures
// the token from it, as the player's mail client would.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}

type options struct {
	plan, base, smtp, jsonOut, gobench, label, only, pgURL, metrics string
	cookies, adminCookie                                            string
	conns, hot                                                      int
	dur, warmup, interval, mailTimeout, reqTimeout                  time.Duration
	wait                                                            time.Duration
	iterations                                                      int64
	pid                                                             int
}

func run(ctx context.Context, args []string) int {
	if len(args) > 0 && args[0] == "side" {
		return runSide(ctx, args[1:])
	}
	if len(args) > 0 && args[0] == "bare" {
		return runBare(args[1:])
	}
	if len(args) == 0 || (args[0] != "run" && args[0] != "soak") {
		fmt.Fprintln(os.Stderr, "usage: loadgen run|soak|side [flags]  (loadgen run -h for the flags)")
		return 2
	}
	mode := args[0]
	fs := flag.NewFlagSet("loadgen "+mode, flag.ContinueOnError)
	var o options
	fs.StringVar(&o.plan, "plan", "scripts/bench.json", "load plan (JSON)")
	fs.StringVar(&o.base, "base", "http://127.0.0.1:8080", "base URL of the server")
	fs.StringVar(&o.smtp, "smtp", "", "listen address of the SMTP sink the server mails to (off when empty)")
	fs.StringVar(&o.jsonOut, "json", "", "write the report as JSON to this file")
	fs.StringVar(&o.gobench, "gobench", "", "`go test -bench` output to include and check against the plan's benchmark targets")
	fs.StringVar(&o.label, "label", "", "free text describing the setup, for the report")
	fs.StringVar(&o.only, "only", "", "comma-separated scenario names to run (default all)")
	fs.IntVar(&o.conns, "c", 32, "connections (virtual users)")
	fs.DurationVar(&o.dur, "d", 10*time.Second, "measured duration of each scenario (soak: the whole run)")
	fs.Int64Var(&o.iterations, "n", 0, "stop each scenario after this many iterations instead (0: use -d)")
	fs.DurationVar(&o.warmup, "warmup", 2*time.Second, "unmeasured warm-up per scenario (soak: measured but excluded from the RSS judgement)")
	fs.DurationVar(&o.interval, "interval", 10*time.Second, "soak: reporting interval")
	fs.DurationVar(&o.mailTimeout, "mail-timeout", 30*time.Second, "how long a flow waits for its mail")
	fs.DurationVar(&o.reqTimeout, "timeout", 30*time.Second, "per-request timeout")
	fs.DurationVar(&o.wait, "wait", 30*time.Second, "wait this long for GET /api to answer before starting")
	fs.IntVar(&o.pid, "pid", 0, "server process id, to sample its RSS and CPU time from /proc")
	fs.StringVar(&o.metrics, "metrics", "", "soak: the server's Prometheus endpoint, to follow its Go heap, goroutines, pool and outbox")
	fs.StringVar(&o.cookies, "cookies", "", "file of Cookie headers, one a line, for steps with \"cookies\" (the heavy player first)")
	fs.StringVar(&o.adminCookie, "admin-cookie", "", "file with an administrator's Cookie header, for steps with \"cookies\": \"admin\"")
	fs.IntVar(&o.hot, "hot", 32, "how many players of the -cookies file the \"hot\" steps use")
	fs.StringVar(&o.pgURL, "pg-url", "", "the server's PostgreSQL database (same machine), to add its backends' CPU time per request")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if err := execute(ctx, mode, &o); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		var fe *failedError
		if errors.As(err, &fe) {
			return 1
		}
		return 2
	}
	return 0
}

// failedError means the run completed but what it checks did not hold.
type failedError struct{ msg string }

func (e *failedError) Error() string { return e.msg }

func execute(ctx context.Context, mode string, o *options) error {
	plan, err := LoadPlan(o.plan)
	if err != nil {
		return err
	}
	base, err := url.Parse(strings.TrimRight(o.base, "/"))
	if err != nil || base.Scheme != "http" || base.Host == "" {
		return fmt.Errorf("-base must be an http:// URL")
	}
	rep := &report{Machine: describeMachine(o.label), Started: nowRFC3339(), Base: base.String()}

	r := &runner{plan: plan, base: base, runID: randomHex(4), mailTimeout: o.mailTimeout, reqTimeout: o.reqTimeout, metricsURL: o.metrics}
	if r.cookies, err = loadCookies(o.cookies, o.adminCookie, o.hot); err != nil {
		return err
	}
	if o.smtp != "" {
		s, err := startSink(o.smtp)
		if err != nil {
			return fmt.Errorf("SMTP sink: %w", err)
		}
		defer s.Close()
		r.sink = s
	}
	if err := waitReady(ctx, base, o.wait); err != nil {
		return err
	}
	rss := newRSSSampler(o.pid)
	defer rss.close()
	if o.pid > 0 {
		cpu, err := newCPUMeter(ctx, o.pid, o.pgURL)
		if err != nil {
			return err
		}
		defer cpu.close()
		r.cpu = cpu
	}

	failed := false
	switch mode {
	case "run":
		only := map[string]bool{}
		for _, n := range strings.Split(o.only, ",") {
			if n = strings.TrimSpace(n); n != "" {
				only[n] = true
			}
		}
		for i := range plan.Scenarios {
			sc := &plan.Scenarios[i]
			if len(only) > 0 && !only[sc.Name] {
				continue
			}
			fmt.Fprintf(os.Stderr, "loadgen: %s …\n", sc.Name)
			res, err := r.runScenario(ctx, sc, o.conns, o.dur, o.warmup, o.iterations, rss)
			if err != nil {
				return err
			}
			failed = failed || res.Errors > 0
			rep.Scenarios = append(rep.Scenarios, res)
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	case "soak":
		res, err := r.runSoak(ctx, o.conns, o.dur, o.warmup, o.interval, rss)
		if err != nil {
			return err
		}
		rep.Soak = res
		failed = !res.Pass
	}
	if o.gobench != "" {
		f, err := os.Open(o.gobench)
		if err != nil {
			return err
		}
		rep.Benchmarks, err = parseGoBench(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("parse %s: %w", o.gobench, err)
		}
	}
	if r.sink != nil {
		rep.Mail = &mailReport{Received: r.sink.received.Load(), Duplicates: r.sink.duplicates()}
		failed = failed || rep.Mail.Duplicates > 0
	}
	rep.Checks = checkTargets(plan, rep)
	printReport(os.Stdout, rep)
	if o.jsonOut != "" {
		raw, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(o.jsonOut, append(raw, '\n'), 0o644); err != nil {
			return err
		}
	}
	if failed {
		return &failedError{"errors during the run (see the tables above)"}
	}
	return nil
}

// waitReady polls GET /api until the server answers 200.
func waitReady(ctx context.Context, base *url.URL, within time.Duration) error {
	deadline := time.Now().Add(within)
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base.String()+"/api", nil)
		res, err := client.Do(req)
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("the server at %s did not answer GET /api within %s", base, within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
