package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// hotRoutes are the routes whose throughput must not move when many
// streams are open: each is requested with every player's cookie in turn.
var hotRoutes = []string{"/api/auth/player/get-session", "/api/player/bootstrap", "/api/player/social"}

// idle measures what o.n idle streams cost the serve: its RSS, how late
// heartbeats come, and the hot routes' throughput in alternating rounds
// without and with the streams open (o.rounds each; the streams are
// opened afresh every round and held for o.hold in the last).
func idle(ctx context.Context, log *slog.Logger, o options) error {
	a, err := openApp(ctx, log)
	if err != nil {
		return err
	}
	players, err := makePlayers(ctx, a, o.n)
	a.Close()
	if err != nil {
		return err
	}
	rssBefore := rssMiB(o.pid)
	var h heartbeats
	var without, with []throughput
	var rss float64
	for round := 1; round <= o.rounds; round++ {
		without = append(without, measureRoutes(ctx, o, players))
		open, err := openStreams(ctx, o.base, players, &h)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "eventload: round %d: %d streams open in %s\n", round, len(open.streams), open.took.Round(time.Millisecond))
		with = append(with, measureRoutes(ctx, o, players))
		if round == o.rounds {
			hold(ctx, o.hold)
			rss = rssMiB(o.pid)
		}
		open.close()
		if round < o.rounds {
			// serve notices a closed idle stream at its next heartbeat;
			// until then the closed streams count against
			// PLATFORM_EVENTS_MAX_STREAMS.
			hold(ctx, o.hbEvery+time.Second)
		}
	}
	h.report(o)
	fmt.Printf("serve RSS:             %.0f MiB before, %.0f MiB with %d streams open\n", rssBefore, rss, o.n)
	reportRoutes(without, with)
	return nil
}

func hold(ctx context.Context, d time.Duration) {
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
}

// heartbeats collects the gaps between consecutive heartbeats of a stream.
type heartbeats struct {
	mu    sync.Mutex
	gaps  []time.Duration
	snaps atomic.Int64
}

func (h *heartbeats) add(gap time.Duration) {
	h.mu.Lock()
	h.gaps = append(h.gaps, gap)
	h.mu.Unlock()
}

func (h *heartbeats) report(o options) {
	h.mu.Lock()
	defer h.mu.Unlock()
	slices.Sort(h.gaps)
	fmt.Printf("snapshots received:    %d (%d rounds of %d streams)\n", h.snaps.Load(), o.rounds, o.n)
	fmt.Printf("heartbeat gaps:        %d gaps, p50 %s p99 %s max %s (configured %s)\n", len(h.gaps),
		pct(h.gaps, 50), pct(h.gaps, 99), pct(h.gaps, 100), o.hbEvery)
}

// openSet is a set of open streams and the goroutines reading them.
type openSet struct {
	streams []*stream
	wg      sync.WaitGroup
	took    time.Duration
}

// openStreams opens one stream per player; every stream must open, or
// the measurement with them would not be what it claims.
func openStreams(ctx context.Context, base string, players []loadPlayer, h *heartbeats) (*openSet, error) {
	set := &openSet{streams: make([]*stream, 0, len(players))}
	start := time.Now()
	for _, p := range players {
		s, err := openStream(ctx, base, p.Cookie)
		if err != nil {
			set.close()
			return nil, fmt.Errorf("stream %d of %d: %w", len(set.streams)+1, len(players), err)
		}
		set.streams = append(set.streams, s)
		set.wg.Go(func() {
			var last time.Time
			s.read(func(ev sseEvent) { //nolint:errcheck // ends when the stream is closed
				if ev.Type == "snapshot" {
					h.snaps.Add(1)
				}
			}, func(at time.Time) {
				if !last.IsZero() {
					h.add(at.Sub(last))
				}
				last = at
			})
		})
	}
	set.took = time.Since(start)
	return set, nil
}

func (s *openSet) close() {
	for _, st := range s.streams {
		st.Close()
	}
	s.wg.Wait()
}

