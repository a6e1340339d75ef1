package main

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// vuser is one virtual user: an account, a cookie jar and one connection.
type vuser struct {
	data  templateData
	conn  *conn
	jar   jar
	etags map[*Step]string
	buf   bytes.Buffer
	bbuf  bytes.Buffer
}

// runner drives the plan's scenarios against one server.
type runner struct {
	plan        *Plan
	base        *url.URL
	runID       string
	sink        *sink
	mailTimeout time.Duration
	reqTimeout  time.Duration
	cpu         *cpuMeter
	metricsURL  string

	mu     sync.Mutex
	vusers []*vuser
}

// user returns virtual user i, creating it (and running the plan's setup
// on it) the first time.
func (r *runner) users(ctx context.Context, n int) ([]*vuser, error) {
	r.mu.Lock()
	start := len(r.vusers)
	for i := start; i < n; i++ {
		v := &vuser{conn: newConn(r.base, r.reqTimeout), etags: map[*Step]string{}}
		v.data = templateData{Base: r.base.String(), Run: r.runID, User: i, Vars: map[string]string{}}
		for _, f := range []struct {
			dst *string
			src string
		}{{&v.data.Email, r.plan.User.Email}, {&v.data.Name, r.plan.User.Name},
			{&v.data.Nickname, r.plan.User.Nickname}, {&v.data.Password, r.plan.User.Password}} {
			t, err := parseTemplate(f.src)
			if err != nil {
				r.mu.Unlock()
				return nil, fmt.Errorf("plan user: %w", err)
			}
			b, err := t.render(&v.data, &v.buf)
			if err != nil {
				r.mu.Unlock()
				return nil, fmt.Errorf("plan user: %w", err)
			}
			*f.dst = string(b)
		}
		r.vusers = append(r.vusers, v)
	}
	users := r.vusers[:n]
	fresh := r.vusers[min(start, n):n]
	r.mu.Unlock()
	// Setup in parallel, a few at a time: sign-ups hash passwords, and
	// the server's CPUs are the thing under test.
	if err := parallel(ctx, fresh, 4, func(v *vuser) error { return r.runSteps(v, r.plan.Setup, nil) }); err != nil {
		return nil, fmt.Errorf("setup: %w", err)
	}
	return users, nil
}

func parallel(ctx context.Context, vs []*vuser, width int, fn func(*vuser) error) error {
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
		sem   = make(chan struct{}, width)
	)
	for _, v := range vs {
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := fn(v); err != nil {
				once.Do(func() { first = fmt.Errorf("user %d: %w", v.data.User, err) })
			}
		}()
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}

// runSteps runs steps once and fails on the first unexpected answer
// (setup); rec, when set, records latencies instead of failing.
func (r *runner) runSteps(v *vuser, steps []Step, rec *recorder) error {
	clear(v.data.Vars)
	for i := range steps {
		st := &steps[i]
		start := time.Now()
		failure, err := r.step(v, st)
		if err != nil {
			return err
		}
		if rec != nil {
			rec.step(i, time.Since(start), failure, !st.AwaitMail)
			if failure != "" {
				return nil // the rest of the iteration depends on this step
			}
			continue
		}
		if failure != "" {
			return fmt.Errorf("%s: %s", st.name, failure)
		}
	}
	return nil
}

