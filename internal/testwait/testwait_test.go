package testwait

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// recorder is a testing.TB that records a failure instead of ending the test.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = format
	panic(r)
}

func run(tb testing.TB, fn func(r *recorder)) (r *recorder) {
	r = &recorder{TB: tb}
	defer func() {
		if p := recover(); p != nil && p != r {
			panic(p)
		}
	}()
	fn(r)
	return r
}

func TestForReturnsOnceTheConditionHolds(t *testing.T) {
	var calls atomic.Int32
	r := run(t, func(r *recorder) {
		For(r, 5*time.Second, "three looks", func() bool { return calls.Add(1) >= 3 })
	})
	if r.failed != "" || calls.Load() != 3 {
		t.Fatalf("failed %q after %d looks; want success on the third", r.failed, calls.Load())
	}
}

func TestNilFailsWithTheLastErrorAtTheDeadline(t *testing.T) {
	start := time.Now()
	r := run(t, func(r *recorder) {
		Nil(r, 30*time.Millisecond, func() error { return errors.New("the answer is 41") })
	})
	if !strings.HasPrefix(r.failed, "not within") || time.Since(start) < 30*time.Millisecond {
		t.Fatalf("failed %q after %s; want a failure at the 30ms deadline", r.failed, time.Since(start))
	}
}

// The pauses are the subject here: in a synctest bubble the clock moves
// only by them, so the time Closely reports is exactly their sum.
func TestCloselyLooksAtASteadyShortPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		looks := 0
		var took time.Duration
		r := run(t, func(r *recorder) {
			took = Closely(r, 5*time.Second, func() error {
				if looks++; looks < 20 {
					return errors.New("still signed in")
				}
				return nil
			})
		})
		// Nil's growing pause would have taken 762ms for these twenty looks.
		if want := 19 * pollMin; r.failed != "" || looks != 20 || took != want {
			t.Fatalf("failed %q after %d looks in %s; want success on the 20th look after %s", r.failed, looks, took, want)
		}
	})
}

func TestCloselyFailsAtTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		r := run(t, func(r *recorder) {
			Closely(r, 30*time.Millisecond, func() error { return errors.New("still signed in") })
		})
		if took := time.Since(start); !strings.HasPrefix(r.failed, "not within") || took < 30*time.Millisecond || took > 30*time.Millisecond+pollMin {
			t.Fatalf("failed %q after %s; want a failure at the 30ms deadline", r.failed, took)
		}
	})
}
