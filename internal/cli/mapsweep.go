package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/towerdefence/platformctl/internal/gamemap"
)

func defaultWorkers() int { return runtime.GOMAXPROCS(0) }

// sweepSpec is one `map analyze --seeds` run.
type sweepSpec struct {
	size     gamemap.Size
	from, to uint64
	workers  int
	output   string
	chunk    uint64 // seeds per work item; 0 means sweepChunk
}

// mapRow is what a sweep keeps of one map.
type mapRow struct {
	seed                 uint64
	valid                bool
	path, build, overlap int
	lanes                int
	small, large         [gamemap.MaxLanes]int // -1: no route
	smallImb, largeImb   int                   // -1: some lane has no route
	problems             string                // codes joined by ';'
}

func rowOf(seed uint64, a gamemap.MapLayoutAnalysis) mapRow {
	r := mapRow{seed: seed, valid: a.Valid, path: a.PathCellCount, build: a.BuildCellCount, overlap: a.OverlapCellCount,
		lanes: min(len(a.Routes), gamemap.MaxLanes)}
	r.smallImb, r.largeImb = imbalance(a.Routes, func(x gamemap.RouteLength) *int { return x.SmallUnitLength }),
		imbalance(a.Routes, func(x gamemap.RouteLength) *int { return x.LargeUnitLength })
	for i := range r.lanes {
		r.small[i], r.large[i] = -1, -1
		if n := a.Routes[i].SmallUnitLength; n != nil {
			r.small[i] = *n
		}
		if n := a.Routes[i].LargeUnitLength; n != nil {
			r.large[i] = *n
		}
	}
	if !a.Valid {
		codes := make([]string, len(a.Problems))
		for i, p := range a.Problems {
			codes[i] = p.Code
		}
		r.problems = strings.Join(codes, ";")
	}
	return r
}

// imbalance is the longest minus the shortest route, -1 if one is missing.
func imbalance(rs []gamemap.RouteLength, get func(gamemap.RouteLength) *int) int {
	lo, hi := math.MaxInt, -1
	for _, r := range rs {
		n := get(r)
		if n == nil {
			return -1
		}
		lo, hi = min(lo, *n), max(hi, *n)
	}
	if hi < 0 {
		return -1
	}
	return hi - lo
}

// sweepChunk is how many seeds one worker takes at a time.
const sweepChunk = 1024

