package httpapi

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func newTestRequestCtx(parent context.Context, timeout time.Duration) *requestCtx {
	c := &requestCtx{parent: parent, id: "req-1"}
	if timeout > 0 {
		c.deadline = time.Now().Add(timeout)
	}
	return c
}

// TestRequestCtxDeadlineIsLazy checks that the deadline is known without
// a timer, and that one is made only when something waits.
func TestRequestCtxDeadlineIsLazy(t *testing.T) {
	c := newTestRequestCtx(t.Context(), time.Minute)
	if d, ok := c.Deadline(); !ok || !d.Equal(c.deadline) {
		t.Fatalf("Deadline() = %v, %v; want %v, true", d, ok, c.deadline)
	}
	if RequestID(c) != "req-1" || c.timed.Load() != nil {
		t.Fatalf("RequestID %q, timer made: %v; want the id and no timer", RequestID(c), c.timed.Load() != nil)
	}
	if c.Err() != nil || c.timed.Load() == nil {
		t.Fatalf("Err() = %v, timer made: %v; want nil and a timer", c.Err(), c.timed.Load() != nil)
	}
	c.end()
	if !errors.Is(c.Err(), context.Canceled) {
		t.Fatalf("after the request, Err() = %v, want Canceled", c.Err())
	}
}

// TestRequestCtxExpires checks the deadline reaches Done, Err, Cause and
// children made before it passed, and that the request id is found
// through children.
func TestRequestCtxExpires(t *testing.T) {
	type key struct{}
	c := newTestRequestCtx(t.Context(), 20*time.Millisecond)
	child, cancel := context.WithCancel(context.WithValue(c, key{}, 1))
	defer cancel()
	if RequestID(child) != "req-1" {
		t.Fatalf("RequestID through children = %q", RequestID(child))
	}
	select {
	case <-child.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the child was not canceled at the deadline")
	}
	if !errors.Is(c.Err(), context.DeadlineExceeded) || !errors.Is(context.Cause(c), context.DeadlineExceeded) ||
		!errors.Is(child.Err(), context.DeadlineExceeded) {
		t.Fatalf("Err %v, Cause %v, child Err %v; want DeadlineExceeded", c.Err(), context.Cause(c), child.Err())
	}
	c.end()
	if !errors.Is(c.Err(), context.DeadlineExceeded) {
		t.Fatalf("after the request, Err() = %v; the deadline had passed first", c.Err())
	}
}

// TestRequestCtxNeverAskedUntilAfter checks a context first consulted
// after its request ended: canceled, or past its deadline if that came
// first, as an eagerly made one would be.
func TestRequestCtxNeverAskedUntilAfter(t *testing.T) {
	c := newTestRequestCtx(t.Context(), time.Minute)
	c.end()
	if !errors.Is(c.Err(), context.Canceled) {
		t.Fatalf("Err() = %v, want Canceled", c.Err())
	}
	select {
	case <-c.Done():
	default:
		t.Fatal("Done is open after the request ended")
	}
	late := newTestRequestCtx(t.Context(), time.Nanosecond)
	time.Sleep(time.Millisecond)
	late.end()
	if !errors.Is(late.Err(), context.DeadlineExceeded) {
		t.Fatalf("Err() = %v, want DeadlineExceeded", late.Err())
	}
}

// TestRequestCtxParent checks what comes from the parent: its earlier
// deadline, its cancellation and its values; and, without a timeout, the
// parent's own channel.
func TestRequestCtxParent(t *testing.T) {
	type key struct{}
	parent, cancel := context.WithTimeout(context.WithValue(t.Context(), key{}, "v"), time.Second)
	c := newTestRequestCtx(parent, time.Hour)
	pd, _ := parent.Deadline()
	if d, ok := c.Deadline(); !ok || !d.Equal(pd) {
		t.Fatalf("Deadline() = %v, %v; want the parent's %v", d, ok, pd)
	}
	if c.Value(key{}) != "v" {
		t.Fatalf("Value = %v, want the parent's", c.Value(key{}))
	}
	cancel()
	<-c.Done()
	if !errors.Is(c.Err(), context.Canceled) {
		t.Fatalf("Err() = %v, want the parent's Canceled", c.Err())
	}
	plain := newTestRequestCtx(parent, 0)
	if plain.Done() != parent.Done() {
		t.Fatal("without a timeout the request should use the parent's Done")
	}
	if _, ok := newTestRequestCtx(context.Background(), 0).Deadline(); ok {
		t.Fatal("a deadline without a timeout or a parent's deadline")
	}
}

// TestRequestCtxConcurrentWaiters checks that goroutines racing to wait
// on a fresh context all get the one channel.
func TestRequestCtxConcurrentWaiters(t *testing.T) {
	c := newTestRequestCtx(t.Context(), time.Minute)
	chans := make([]<-chan struct{}, 16)
	var wg sync.WaitGroup
	for i := range chans {
		wg.Go(func() { chans[i] = c.Done() })
	}
	wg.Wait()
	for _, ch := range chans {
		if ch != chans[0] {
			t.Fatal("waiters got different channels")
		}
	}
	c.end()
	<-chans[0]
}
