package ratelimit

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

func TestParseRule(t *testing.T) {
	for in, want := range map[string]Rule{
		"10/1m": {10, time.Minute}, " 3/10s ": {3, 10 * time.Second}, "off": {}, "0": {},
	} {
		got, err := ParseRule(in)
		if err != nil || got != want {
			t.Errorf("ParseRule(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "10", "x/1m", "-1/1m", "10/1ms", "10/abc", "10/"} {
		if _, err := ParseRule(bad); err == nil {
			t.Errorf("ParseRule(%q) accepted", bad)
		}
	}
}

func TestBurstThenSteadyRate(t *testing.T) {
	clk := &fakeClock{}
	l := New(clk.now, 0)
	rule := Rule{Limit: 3, Window: 30 * time.Second}
	for i := range 3 {
		if ok, _ := l.Allow(Check{"k", rule}); !ok {
			t.Fatalf("attempt %d of the burst refused", i+1)
		}
	}
	ok, retry := l.Allow(Check{"k", rule})
	if ok || retry != 10*time.Second {
		t.Fatalf("4th attempt = %v, retry %v; want refused with 10s", ok, retry)
	}
	if ok, _ := l.Allow(Check{"other", rule}); !ok {
		t.Fatal("another key was refused")
	}
	clk.advance(9 * time.Second)
	if ok, retry := l.Allow(Check{"k", rule}); ok || retry != time.Second {
		t.Fatalf("after 9s = %v, retry %v; want refused with 1s", ok, retry)
	}
	clk.advance(time.Second)
	if ok, _ := l.Allow(Check{"k", rule}); !ok {
		t.Fatal("after the interval the attempt was refused")
	}
	clk.advance(time.Minute)
	for i := range 3 {
		if ok, _ := l.Allow(Check{"k", rule}); !ok {
			t.Fatalf("after a quiet window, attempt %d refused", i+1)
		}
	}
}

func TestAllOrNothing(t *testing.T) {
	clk := &fakeClock{}
	l := New(clk.now, 0)
	ip, acct := Rule{Limit: 5, Window: time.Minute}, Rule{Limit: 1, Window: time.Minute}
	if ok, _ := l.Allow(Check{"ip", ip}, Check{"acct", acct}); !ok {
		t.Fatal("first attempt refused")
	}
	if ok, _ := l.Allow(Check{"ip", ip}, Check{"acct", acct}); ok {
		t.Fatal("second attempt on the account allowed")
	}
	// The refused attempt did not use up the IP's allowance: 4 more fit.
	for i := range 4 {
		if ok, _ := l.Allow(Check{"ip", ip}, Check{fmt.Sprint("acct", i), acct}); !ok {
			t.Fatalf("ip attempt %d refused; refused attempts were counted", i+2)
		}
	}
	if ok, _ := l.Allow(Check{"ip", ip}, Check{"fresh", acct}); ok {
		t.Fatal("6th attempt from the IP allowed")
	}
	if ok, _ := l.Allow(Check{"x", Rule{}}); !ok {
		t.Fatal("an off rule refused")
	}
}

func TestConcurrentAttemptsCountExactly(t *testing.T) {
	l := New(time.Now, 0)
	rule := Rule{Limit: 50, Window: time.Hour}
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() {
			if ok, _ := l.Allow(Check{"k", rule}); ok {
				allowed.Add(1)
			}
		})
	}
	wg.Wait()
	if allowed.Load() != 50 {
		t.Fatalf("%d of 200 concurrent attempts allowed, want exactly 50", allowed.Load())
	}
}

func TestMemoryIsBounded(t *testing.T) {
	clk := &fakeClock{}
	l := New(clk.now, 1000)
	rule := Rule{Limit: 1, Window: time.Hour}
	for i := range 5000 {
		l.Allow(Check{fmt.Sprint("k", i), rule})
	}
	if n := l.Len(); n > 1000 {
		t.Fatalf("limiter tracks %d keys, cap is 1000", n)
	}
	clk.advance(2 * time.Hour)
	l.Allow(Check{"late", rule})
	for i := range 1000 {
		l.Allow(Check{fmt.Sprint("again", i), rule})
	}
	if n := l.Len(); n > 1000 {
		t.Fatalf("after expiry the limiter tracks %d keys", n)
	}
}

func BenchmarkAllow(b *testing.B) {
	l := New(time.Now, 0)
	rule := Rule{Limit: 1 << 30, Window: time.Hour}
	for b.Loop() {
		l.Allow(Check{"ip|127.0.0.1", rule}, Check{"acct|a@example.com", rule})
	}
}
