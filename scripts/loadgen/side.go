package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/towerdefence/platformctl/internal/httpapi"
)

// The side-by-side mode measures what the server's request pipeline
// costs: it fetches one response from the server, serves the very same
// bytes and headers from a bare net/http handler in a child process, and
// loads both in alternating rounds of the same run, so both see the same
// machine. The score is the median of the per-round ratios of requests/s.
//
// The load generator shares the machine's cores with the process it loads,
// and costs about as much per request as a bare handler, so requests/s
// compare the server and the bare handler each plus the load generator:
// the ratio understates what the pipeline costs, and moves with whatever
// else runs on the machine. Each round therefore also reads the CPU time
// the loaded process spent during the measured time (/proc/PID/stat; the
// server's pid comes from -pid) and reports CPU time per request and the
// ratio of those, bare over server: the share of a bare handler's
// capacity the server has with the cores to itself, which other work on
// the machine hardly moves. -min applies to both medians.
//
//	loadgen side -base http://127.0.0.1:8080 -pid PID -path /api/matchmaking/queues -c 32 -d 5s -rounds 3 [-gzip] [-session] [-min 0.8]
//	loadgen bare -addr 127.0.0.1:0 -response FILE   (started by side)

// sideOptions are the flags of `loadgen side`.
type sideOptions struct {
	base, path, jsonOut string
	conns, rounds, pid  int
	dur, warmup         time.Duration
	gzip, session       bool
	min                 float64
}

func runSide(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("loadgen side", flag.ContinueOnError)
	var o sideOptions
	fs.StringVar(&o.base, "base", "http://127.0.0.1:8080", "base URL of the server")
	fs.StringVar(&o.path, "path", "/api/matchmaking/queues", "the GET request to compare")
	fs.StringVar(&o.jsonOut, "json", "", "write the rounds as JSON to this file")
	fs.IntVar(&o.pid, "pid", 0, "the server's process id, to measure its CPU time per request (0: requests/s only)")
	fs.IntVar(&o.conns, "c", 32, "connections")
	fs.IntVar(&o.rounds, "rounds", 3, "rounds; each measures the server and the bare handler once")
	fs.DurationVar(&o.dur, "d", 5*time.Second, "measured time per target and round")
	fs.DurationVar(&o.warmup, "warmup", 2*time.Second, "unmeasured warm-up per target and round")
	fs.BoolVar(&o.gzip, "gzip", true, "send Accept-Encoding: gzip")
	fs.BoolVar(&o.session, "session", false, "sign a player up first and send its session cookie (for get-session and the player routes)")
	fs.Float64Var(&o.min, "min", 0, "fail when the median ratio is below this")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	res, err := side(ctx, &o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		return 2
	}
	printSide(os.Stdout, res)
	if o.jsonOut != "" {
		raw, _ := json.MarshalIndent(res, "", "  ")
		if err := os.WriteFile(o.jsonOut, append(raw, '\n'), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "loadgen:", err)
			return 2
		}
	}
	failed := false
	if res.MedianRatio < o.min {
		fmt.Fprintf(os.Stderr, "loadgen: median ratio of requests/s %.3f is below %.2f\n", res.MedianRatio, o.min)
		failed = true
	}
	if o.pid > 0 && res.MedianCPURatio < o.min {
		fmt.Fprintf(os.Stderr, "loadgen: median ratio of CPU time per request %.3f is below %.2f\n", res.MedianCPURatio, o.min)
		failed = true
	}
	if failed {
		return 1
	}
	return 0
}

// sideResult is the outcome of a side-by-side run.
type sideResult struct {
	Path        string      `json:"path"`
	Connections int         `json:"connections"`
	Bytes       int         `json:"bytes"`
	Rounds      []sideRound `json:"rounds"`
	MedianRatio float64     `json:"medianRatio"`
	// MedianCPURatio is the median of the rounds' CPURatio (0 without -pid).
	MedianCPURatio float64 `json:"medianCpuRatio"`
}

