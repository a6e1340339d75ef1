package testwait

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
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