// throughput is one measurement of every hot route.
type throughput map[string]routeResult

type routeResult struct {
	rps      float64
	p50, p99 time.Duration
	errors   int64
}

// measureRoutes drives each hot route in turn with o.conns closed-loop
// connections for o.routeDur, after a one-second warm-up.
func measureRoutes(ctx context.Context, o options, players []loadPlayer) throughput {
	out := throughput{}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: o.conns}}
	defer client.CloseIdleConnections()
	for _, route := range hotRoutes {
		drive(ctx, client, o.base+route, players, o.conns, time.Second)
		out[route] = drive(ctx, client, o.base+route, players, o.conns, o.routeDur)
	}
	return out
}

// drive requests url from conns goroutines for d, each cycling through
// the players' cookies from its own offset.
func drive(ctx context.Context, client *http.Client, url string, players []loadPlayer, conns int, d time.Duration) routeResult {
	var (
		mu     sync.Mutex
		all    []time.Duration
		errors atomic.Int64
		wg     sync.WaitGroup
	)
	deadline := time.Now().Add(d)
	for w := range conns {
		wg.Go(func() {
			var mine []time.Duration
			for i := w * len(players) / conns; time.Now().Before(deadline) && ctx.Err() == nil; i++ {
				t0 := time.Now()
				if get(ctx, client, url, players[i%len(players)].Cookie) {
					mine = append(mine, time.Since(t0))
				} else {
					errors.Add(1)
				}
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	slices.Sort(all)
	return routeResult{rps: float64(len(all)) / d.Seconds(), p50: pct(all, 50), p99: pct(all, 99), errors: errors.Load()}
}

// get reports whether GET url with cookie answered 200.
func get(ctx context.Context, client *http.Client, url, cookie string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	req.Header.Set("Cookie", cookie)
	res, err := client.Do(req)
	if err != nil {
		return false
	}
	defer res.Body.Close()
	_, err = io.Copy(io.Discard, res.Body)
	return err == nil && res.StatusCode == http.StatusOK
}

// reportRoutes prints, per route, the medians over the rounds without and
// with the streams and their ratio.
func reportRoutes(without, with []throughput) {
	fmt.Printf("%-30s %12s %12s %7s %16s %16s %7s\n", "route (medians of rounds)", "req/s none", "req/s with", "ratio", "p50 none/with", "p99 none/with", "errors")
	for _, route := range hotRoutes {
		a, b := medianOf(without, route), medianOf(with, route)
		fmt.Printf("%-30s %12.0f %12.0f %7.2f %16s %16s %7d\n", route, a.rps, b.rps, b.rps/a.rps,
			a.p50.String()+"/"+b.p50.String(), a.p99.String()+"/"+b.p99.String(), errorsOf(without, route)+errorsOf(with, route))
	}
}

// medianOf is the round with the median throughput for route.
func medianOf(rounds []throughput, route string) routeResult {
	rs := make([]routeResult, 0, len(rounds))
	for _, t := range rounds {
		rs = append(rs, t[route])
	}
	slices.SortFunc(rs, func(a, b routeResult) int { return int(a.rps - b.rps) })
	return rs[len(rs)/2]
}

func errorsOf(rounds []throughput, route string) int64 {
	var n int64
	for _, t := range rounds {
		n += t[route].errors
	}
	return n
}

func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	return sorted[max(0, min(i, len(sorted))-1)].Round(10 * time.Microsecond)
}

// rssMiB reads a process's resident set size from /proc.
func rssMiB(pid int) float64 {
	if pid == 0 {
		return 0
	}
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64) //nolint:errcheck // 0 on a malformed line
			return kb / 1024
		}
	}
	return 0
}

// latencies is a sorted sample.
type latencies []time.Duration

func (l latencies) String() string {
	return fmt.Sprintf("n=%d p50 %s p99 %s max %s", len(l), pct(l, 50), pct(l, 99), pct(l, 100))
}
