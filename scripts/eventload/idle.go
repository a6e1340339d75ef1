package main

import (
	"context"
	"fmt"
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

// idle holds o.n idle streams and reports serve's RSS, how late
// heartbeats came, and get-session latency before and while they are open.
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
	before := getSessionLatency(ctx, o.base, players[0].Cookie, o.sessionReqs)

	var (
		mu       sync.Mutex
		gaps     []time.Duration // between consecutive heartbeats of one stream
		snaps    atomic.Int64
		failures atomic.Int64
		wg       sync.WaitGroup
	)
	holdCtx, stop := context.WithCancel(ctx)
	defer stop()
	streams := make([]*stream, 0, len(players))
	start := time.Now()
	for _, p := range players {
		s, err := openStream(ctx, o.base, p.Cookie)
		if err != nil {
			failures.Add(1)
			continue
		}
		streams = append(streams, s)
		wg.Go(func() {
			var last time.Time
			s.read(func(ev sseEvent) { //nolint:errcheck // ends when the stream is closed
				if ev.Type == "snapshot" {
					snaps.Add(1)
				}
			}, func(at time.Time) {
				if !last.IsZero() {
					mu.Lock()
					gaps = append(gaps, at.Sub(last))
					mu.Unlock()
				}
				last = at
			})
		})
	}
	opened := time.Since(start)
	fmt.Fprintf(os.Stderr, "eventload: %d streams open in %s (%d failed); holding %s\n", len(streams), opened.Round(time.Millisecond), failures.Load(), o.hold)
	during := getSessionLatency(ctx, o.base, players[0].Cookie, o.sessionReqs)
	select {
	case <-time.After(o.hold):
	case <-holdCtx.Done():
	}
	rss := rssMiB(o.pid)
	for _, s := range streams {
		s.Close()
	}
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	slices.Sort(gaps)
	fmt.Printf("streams open:          %d of %d (opened in %s), snapshots %d\n", len(streams), o.n, opened.Round(time.Millisecond), snaps.Load())
	fmt.Printf("serve RSS:             %.0f MiB before, %.0f MiB with the streams open\n", rssBefore, rss)
	fmt.Printf("heartbeat gaps:        %d gaps, p50 %s p99 %s max %s (configured %s)\n", len(gaps),
		pct(gaps, 50), pct(gaps, 99), pct(gaps, 100), o.hbEvery)
	fmt.Printf("get-session, no streams:   %s\n", before)
	fmt.Printf("get-session, with streams: %s\n", during)
	return nil
}

// latencies is a sorted sample.
type latencies []time.Duration

func (l latencies) String() string {
	return fmt.Sprintf("n=%d p50 %s p99 %s max %s", len(l), pct(l, 50), pct(l, 99), pct(l, 100))
}

func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	return sorted[max(0, min(i, len(sorted))-1)].Round(10 * time.Microsecond)
}

// getSessionLatency times n sequential get-session requests, three times,
// and returns the repeat with the median p50.
func getSessionLatency(ctx context.Context, base, cookie string, n int) latencies {
	c := &http.Client{Timeout: 10 * time.Second}
	var runs []latencies
	for range 3 {
		l := make(latencies, 0, n)
		for range n {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/auth/player/get-session", nil) //nolint:errcheck // constant URL
			req.Header.Set("Cookie", cookie)
			t0 := time.Now()
			res, err := c.Do(req)
			if err != nil {
				continue
			}
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				l = append(l, time.Since(t0))
			}
		}
		slices.Sort(l)
		runs = append(runs, l)
	}
	slices.SortFunc(runs, func(a, b latencies) int { return int(pct(a, 50) - pct(b, 50)) })
	return runs[1]
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