// sideRound is one round. CPU times are microseconds per answered request
// of the loaded process (the server's or the bare handler's) and of the
// load generator; CPURatio is bare over server.
type sideRound struct {
	ServerRPS        float64 `json:"serverRps"`
	BareRPS          float64 `json:"bareRps"`
	ServerP99Ms      float64 `json:"serverP99Ms"`
	BareP99Ms        float64 `json:"bareP99Ms"`
	Ratio            float64 `json:"ratio"`
	ServerCPUUs      float64 `json:"serverCpuUsPerRequest,omitempty"`
	BareCPUUs        float64 `json:"bareCpuUsPerRequest,omitempty"`
	LoadgenServerCPU float64 `json:"loadgenCpuUsPerServerRequest,omitempty"`
	LoadgenBareCPU   float64 `json:"loadgenCpuUsPerBareRequest,omitempty"`
	CPURatio         float64 `json:"cpuRatio,omitempty"`
}

func side(ctx context.Context, o *sideOptions) (*sideResult, error) {
	base, err := url.Parse(strings.TrimRight(o.base, "/"))
	if err != nil || base.Scheme != "http" || base.Host == "" {
		return nil, errors.New("-base must be an http:// URL")
	}
	if err := waitReady(ctx, base, 30*time.Second); err != nil {
		return nil, err
	}
	req := &request{Method: http.MethodGet, Path: o.path, Header: map[string]string{}}
	if o.gzip {
		req.Header["Accept-Encoding"] = "gzip"
	}
	if o.session {
		if req.Cookie, err = signUpCookie(base); err != nil {
			return nil, err
		}
	}
	c := newConn(base, 10*time.Second)
	sample, err := c.do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", o.path, err)
	}
	c.close()
	if sample.Status != http.StatusOK {
		return nil, fmt.Errorf("GET %s answered %d", o.path, sample.Status)
	}
	bare, barePID, stop, err := startBare(ctx, sample)
	if err != nil {
		return nil, err
	}
	defer stop()
	server := target{url: base, pid: o.pid}
	bareTarget := target{url: bare, pid: barePID}

	res := &sideResult{Path: o.path, Connections: o.conns, Bytes: len(sample.Body)}
	ratios := make([]float64, 0, o.rounds)
	cpuRatios := make([]float64, 0, o.rounds)
	for i := 0; i < o.rounds && ctx.Err() == nil; i++ {
		// Alternate which goes first so neither always gets the
		// warmer (or the more contended) half of a round.
		first, second := server, bareTarget
		if i%2 == 1 {
			first, second = bareTarget, server
		}
		a := hammer(ctx, first, req, o.conns, o.warmup, o.dur)
		b := hammer(ctx, second, req, o.conns, o.warmup, o.dur)
		if i%2 == 1 {
			a, b = b, a
		}
		if a.failed > 0 || b.failed > 0 {
			return nil, fmt.Errorf("round %d: %d failed requests to the server, %d to the bare handler", i+1, a.failed, b.failed)
		}
		r := sideRound{ServerRPS: a.rps, BareRPS: b.rps, Ratio: a.rps / b.rps, ServerP99Ms: a.p99Ms, BareP99Ms: b.p99Ms,
			ServerCPUUs: a.cpuUs, BareCPUUs: b.cpuUs, LoadgenServerCPU: a.loadgenCPUUs, LoadgenBareCPU: b.loadgenCPUUs}
		if a.cpuUs > 0 && b.cpuUs > 0 {
			r.CPURatio = b.cpuUs / a.cpuUs
			cpuRatios = append(cpuRatios, r.CPURatio)
		}
		fmt.Fprintf(os.Stderr, "loadgen: round %d: server %.0f/s (%.1f µs CPU per request, p99 %.2f ms), bare %.0f/s (%.1f µs, p99 %.2f ms), ratio %.3f, CPU ratio %.3f\n",
			i+1, r.ServerRPS, r.ServerCPUUs, r.ServerP99Ms, r.BareRPS, r.BareCPUUs, r.BareP99Ms, r.Ratio, r.CPURatio)
		res.Rounds = append(res.Rounds, r)
		ratios = append(ratios, r.Ratio)
	}
	res.MedianRatio = median(ratios)
	if len(cpuRatios) > 0 {
		res.MedianCPURatio = median(cpuRatios)
	}
	return res, ctx.Err()
}