// sweep analyses every seed of the range on spec.workers goroutines and
// writes the rows in seed order: chunks are handed out in order, finished
// chunks wait until every earlier one is written, and at most a few chunks
// per worker are in flight, so memory stays flat for any range.
func sweep(ctx context.Context, e *env, spec sweepSpec) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	chunk := spec.chunk
	if chunk == 0 {
		chunk = sweepChunk
	}
	chunks := (spec.to-spec.from)/chunk + 1
	total := spec.to - spec.from + 1 // 0 when the range is all of uint64
	type result struct {
		idx  uint64
		rows []mapRow
	}
	jobs := make(chan uint64)
	results := make(chan result, spec.workers)
	slots := make(chan struct{}, 2*spec.workers)
	var wg sync.WaitGroup
	for range spec.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for idx := range jobs {
				first := spec.from + idx*chunk
				n := chunk
				if spec.to-first < n-1 {
					n = spec.to - first + 1
				}
				rows := make([]mapRow, n)
				for i := range rows {
					seed := first + uint64(i)
					_, a := gamemap.GenerateAnalyzed(spec.size, seed)
					rows[i] = rowOf(seed, a)
				}
				select {
				case results <- result{idx, rows}:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	go func() {
		defer close(jobs)
		for idx := uint64(0); idx < chunks; idx++ {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			select {
			case jobs <- idx:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(results) }()

	spec0, _ := spec.size.Spec()
	out := newSweepWriter(e.stdout, spec, spec0)
	progress := newProgress(e.stderr, total)
	pending := map[uint64][]mapRow{}
	next := uint64(0)
	var writeErr error
	for res := range results {
		pending[res.idx] = res.rows
		for rows, ok := pending[next]; ok && writeErr == nil; rows, ok = pending[next] {
			delete(pending, next)
			for i := range rows {
				out.add(&rows[i])
			}
			progress.add(len(rows))
			next++
			<-slots
			if writeErr = out.err(); writeErr != nil {
				cancel() // stdout is gone (a closed pipe, say): stop analysing
			}
		}
	}
	progress.done()
	if writeErr != nil {
		return withExit(ExitFailure, fmt.Errorf("write results: %w", writeErr))
	}
	if err := ctx.Err(); err != nil || next != chunks {
		if err == nil {
			err = context.Canceled
		}
		return withExit(ExitFailure, fmt.Errorf("analysis stopped after %d of %d chunks: %w", next, chunks, err))
	}
	return out.finish()
}

// sweepWriter streams rows as JSON or CSV and keeps the summary.
type sweepWriter struct {
	w       *bufio.Writer
	spec    sweepSpec
	grid    gamemap.SizeSpec
	stats   []metric
	count   int
	invalid int
	buf     []byte
	csv     *csvWriter
}

// metric is an exact distribution of small non-negative integers.
type metric struct {
	name     string
	hist     []int64
	n, sum   int64
	min, max int
}

func (m *metric) add(v int) {
	if v < 0 {
		return
	}
	if v >= len(m.hist) {
		m.hist = append(m.hist, make([]int64, v+1-len(m.hist))...)
	}
	if m.n == 0 || v < m.min {
		m.min = v
	}
	m.max = max(m.max, v)
	m.hist[v]++
	m.n++
	m.sum += int64(v)
}

// median is the lower median.
func (m *metric) median() int {
	var seen int64
	for v, c := range m.hist {
		seen += c
		if seen >= (m.n+1)/2 {
			return v
		}
	}
	return 0
}

func newSweepWriter(w io.Writer, spec sweepSpec, grid gamemap.SizeSpec) *sweepWriter {
	s := &sweepWriter{w: bufio.NewWriterSize(w, 64<<10), spec: spec, grid: grid}
	names := []string{"path cells", "build cells", "overlap cells"}
	for i := range grid.Lanes {
		names = append(names, fmt.Sprintf("small route, lane %d", i))
	}
	for i := range grid.Lanes {
		names = append(names, fmt.Sprintf("large route, lane %d", i))
	}
	names = append(names, "small route imbalance", "large route imbalance")
	for _, n := range names {
		s.stats = append(s.stats, metric{name: n, hist: make([]int64, 0, 128)})
	}
	switch spec.output {
	case outputJSON:
		fmt.Fprintf(s.w, "{\n  \"size\": %q,\n  \"version\": %d,\n  \"from\": \"%d\",\n  \"to\": \"%d\",\n  \"maps\": [", spec.size, gamemap.Version, spec.from, spec.to)
	case outputCSV:
		s.csv = newCSVWriter(s.w, grid.Lanes)
	}
	return s
}

// err returns the first error writing the output, if any.
func (s *sweepWriter) err() error {
	_, err := s.w.Write(nil)
	return err
}

func (s *sweepWriter) add(r *mapRow) {
	if !r.valid {
		s.invalid++
	}
	vals := make([]int, 0, 16)
	vals = append(vals, r.path, r.build, r.overlap)
	for i := range s.grid.Lanes {
		vals = append(vals, laneValue(r, r.small[:], i))
	}
	for i := range s.grid.Lanes {
		vals = append(vals, laneValue(r, r.large[:], i))
	}
	vals = append(vals, r.smallImb, r.largeImb)
	for i, v := range vals {
		s.stats[i].add(v)
	}
	switch s.spec.output {
	case outputJSON:
		b := s.buf[:0]
		if s.count > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n    {\"seed\":\""...)
		b = strconv.AppendUint(b, r.seed, 10)
		b = append(b, "\",\"valid\":"...)
		b = strconv.AppendBool(b, r.valid)
		b = append(b, ",\"pathCells\":"...)
		b = strconv.AppendInt(b, int64(r.path), 10)
		b = append(b, ",\"buildCells\":"...)
		b = strconv.AppendInt(b, int64(r.build), 10)
		b = append(b, ",\"overlapCells\":"...)
		b = strconv.AppendInt(b, int64(r.overlap), 10)
		b = append(b, ",\"smallRoutes\":"...)
		b = appendLengths(b, r.small[:r.lanes])
		b = append(b, ",\"largeRoutes\":"...)
		b = appendLengths(b, r.large[:r.lanes])
		b = append(b, ",\"smallImbalance\":"...)
		b = appendOpt(b, r.smallImb)
		b = append(b, ",\"largeImbalance\":"...)
		b = appendOpt(b, r.largeImb)
		b = append(b, ",\"problems\":["...)
		if r.problems != "" {
			for i, c := range strings.Split(r.problems, ";") {
				if i > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendQuote(b, c)
			}
		}
		b = append(b, "]}"...)
		s.w.Write(b) //nolint:errcheck // bufio keeps the first error for Flush
		s.buf = b
	case outputCSV:
		s.csv.row(*r)
	}
	s.count++
}

func laneValue(r *mapRow, vals []int, i int) int {
	if i >= r.lanes {
		return -1
	}
	return vals[i]
}

func appendLengths(b []byte, ls []int) []byte {
	b = append(b, '[')
	for i, n := range ls {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendOpt(b, n)
	}
	return append(b, ']')
}

func appendOpt(b []byte, n int) []byte {
	if n < 0 {
		return append(b, "null"...)
	}
	return strconv.AppendInt(b, int64(n), 10)
}

func (s *sweepWriter) finish() error {
	switch s.spec.output {
	case outputJSON:
		fmt.Fprintf(s.w, "\n  ],\n  \"summary\": {\"maps\": %d, \"invalid\": %d, \"metrics\": [", s.count, s.invalid)
		for i := range s.stats {
			m := &s.stats[i]
			if i > 0 {
				s.w.WriteString(",")
			}
			fmt.Fprintf(s.w, "\n    {\"metric\": %q, \"min\": %d, \"p50\": %d, \"mean\": %s, \"max\": %d}", m.name, m.min, m.median(), s.mean(m), m.max)
		}
		s.w.WriteString("\n  ]}\n}\n")
	case outputCSV:
		if err := s.csv.flush(); err != nil {
			return err
		}
	default:
		fmt.Fprintf(s.w, "%s maps, seeds %d-%d, version %d: %d analysed, %d invalid\n", s.spec.size, s.spec.from, s.spec.to, gamemap.Version, s.count, s.invalid)
		if err := s.w.Flush(); err != nil {
			return err
		}
		rows := make([][]string, 0, len(s.stats))
		for i := range s.stats {
			m := &s.stats[i]
			if m.n == 0 {
				rows = append(rows, []string{m.name, "-", "-", "-", "-"})
				continue
			}
			rows = append(rows, []string{m.name, strconv.Itoa(m.min), strconv.Itoa(m.median()), s.mean(m), strconv.Itoa(m.max)})
		}
		if err := writeTable(s.w, []string{"METRIC", "MIN", "P50", "MEAN", "MAX"}, rows); err != nil {
			return err
		}
	}
	if err := s.w.Flush(); err != nil {
		return err
	}
	if s.invalid > 0 {
		return withExit(ExitFailure, fmt.Errorf("%d of %d maps are invalid", s.invalid, s.count))
	}
	return nil
}

// mean formats the mean with one decimal, computed in integers.
func (s *sweepWriter) mean(m *metric) string {
	if m.n == 0 {
		return "0.0"
	}
	tenths := (m.sum*10*2 + m.n) / (2 * m.n) // rounded half up
	return fmt.Sprintf("%d.%d", tenths/10, tenths%10)
}

// csvWriter writes one CSV row per map; every field is a number, a word
// or a list of codes, so nothing needs quoting.
type csvWriter struct {
	w     *bufio.Writer
	lanes int
	buf   []byte
}

func newCSVWriter(w io.Writer, lanes int) *csvWriter {
	c := &csvWriter{w: bufio.NewWriter(w), lanes: lanes}
	h := []string{"seed", "valid", "pathCells", "buildCells", "overlapCells"}
	for i := range lanes {
		h = append(h, fmt.Sprintf("smallRoute%d", i))
	}
	for i := range lanes {
		h = append(h, fmt.Sprintf("largeRoute%d", i))
	}
	h = append(h, "smallImbalance", "largeImbalance", "problems")
	c.w.WriteString(strings.Join(h, ",") + "\n")
	return c
}

func (c *csvWriter) row(r mapRow) {
	b := c.buf[:0]
	b = strconv.AppendUint(b, r.seed, 10)
	b = append(b, ',')
	b = strconv.AppendBool(b, r.valid)
	for _, v := range []int{r.path, r.build, r.overlap} {
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(v), 10)
	}
	for _, vals := range [][]int{r.small[:], r.large[:]} {
		for i := range c.lanes {
			b = append(b, ',')
			if i < r.lanes && vals[i] >= 0 {
				b = strconv.AppendInt(b, int64(vals[i]), 10)
			}
		}
	}
	for _, v := range []int{r.smallImb, r.largeImb} {
		b = append(b, ',')
		if v >= 0 {
			b = strconv.AppendInt(b, int64(v), 10)
		}
	}
	b = append(b, ',')
	b = append(b, r.problems...)
	b = append(b, '\n')
	c.w.Write(b) //nolint:errcheck // bufio keeps the first error for Flush
	c.buf = b
}

func (c *csvWriter) flush() error { return c.w.Flush() }

// progress draws a bar on stderr when it is a terminal, at most ten times
// a second.
type progress struct {
	w           io.Writer
	on          bool
	total, seen uint64 // total is 0 for the whole uint64 range
	last, start time.Time
}

func newProgress(w io.Writer, total uint64) *progress {
	return &progress{w: w, on: isTerminal(w), total: total, start: time.Now()}
}

func (p *progress) add(n int) {
	p.seen += uint64(n)
	if !p.on || time.Since(p.last) < 100*time.Millisecond {
		return
	}
	p.last = time.Now()
	p.draw()
}

func (p *progress) draw() {
	const width = 30
	frac := 1.0
	if p.total != 0 {
		frac = float64(p.seen) / float64(p.total)
	}
	filled := int(frac * width)
	fmt.Fprintf(p.w, "\r[%s%s] %3.0f%% %d seeds %s", strings.Repeat("=", filled), strings.Repeat(" ", width-filled),
		frac*100, p.seen, time.Since(p.start).Round(100*time.Millisecond))
}

func (p *progress) done() {
	if p.on {
		p.draw()
		fmt.Fprintln(p.w)
	}
}
