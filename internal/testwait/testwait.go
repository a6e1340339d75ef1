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
		pause = min(2*pause, pollMax)
	}
}
