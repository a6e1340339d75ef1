package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// soakResult is a mixed load held for a long time: per-interval figures,
// per-scenario totals, and whether memory or goroutines grew after
// warm-up.
type soakResult struct {
	DurationSec float64           `json:"durationSeconds"`
	WarmupSec   float64           `json:"warmupSeconds"`
	Connections map[string]int    `json:"connections"`
	Intervals   []soakInterval    `json:"intervals"`
	Scenarios   []*scenarioResult `json:"scenarios"`
	Requests    int64             `json:"requests"`
	Errors      int64             `json:"errors"`
	// Growth compares, for each series (RSS, and with -metrics the live
	// Go heap and the goroutines), the lower quartile of the second half
	// of the samples after warm-up with that of the first. Memory breathes
	// with the garbage collector and spikes while passwords are hashed
	// (19 MiB each); a leak raises the floor.
	Growth  []growth `json:"growth"`
	Pass    bool     `json:"pass"`
	Verdict string   `json:"verdict"`
}

type soakInterval struct {
	AtSec    float64 `json:"atSeconds"`
	Requests int64   `json:"requests"`
	RPS      float64 `json:"requestsPerSecond"`
	Errors   int64   `json:"errors"`
	P99Ms    float64 `json:"p99Ms"`
	RSSMiB   float64 `json:"rssMiB,omitempty"`
	Warmup   bool    `json:"warmup"`
	// From the server's metrics endpoint (-metrics), when given.
	// LiveHeapMiB is half the garbage collector's next heap goal (GOGC
	// 100): the heap that survived the last collection.
	LiveHeapMiB  float64 `json:"liveHeapMiB,omitempty"`
	HeapInuseMiB float64 `json:"heapInuseMiB,omitempty"`
	Goroutines   float64 `json:"goroutines,omitempty"`
	DBOpen       float64 `json:"dbOpenConnections,omitempty"`
	OutboxDepth  float64 `json:"outboxDepth,omitempty"`
}

// growth is one series judged for growth after warm-up.
type growth struct {
	Series      string  `json:"series"`
	FirstHalf   float64 `json:"firstHalfP25"`
	SecondHalf  float64 `json:"secondHalfP25"`
	Growth      float64 `json:"growth"`
	Allowed     float64 `json:"allowed"`
	SlopePerMin float64 `json:"slopePerMinute"`
	Grew        bool    `json:"grew"`
}

// intervalAcc collects the steps of all workers for the current interval.
type intervalAcc struct {
	mu     sync.Mutex
	ds     []time.Duration
	errors int64
}

func (a *intervalAcc) add(d time.Duration, failed, request bool) {
	a.mu.Lock()
	switch {
	case failed:
		a.errors++
	case request:
		a.ds = append(a.ds, d)
	}
	a.mu.Unlock()
}

func (a *intervalAcc) take() ([]time.Duration, int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ds, errs := a.ds, a.errors
	a.ds, a.errors = make([]time.Duration, 0, len(ds)), 0
	return ds, errs
}

// runSoak runs the plan's soak mix: every weighted scenario at once, the
// connections split by weight, for dur (warm-up included).
func (r *runner) runSoak(ctx context.Context, conns int, dur, warmup, every time.Duration, rss *rssSampler) (*soakResult, error) {
	if len(r.plan.Soak) == 0 {
		return nil, fmt.Errorf("the plan has no soak mix")
	}
	names := make([]string, 0, len(r.plan.Soak))
	total := 0
	for name, w := range r.plan.Soak {
		if w > 0 {
			names = append(names, name)
			total += w
		}
	}
	sort.Strings(names)
	split := map[string]int{}
	need := 0
	for _, name := range names {
		split[name] = max(1, conns*r.plan.Soak[name]/total)
		need += split[name]
	}
	users, err := r.users(ctx, need)
	if err != nil {
		return nil, err
	}
	acc := &intervalAcc{}
	res := &soakResult{DurationSec: dur.Seconds(), WarmupSec: warmup.Seconds(), Connections: split}

	type part struct {
		sc    *Scenario
		users []*vuser
		recs  []*recorder
	}
	var parts []part
	next := 0
	for _, name := range names {
		var sc *Scenario
		for i := range r.plan.Scenarios {
			if r.plan.Scenarios[i].Name == name {
				sc = &r.plan.Scenarios[i]
			}
		}
		p := part{sc: sc, users: users[next : next+split[name]]}
		next += split[name]
		if len(sc.Setup) > 0 {
			if err := parallel(ctx, p.users, 4, func(v *vuser) error { return r.runSteps(v, sc.Setup, nil) }); err != nil {
				return nil, fmt.Errorf("%s setup: %w", name, err)
			}
		}
		for range p.users {
			rec := newRecorder(len(sc.Steps))
			rec.onStep = acc.add
			p.recs = append(p.recs, rec)
		}
		parts = append(parts, p)
	}

	rss.mark("before")
	rss.resetPeak()
	start := time.Now()
	runCtx, cancel := context.WithTimeout(ctx, dur)
	defer cancel()
	var wg sync.WaitGroup
	for _, p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.drive(runCtx, p.sc, p.users, dur, 0, p.recs)
		}()
	}

	tick := time.NewTicker(every)
	defer tick.Stop()
	last := start
