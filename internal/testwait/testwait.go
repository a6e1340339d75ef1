// Package testwait is the tests' one way to wait for something to happen:
// poll a condition until it holds or a deadline passes, instead of
// sleeping a fixed time and hoping it was long enough.
package testwait

import (
	"fmt"
	"testing"
	"time"
)

// pollMin and pollMax bound the pause between two looks: short at first,
// so a condition that holds at once costs nothing, then longer, so a slow
// one does not keep a core busy.
const (
	pollMin = 2 * time.Millisecond
	pollMax = 50 * time.Millisecond
)

// For polls cond until it returns true and fails tb, saying what it
// waited for, if it has not within timeout. Call it from the test's own
// goroutine.
func For(tb testing.TB, timeout time.Duration, what string, cond func() bool) {
	tb.Helper()
	Nil(tb, timeout, func() error {
		if cond() {
			return nil
		}
		return fmt.Errorf("still waiting for %s", what)
	})
}

// Nil polls cond until it returns nil and fails tb with the last error it
// returned if it has not within timeout: the error says what was seen
// instead. Call it from the test's own goroutine.
func Nil(tb testing.TB, timeout time.Duration, cond func() error) {
	tb.Helper()
	poll(tb, timeout, func(pause time.Duration) time.Duration { return min(2*pause, pollMax) }, cond)
}

// Closely is Nil looking at a steady, short pause, for a condition whose
// moment matters: one that holds only briefly (a sweep caught in its
// middle), or one whose wait the test measures (how soon a signed-out
// session is refused), where Nil's growing pause would miss the moment or
// add up to pollMax to the measure. It returns how long cond took to hold.
func Closely(tb testing.TB, timeout time.Duration, cond func() error) time.Duration {
	tb.Helper()
	start := time.Now()
	poll(tb, timeout, func(time.Duration) time.Duration { return pollMin }, cond)
	return time.Since(start)
}

// poll looks at cond until it returns nil, pausing between two looks for
// pollMin first and then for what next makes of the previous pause.
func poll(tb testing.TB, timeout time.Duration, next func(time.Duration) time.Duration, cond func() error) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	pause := pollMin
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("not within %s: %v", timeout, err)
		}
		select {
		case <-tb.Context().Done():
			tb.Fatalf("test ended while waiting: %v", err)
		case <-time.After(pause):
		}
		pause = next(pause)
	}
}