// step runs one step and returns a failure description ("" for success).
// err is reserved for problems of the plan itself.
func (r *runner) step(v *vuser, st *Step) (failure string, err error) {
	if st.AwaitMail {
		if r.sink == nil {
			return "", fmt.Errorf("step %q waits for mail but loadgen runs no SMTP sink (-smtp)", st.name)
		}
		// Other mail to the user (a verification message, say) is
		// skipped: the flow waits for the message its captures match.
		deadline := time.Now().Add(r.mailTimeout)
		for {
			text, werr := r.sink.await(v.data.Email, time.Until(deadline))
			if werr != nil {
				return werr.Error(), nil
			}
			if failure := r.capture(v, st, []byte(text)); failure == "" {
				return "", nil
			}
		}
	}
	req := request{Method: st.Method, Cookie: v.jar.header}
	p, err := st.path.render(&v.data, &v.buf)
	if err != nil {
		return "", err
	}
	req.Path = string(p)
	if st.body != nil {
		b, err := st.body.render(&v.data, &v.bbuf)
		if err != nil {
			return "", err
		}
		req.Body = b
	}
	if len(st.header) > 0 || st.ETag {
		req.Header = make(map[string]string, len(st.header)+1)
		for k, t := range st.header {
			b, err := t.render(&v.data, &v.buf)
			if err != nil {
				return "", err
			}
			req.Header[k] = string(b)
		}
		if tag := v.etags[st]; st.ETag && tag != "" {
			req.Header["If-None-Match"] = tag
		}
	}
	res, rerr := v.conn.do(&req)
	if rerr != nil {
		return describe(nil, rerr), nil
	}
	v.jar.update(res.Header)
	if !st.expected[res.Status] {
		return describe(res, nil), nil
	}
	if st.ETag {
		if tag := res.Header.Get("ETag"); tag != "" {
			v.etags[st] = tag
		}
	}
	return r.capture(v, st, res.Body), nil
}

func (r *runner) capture(v *vuser, st *Step, body []byte) string {
	for name, re := range st.capture {
		m := re.FindSubmatch(body)
		if m == nil {
			return "capture " + name + ": no match"
		}
		v.data.Vars[name] = string(m[1])
	}
	return ""
}

// recorder collects one worker's latencies: per step and per iteration.
type recorder struct {
	steps  [][]time.Duration
	iters  []time.Duration
	errors map[string]int
	count  int64
	failed int64
	// onStep, when set, is told about every step (soak intervals).
	onStep func(d time.Duration, failed, request bool)
}

func newRecorder(steps int) *recorder {
	return &recorder{steps: make([][]time.Duration, steps), errors: map[string]int{}}
}

// step records step i; request is false for a mail wait, which the
// request counts leave out.
func (rec *recorder) step(i int, d time.Duration, failure string, request bool) {
	if request {
		rec.count++
	}
	if failure != "" {
		rec.errors[failure]++
		rec.failed++
	} else {
		rec.steps[i] = append(rec.steps[i], d)
	}
	if rec.onStep != nil {
		rec.onStep(d, failure != "", request)
	}
}

// scenarioResult is the measured outcome of one scenario.
type scenarioResult struct {
	Name        string         `json:"name"`
	Connections int            `json:"connections"`
	DurationSec float64        `json:"durationSeconds"`
	Requests    int64          `json:"requests"`
	Iterations  int64          `json:"iterations"`
	RPS         float64        `json:"requestsPerSecond"`
	IterPS      float64        `json:"iterationsPerSecond"`
	Latency     latency        `json:"latency"`
	Steps       []stepResult   `json:"steps,omitempty"`
	Errors      int64          `json:"errors"`
	ErrorKinds  map[string]int `json:"errorKinds"`
	RSS         *rssReport     `json:"rssMiB,omitempty"`
	CPU         *cpuReport     `json:"cpu,omitempty"`
	Targets     Targets        `json:"targets"`
}

type stepResult struct {
	Name    string  `json:"name"`
	Count   int     `json:"count"`
	Latency latency `json:"latency"`
}

// latency holds milliseconds.
type latency struct {
	P50 float64 `json:"p50Ms"`
	P90 float64 `json:"p90Ms"`
	P99 float64 `json:"p99Ms"`
	Max float64 `json:"maxMs"`
}