loop:
	for {
		select {
		case <-runCtx.Done():
			break loop
		case now := <-tick.C:
			ds, errs := acc.take()
			iv := soakInterval{AtSec: now.Sub(start).Seconds(), Requests: int64(len(ds)) + errs,
				RPS: float64(int64(len(ds))+errs) / now.Sub(last).Seconds(), Errors: errs,
				P99Ms: summarize(ds).P99, Warmup: now.Sub(start) <= warmup}
			last = now
			if v, ok := rss.point(); ok {
				iv.RSSMiB = v
			}
			if r.metricsURL != "" {
				if m, err := scrapeMetrics(ctx, r.metricsURL); err == nil {
					iv.HeapInuseMiB = m["go_memstats_heap_inuse_bytes"] / (1 << 20)
					iv.LiveHeapMiB = m["go_memstats_next_gc_bytes"] / 2 / (1 << 20)
					iv.Goroutines = m["go_goroutines"]
					iv.DBOpen = m["go_sql_open_connections"]
					iv.OutboxDepth = m["platform_mail_outbox_depth"]
				}
			}
			res.Intervals = append(res.Intervals, iv)
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	rss.mark("after")

	for _, p := range parts {
		sr := &scenarioResult{Name: p.sc.Name, Connections: len(p.users), DurationSec: elapsed.Seconds(), ErrorKinds: map[string]int{}}
		var iters []time.Duration
		for _, rec := range p.recs {
			sr.Requests += rec.count
			sr.Errors += rec.failed
			iters = append(iters, rec.iters...)
			for k, n := range rec.errors {
				sr.ErrorKinds[k] += n
			}
		}
		sr.Iterations = int64(len(iters))
		sr.RPS = float64(sr.Requests) / elapsed.Seconds()
		sr.IterPS = float64(sr.Iterations) / elapsed.Seconds()
		sr.Latency = summarize(iters)
		res.Scenarios = append(res.Scenarios, sr)
		res.Requests += sr.Requests
		res.Errors += sr.Errors
	}
	judgeSoak(res)
	return res, nil
}

// judgeSoak decides whether a series grew after warm-up and whether
// errors occurred.
func judgeSoak(res *soakResult) {
	series := []struct {
		name             string
		get              func(soakInterval) float64
		minAllowed, frac float64
	}{
		{"RSS MiB", func(iv soakInterval) float64 { return iv.RSSMiB }, 4, 0.05},
		{"live Go heap MiB", func(iv soakInterval) float64 { return iv.LiveHeapMiB }, 4, 0.10},
		{"goroutines", func(iv soakInterval) float64 { return iv.Goroutines }, 5, 0.10},
	}
	res.Pass = res.Errors == 0
	res.Growth = nil
	var parts []string
	for _, sr := range series {
		var xs, ys []float64
		for _, iv := range res.Intervals {
			if v := sr.get(iv); !iv.Warmup && v > 0 {
				xs, ys = append(xs, iv.AtSec), append(ys, v)
			}
		}
		if len(ys) == 0 {
			continue
		}
		if len(ys) < 6 {
			res.Pass = false
			parts = append(parts, fmt.Sprintf("%s: too few samples after warm-up to judge (run longer)", sr.name))
			continue
		}
		half := len(ys) / 2
		g := growth{Series: sr.name, FirstHalf: quantile(ys[:half], 0.25), SecondHalf: quantile(ys[half:], 0.25), SlopePerMin: slope(xs, ys) * 60}
		g.Growth = g.SecondHalf - g.FirstHalf
		g.Allowed = max(sr.minAllowed, sr.frac*g.FirstHalf)
		g.Grew = g.Growth > g.Allowed
		res.Pass = res.Pass && !g.Grew
		res.Growth = append(res.Growth, g)
		parts = append(parts, fmt.Sprintf("%s %.1f → %.1f (%+.1f, allowed %.1f; slope %+.2f/min)",
			sr.name, g.FirstHalf, g.SecondHalf, g.Growth, g.Allowed, g.SlopePerMin))
	}
	if len(res.Growth) == 0 && len(parts) == 0 {
		res.Pass = false
		parts = append(parts, "no RSS samples (pass -pid)")
	}
	res.Verdict = fmt.Sprintf("%s; %d errors in %d requests", strings.Join(parts, "; "), res.Errors, res.Requests)
}

func slope(xs, ys []float64) float64 {
	n := float64(len(xs))
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
		sxx += xs[i] * xs[i]
		sxy += xs[i] * ys[i]
	}
	den := n*sxx - sx*sx
	if den == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / den
}

func printSoak(w io.Writer, s *soakResult) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "t s\treq/s\terrors\tp99 ms\tRSS MiB\tlive heap MiB\theap in use MiB\tgoroutines\tdb conns\toutbox\t\t")
	for _, iv := range s.Intervals {
		phase := ""
		if iv.Warmup {
			phase = "warm-up"
		}
		fmt.Fprintf(tw, "%.0f\t%.0f\t%d\t%.2f\t%.1f\t%.1f\t%.1f\t%.0f\t%.0f\t%.0f\t%s\t\n", iv.AtSec, iv.RPS, iv.Errors, iv.P99Ms,
			iv.RSSMiB, iv.LiveHeapMiB, iv.HeapInuseMiB, iv.Goroutines, iv.DBOpen, iv.OutboxDepth, phase)
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\tconns\treqs\treq/s\tp50 ms\tp99 ms\tmax ms\terrors\t")
	for _, r := range s.Scenarios {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.0f\t%.2f\t%.2f\t%.2f\t%d\t\n", r.Name, r.Connections, r.Requests, r.RPS,
			r.Latency.P50, r.Latency.P99, r.Latency.Max, r.Errors)
	}
	tw.Flush()
	for _, r := range s.Scenarios {
		for kind, n := range r.ErrorKinds {
			fmt.Fprintf(w, "  %s: %d × %s\n", r.Name, n, kind)
		}
	}
	verdict := "PASS"
	if !s.Pass {
		verdict = "FAIL"
	}
	fmt.Fprintf(w, "soak %s: %s\n", verdict, s.Verdict)
}

// quantile returns the q-quantile of xs (nearest rank).
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[max(0, min(i, len(s)-1))]
}
