package gamemap

import (
	"context"
	"errors"
	"math"
	"reflect"
	"testing"
)

// TestSweepDeliversInSeedOrder runs the same range on one worker with big
// chunks and on several with tiny ones: the callback sees every seed once,
// in order, with the analysis GenerateAnalyzed gives, and the summaries
// agree with one computed by hand.
func TestSweepDeliversInSeedOrder(t *testing.T) {
	const first, last = 500, 619
	var want SweepSummary
	want.Metrics = sweepMetrics(3)
	for seed := uint64(first); seed <= last; seed++ {
		_, a := GenerateAnalyzed(Long, seed)
		want.add(a, 3)
	}
	for _, opt := range []SweepOptions{{Workers: 1, Chunk: 1000}, {Workers: 5, Chunk: 7}, {}} {
		next := uint64(first)
		sum, err := Sweep(t.Context(), Long, first, last, opt, func(seed uint64, a MapLayoutAnalysis) error {
			if seed != next {
				t.Fatalf("%+v: got seed %d, want %d", opt, seed, next)
			}
			if _, ref := GenerateAnalyzed(Long, seed); !analysesEqual(a, ref) {
				t.Fatalf("%+v: seed %d analysed differently", opt, seed)
			}
			next++
			return nil
		})
		if err != nil || next != last+1 {
			t.Fatalf("%+v: err %v after seed %d", opt, err, next)
		}
		if !reflect.DeepEqual(sum, want) {
			t.Errorf("%+v: summary %+v, want %+v", opt, sum, want)
		}
	}
	if want.Maps != last-first+1 || want.Metrics[0].N != int64(want.Maps) || want.Metrics[0].Min > want.Metrics[0].Median() {
		t.Errorf("hand summary looks wrong: %+v", want.Metrics[0])
	}
}

// TestSweepStops: an error from the callback and a cancelled context both
// end the sweep early, without leaking the workers (-race and the test's
// end would notice a send on a closed channel or a stuck goroutine).
func TestSweepStops(t *testing.T) {
	stop := errors.New("enough")
	seen := 0
	sum, err := Sweep(t.Context(), Short, 0, 1<<40, SweepOptions{Workers: 3, Chunk: 4}, func(uint64, MapLayoutAnalysis) error {
		if seen++; seen == 10 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || sum.Maps != 9 {
		t.Fatalf("callback error: err %v, %d maps summarised", err, sum.Maps)
	}
	ctx, cancel := context.WithCancel(t.Context())
	_, err = Sweep(ctx, Short, 0, 1<<40, SweepOptions{Workers: 2, Chunk: 4}, func(seed uint64, _ MapLayoutAnalysis) error {
		if seed == 5 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, ErrSweepStopped) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

func TestSweepEdges(t *testing.T) {
	var seeds []uint64
	_, err := Sweep(t.Context(), Short, math.MaxUint64-2, math.MaxUint64, SweepOptions{Chunk: 2}, func(seed uint64, _ MapLayoutAnalysis) error {
		seeds = append(seeds, seed)
		return nil
	})
	if err != nil || !reflect.DeepEqual(seeds, []uint64{math.MaxUint64 - 2, math.MaxUint64 - 1, math.MaxUint64}) {
		t.Fatalf("top of the range: %v %v", seeds, err)
	}
	none := func(uint64, MapLayoutAnalysis) error { return nil }
	if _, err := Sweep(t.Context(), Short, 5, 4, SweepOptions{}, none); err == nil {
		t.Error("first after last accepted")
	}
	if _, err := Sweep(t.Context(), "medium", 1, 2, SweepOptions{}, none); err == nil {
		t.Error("unknown size accepted")
	}
	var d Distribution
	for _, v := range []int{-1, 4, 1, 9, 1} {
		d.Add(v)
	}
	if d.N != 4 || d.Min != 1 || d.Max != 9 || d.Median() != 1 || d.MeanTenths() != 38 {
		t.Errorf("distribution of 4,1,9,1: %+v median %d mean %d", d, d.Median(), d.MeanTenths())
	}
}