// target is a process to load: its base URL, and its pid for CPU times
// (0: unknown).
type target struct {
	url *url.URL
	pid int
}

type hammerResult struct {
	rps    float64
	failed int64
	// p99Ms is the 99th percentile of the measured requests' latency.
	p99Ms float64
	// cpuUs and loadgenCPUUs are the CPU microseconds per answered
	// request of the target process (0 without a pid) and of this one.
	cpuUs, loadgenCPUUs float64
}

// hammer sends req on conns keep-alive connections to target, first for
// warmup unmeasured, then for dur, and counts the 200 answers and the
// CPU time spent meanwhile.
func hammer(ctx context.Context, t target, req *request, conns int, warmup, dur time.Duration) hammerResult {
	var ok, failed atomic.Int64
	var measuring atomic.Bool
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	latencies := make([][]time.Duration, conns)
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := newConn(t.url, 10*time.Second)
			defer c.close()
			for ctx.Err() == nil {
				sent := time.Now()
				res, err := c.do(req)
				if !measuring.Load() {
					continue
				}
				if err != nil || res.Status != http.StatusOK {
					failed.Add(1)
					continue
				}
				ok.Add(1)
				latencies[i] = append(latencies[i], time.Since(sent))
			}
		}()
	}
	time.Sleep(warmup)
	ok.Store(0)
	failed.Store(0)
	measuring.Store(true)
	start, targetCPU, ownCPU := time.Now(), processCPU(t.pid), ownCPUTime()
	time.Sleep(dur)
	n, f := ok.Load(), failed.Load()
	elapsed := time.Since(start)
	targetCPU, ownCPU = processCPU(t.pid)-targetCPU, ownCPUTime()-ownCPU
	cancel()
	wg.Wait()
	res := hammerResult{rps: float64(n) / elapsed.Seconds(), failed: f, p99Ms: p99(latencies)}
	if n > 0 {
		if t.pid > 0 {
			res.cpuUs = float64(targetCPU.Microseconds()) / float64(n)
		}
		res.loadgenCPUUs = float64(ownCPU.Microseconds()) / float64(n)
	}
	return res
}

// p99 is the 99th percentile of all the connections' latencies, in ms.
func p99(perConn [][]time.Duration) float64 {
	all := slices.Concat(perConn...)
	if len(all) == 0 {
		return 0
	}
	slices.Sort(all)
	return float64(all[len(all)*99/100].Microseconds()) / 1000
}

// signUpCookie signs a new player up on base and returns the Cookie
// header of its session.
func signUpCookie(base *url.URL) (string, error) {
	nick := fmt.Sprintf("side%d", time.Now().UnixNano()%1e9)
	body, _ := json.Marshal(map[string]any{"email": nick + "@example.com", "password": "side-by-side password",
		"name": "Side", "nickname": nick})
	c := newConn(base, 30*time.Second)
	defer c.close()
	res, err := c.do(&request{Method: http.MethodPost, Path: "/api/auth/player/sign-up/email", Body: body,
		Header: map[string]string{"Content-Type": "application/json", "Origin": base.String()}})
	if err != nil {
		return "", fmt.Errorf("sign up: %w", err)
	}
	if res.Status != http.StatusOK {
		return "", fmt.Errorf("sign up answered %d: %s", res.Status, res.Body)
	}
	var parts []string
	for _, ck := range (&http.Response{Header: res.Header}).Cookies() {
		parts = append(parts, ck.Name+"="+ck.Value)
	}
	return strings.Join(parts, "; "), nil
}

// processCPU is the CPU time of pid so far, 0 for pid 0.
func processCPU(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	return procCPU(pid)
}

// ownCPUTime is this process's CPU time so far.
func ownCPUTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// bareHeaders are the response headers the bare handler copies.
var bareHeaders = []string{"Content-Type", "Content-Encoding", "Content-Length", "Etag", "Cache-Control", "Vary",
	"X-Content-Type-Options", "X-Request-Id"}