func summarize(ds []time.Duration) latency {
	if len(ds) == 0 {
		return latency{}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	q := func(p float64) float64 {
		i := int(p*float64(len(ds))+0.5) - 1
		i = max(0, min(i, len(ds)-1))
		return ms(ds[i])
	}
	return latency{P50: q(0.50), P90: q(0.90), P99: q(0.99), Max: ms(ds[len(ds)-1])}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// runScenario measures one scenario: setup, warm-up, then the measured
// phase for the duration (or until -n iterations), sampling the server's
// RSS throughout.
func (r *runner) runScenario(ctx context.Context, sc *Scenario, conns int, dur, warmup time.Duration, iterations int64, rss *rssSampler) (*scenarioResult, error) {
	if sc.Connections > 0 {
		conns = sc.Connections
	}
	if sc.Duration > 0 {
		dur = time.Duration(sc.Duration)
	}
	users, err := r.users(ctx, conns)
	if err != nil {
		return nil, err
	}
	for _, v := range users {
		v.data.Iter = 0
	}
	if len(sc.Setup) > 0 {
		if err := parallel(ctx, users, 4, func(v *vuser) error { return r.runSteps(v, sc.Setup, nil) }); err != nil {
			return nil, fmt.Errorf("%s setup: %w", sc.Name, err)
		}
	}
	rss.mark("before")
	if warmup > 0 {
		r.drive(ctx, sc, users, warmup, 0, nil)
	}
	recs := make([]*recorder, len(users))
	for i := range recs {
		recs[i] = newRecorder(len(sc.Steps))
	}
	rss.resetPeak()
	r.cpu.begin(ctx)
	start := time.Now()
	r.drive(ctx, sc, users, dur, iterations, recs)
	elapsed := time.Since(start)
	r.cpu.finish(ctx)
	rss.mark("peak-end")
	// Let the server settle (idle connections, finished deliveries)
	// before the "after" sample.
	select {
	case <-time.After(time.Second):
	case <-ctx.Done():
	}
	rss.mark("after")

	res := &scenarioResult{Name: sc.Name, Connections: len(users), DurationSec: elapsed.Seconds(),
		ErrorKinds: map[string]int{}, Targets: sc.Targets}
	var iters []time.Duration
	stepDs := make([][]time.Duration, len(sc.Steps))
	for _, rec := range recs {
		res.Requests += rec.count
		iters = append(iters, rec.iters...)
		for i := range rec.steps {
			stepDs[i] = append(stepDs[i], rec.steps[i]...)
		}
		for k, n := range rec.errors {
			res.ErrorKinds[k] += n
		}
		res.Errors += rec.failed
	}
	res.Iterations = int64(len(iters))
	res.RPS = float64(res.Requests) / elapsed.Seconds()
	res.IterPS = float64(res.Iterations) / elapsed.Seconds()
	res.Latency = summarize(iters)
	if len(sc.Steps) > 1 {
		for i := range sc.Steps {
			res.Steps = append(res.Steps, stepResult{Name: sc.Steps[i].name, Count: len(stepDs[i]), Latency: summarize(stepDs[i])})
		}
	}
	res.RSS = rss.report()
	res.CPU = r.cpu.report(res.Requests)
	return res, nil
}

// drive runs iterations of sc on every user until dur passes (or the
// shared iteration budget is spent). With recs nil nothing is recorded.
func (r *runner) drive(ctx context.Context, sc *Scenario, users []*vuser, dur time.Duration, budget int64, recs []*recorder) {
	ctx, cancel := context.WithTimeout(ctx, dur)
	defer cancel()
	var left atomic.Int64
	left.Store(budget)
	var wg sync.WaitGroup
	for i, v := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Warm-up iterations get a throwaway recorder so that they
			// carry on after a failure exactly like measured ones.
			rec := newRecorder(len(sc.Steps))
			if recs != nil {
				rec = recs[i]
			}
			for ctx.Err() == nil {
				if budget > 0 && left.Add(-1) < 0 {
					return
				}
				start := time.Now()
				before := rec.failed
				if err := r.runSteps(v, sc.Steps, rec); err != nil {
					// A plan error (bad template) would repeat forever.
					rec.errors["plan: "+err.Error()]++
					rec.failed++
					return
				}
				v.data.Iter++
				if rec.failed == before && ctx.Err() == nil {
					rec.iters = append(rec.iters, time.Since(start))
				}
			}
		}()
	}
	wg.Wait()
}
