package gamemap

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
)

// SweepOptions tune Sweep. Zero values pick defaults.
type SweepOptions struct {
	Workers int    // goroutines analysing; 0 means 1
	Chunk   uint64 // seeds per work item; 0 means 1024
}

// SweepSummary describes every map of a sweep: how many, how many
// invalid, and the exact distribution of each metric (see SweepMetrics).
type SweepSummary struct {
	Maps, Invalid uint64
	Metrics       []Distribution
}

// Distribution is the exact distribution of a metric of small
// non-negative integers. Values below zero (no route) are not counted.
type Distribution struct {
	Name     string
	N, Sum   int64
	Min, Max int
	hist     []int64
}

// Add counts one value; negative values are skipped.
func (d *Distribution) Add(v int) {
	if v < 0 {
		return
	}
	if v >= len(d.hist) {
		d.hist = append(d.hist, make([]int64, v+1-len(d.hist))...)
	}
	if d.N == 0 || v < d.Min {
		d.Min = v
	}
	d.Max = max(d.Max, v)
	d.hist[v]++
	d.N++
	d.Sum += int64(v)
}

// Median is the lower median, 0 when nothing was counted.
func (d *Distribution) Median() int {
	var seen int64
	for v, c := range d.hist {
		seen += c
		if seen >= (d.N+1)/2 {
			return v
		}
	}
	return 0
}

// MeanTenths is the mean in tenths, rounded half up, computed in integers
// so every platform prints the same.
func (d *Distribution) MeanTenths() int64 {
	if d.N == 0 {
		return 0
	}
	return (d.Sum*10*2 + d.N) / (2 * d.N)
}

// Imbalance is the longest route minus the shortest, for large units or
// small ones; -1 when some lane has no route or there are no lanes.
func (a MapLayoutAnalysis) Imbalance(large bool) int {
	lo, hi := math.MaxInt, -1
	for _, r := range a.Routes {
		n := r.SmallUnitLength
		if large {
			n = r.LargeUnitLength
		}
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

// sweepMetrics returns the empty distributions of a sweep over maps with
// the given number of lanes, in the order sweepValues fills them.
func sweepMetrics(lanes int) []Distribution {
	names := []string{"path cells", "build cells", "overlap cells"}
	for i := range lanes {
		names = append(names, fmt.Sprintf("small route, lane %d", i))
	}
	for i := range lanes {
		names = append(names, fmt.Sprintf("large route, lane %d", i))
	}
	names = append(names, "small route imbalance", "large route imbalance")
	ds := make([]Distribution, len(names))
	for i, n := range names {
		ds[i] = Distribution{Name: n, hist: make([]int64, 0, 128)}
	}
	return ds
}

func (s *SweepSummary) add(a MapLayoutAnalysis, lanes int) {
	s.Maps++
	if !a.Valid {
		s.Invalid++
	}
	vals := append(make([]int, 0, 3+2*lanes+2), a.PathCellCount, a.BuildCellCount, a.OverlapCellCount)
	for _, large := range []bool{false, true} {
		for i := range lanes {
			v := -1
			if i < len(a.Routes) {
				n := a.Routes[i].SmallUnitLength
				if large {
					n = a.Routes[i].LargeUnitLength
				}
				if n != nil {
					v = *n
				}
			}
			vals = append(vals, v)
		}
	}
	vals = append(vals, a.Imbalance(false), a.Imbalance(true))
	for i, v := range vals {
		s.Metrics[i].Add(v)
	}
}

// ErrSweepStopped wraps the reason a sweep ended before its last seed.
var ErrSweepStopped = errors.New("sweep stopped")

// Sweep generates and analyses every seed from first to last of a size on
// opt.Workers goroutines and calls each, on the caller's goroutine, for
// every map in seed order. Chunks are handed out in order, finished chunks
// wait until every earlier one is delivered, and at most two chunks per
// worker are in flight, so memory stays flat for any range. An error from
// each, or ctx ending, stops the sweep and is returned (wrapped in
// ErrSweepStopped for ctx); the summary covers the maps delivered.
func Sweep(ctx context.Context, size Size, first, last uint64, opt SweepOptions,
	each func(seed uint64, a MapLayoutAnalysis) error) (SweepSummary, error) {
	spec, ok := size.Spec()
	if !ok {
		return SweepSummary{}, fmt.Errorf("sweep: unknown size %q", size)
	}
	if first > last {
		return SweepSummary{}, fmt.Errorf("sweep: first seed %d is after last %d", first, last)
	}
	workers, chunk := max(opt.Workers, 1), opt.Chunk
	if chunk == 0 {
		chunk = 1024
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	chunks := (last-first)/chunk + 1
	results, slots := sweepWorkers(ctx, size, first, last, chunk, chunks, workers)

	sum := SweepSummary{Metrics: sweepMetrics(spec.Lanes)}
	pending := map[uint64][]MapLayoutAnalysis{}
	next := uint64(0)
	var eachErr error
	for res := range results {
		pending[res.idx] = res.maps
		for maps, ok := pending[next]; ok && eachErr == nil; maps, ok = pending[next] {
			delete(pending, next)
			seed := first + next*chunk
			for i := range maps {
				if eachErr = each(seed+uint64(i), maps[i]); eachErr != nil {
					cancel()
					break
				}
				sum.add(maps[i], spec.Lanes)
			}
			next++
			<-slots
		}
	}
	switch {
	case eachErr != nil:
		return sum, eachErr
	case next != chunks:
		err := ctx.Err()
		if err == nil {
			err = context.Canceled
		}
		return sum, fmt.Errorf("%w after %d of %d seeds: %w", ErrSweepStopped, sum.Maps, last-first+1, err)
	}
	return sum, nil
}

type sweepChunk struct {
	idx  uint64
	maps []MapLayoutAnalysis
}

// sweepWorkers starts the feeder and the workers; results closes when all
// are done. The caller receives from slots once per chunk it consumes.
func sweepWorkers(ctx context.Context, size Size, first, last, chunk, chunks uint64, workers int) (<-chan sweepChunk, chan struct{}) {
	jobs := make(chan uint64)
	results := make(chan sweepChunk, workers)
	slots := make(chan struct{}, 2*workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for idx := range jobs {
				from := first + idx*chunk
				n := chunk
				if last-from < chunk-1 { // the last chunk; written so the whole uint64 range cannot wrap
					n = last - from + 1
				}
				maps := make([]MapLayoutAnalysis, n)
				for i := range maps {
					_, maps[i] = GenerateAnalyzed(size, from+uint64(i))
				}
				select {
				case results <- sweepChunk{idx, maps}:
				case <-ctx.Done():
					return
				}
			}
		})
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
	return results, slots
}