// startBare runs `loadgen bare` in a child process, serving sample, and
// returns its base URL, its pid and a function that stops it.
func startBare(ctx context.Context, sample *response) (*url.URL, int, func(), error) {
	u, cmd, err := startBareProcess(ctx, sample)
	if err != nil {
		return nil, 0, nil, err
	}
	return u, cmd.Process.Pid, func() { cmd.Process.Kill(); cmd.Wait() }, nil //nolint:errcheck // the child is ours to end
}

func startBareProcess(ctx context.Context, sample *response) (*url.URL, *exec.Cmd, error) {
	f, err := os.CreateTemp("", "loadgen-bare-*.json")
	if err != nil {
		return nil, nil, err
	}
	defer os.Remove(f.Name())
	header := map[string]string{}
	for _, k := range bareHeaders {
		if v := sample.Header.Get(k); v != "" {
			header[k] = v
		}
	}
	err = json.NewEncoder(f).Encode(bareResponse{Header: header, Body: sample.Body})
	f.Close()
	if err != nil {
		return nil, nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.CommandContext(ctx, self, "bare", "-addr", "127.0.0.1:0", "-response", f.Name())
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	stop := func() { cmd.Process.Kill(); cmd.Wait() } //nolint:errcheck // the child is ours to end
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		stop()
		return nil, nil, fmt.Errorf("bare handler did not start: %w", err)
	}
	u, err := url.Parse("http://" + strings.TrimSpace(line))
	if err != nil {
		stop()
		return nil, nil, err
	}
	return u, cmd, nil
}

// bareResponse is what the bare handler serves.
type bareResponse struct {
	Header map[string]string `json:"header"`
	Body   []byte            `json:"body"`
}

// runBare serves one fixed response to every request with nothing but
// net/http, in the http.Server that serve uses, printing its address on
// stdout once it listens.
func runBare(args []string) int {
	fs := flag.NewFlagSet("loadgen bare", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	file := fs.String("response", "", "the response to serve (JSON written by `loadgen side`)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	raw, err := os.ReadFile(*file)
	var br bareResponse
	if err == nil {
		err = json.Unmarshal(raw, &br)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen bare:", err)
		return 2
	}
	br.Header["Content-Length"] = strconv.Itoa(len(br.Body))
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen bare:", err)
		return 2
	}
	fmt.Println(ln.Addr().String())
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hd := w.Header()
		for k, v := range br.Header {
			hd.Set(k, v)
		}
		w.Write(br.Body) //nolint:errcheck // the client went away
	})
	// serve's own server settings (timeouts, header cap): the comparison
	// is between handler stacks, not server configurations.
	err = httpapi.NewServer(h).Serve(ln)
	fmt.Fprintln(os.Stderr, "loadgen bare:", err)
	return 1
}

func printSide(w io.Writer, res *sideResult) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "GET %s (%d bytes), %d connections: server vs a bare net/http handler serving the same bytes\n",
		res.Path, res.Bytes, res.Connections)
	fmt.Fprintln(tw, "round\tserver req/s\tbare req/s\tratio\tserver p99 ms\tbare p99 ms\tserver CPU µs/req\tbare CPU µs/req\tCPU ratio\tloadgen CPU µs/req (server, bare)\t")
	for i, r := range res.Rounds {
		fmt.Fprintf(tw, "%d\t%.0f\t%.0f\t%.3f\t%.2f\t%.2f\t%.1f\t%.1f\t%.3f\t%.1f, %.1f\t\n", i+1, r.ServerRPS, r.BareRPS, r.Ratio,
			r.ServerP99Ms, r.BareP99Ms, r.ServerCPUUs, r.BareCPUUs, r.CPURatio, r.LoadgenServerCPU, r.LoadgenBareCPU)
	}
	tw.Flush()
	rs, cs := make([]float64, len(res.Rounds)), make([]float64, len(res.Rounds))
	for i, r := range res.Rounds {
		rs[i], cs[i] = r.Ratio, r.CPURatio
	}
	slices.Sort(rs)
	slices.Sort(cs)
	fmt.Fprintf(w, "median ratio of requests/s %.3f (rounds: %v)\n", res.MedianRatio, rs)
	if res.MedianCPURatio > 0 {
		fmt.Fprintf(w, "median ratio of CPU time per request (bare/server) %.3f (rounds: %v)\n", res.MedianCPURatio, cs)
	}
}
