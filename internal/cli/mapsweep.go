package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
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
	r.smallImb, r.largeImb = a.Imbalance(false), a.Imbalance(true)
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

// sweep analyses every seed of the range with gamemap.Sweep and writes
// the rows in seed order as they arrive, then the summary.
func sweep(ctx context.Context, e *env, spec sweepSpec) error {
	grid, _ := spec.size.Spec()
	out := newSweepWriter(e.stdout, spec, grid)
	progress := newProgress(e.stderr, spec.to-spec.from+1) // 0 when the range is all of uint64
	sum, err := gamemap.Sweep(ctx, spec.size, spec.from, spec.to, gamemap.SweepOptions{Workers: spec.workers, Chunk: spec.chunk},
		func(seed uint64, a gamemap.MapLayoutAnalysis) error {
			r := rowOf(seed, a)
			out.add(&r)
			progress.add(1)
			return out.err() // stdout is gone (a closed pipe, say): stop analysing
		})
	progress.done()
	if errors.Is(err, gamemap.ErrSweepStopped) {
		return withExit(ExitFailure, fmt.Errorf("analysis %w", err))
	}
	if err != nil {
		return withExit(ExitFailure, fmt.Errorf("write results: %w", err))
	}
	return out.finish(sum)
}

// sweepWriter streams rows as JSON or CSV and keeps the summary.
type sweepWriter struct {
	w       *bufio.Writer
	spec    sweepSpec
	grid    gamemap.SizeSpec
	count   int
	invalid int
	buf     []byte
	csv     *csvWriter
}

func newSweepWriter(w io.Writer, spec sweepSpec, grid gamemap.SizeSpec) *sweepWriter {
	s := &sweepWriter{w: bufio.NewWriterSize(w, 64<<10), spec: spec, grid: grid}
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

func (s *sweepWriter) finish(sum gamemap.SweepSummary) error {
	switch s.spec.output {
	case outputJSON:
		fmt.Fprintf(s.w, "\n  ],\n  \"summary\": {\"maps\": %d, \"invalid\": %d, \"metrics\": [", s.count, s.invalid)
		for i := range sum.Metrics {
			m := &sum.Metrics[i]
			if i > 0 {
				s.w.WriteString(",")
			}
			fmt.Fprintf(s.w, "\n    {\"metric\": %q, \"min\": %d, \"p50\": %d, \"mean\": %s, \"max\": %d}", m.Name, m.Min, m.Median(), mean(m), m.Max)
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
		rows := make([][]string, 0, len(sum.Metrics))
		for i := range sum.Metrics {
			m := &sum.Metrics[i]
			if m.N == 0 {
				rows = append(rows, []string{m.Name, "-", "-", "-", "-"})
				continue
			}
			rows = append(rows, []string{m.Name, strconv.Itoa(m.Min), strconv.Itoa(m.Median()), mean(m), strconv.Itoa(m.Max)})
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

// mean formats the mean with one decimal.
func mean(m *gamemap.Distribution) string {
	t := m.MeanTenths()
	return fmt.Sprintf("%d.%d", t/10, t%10)
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
