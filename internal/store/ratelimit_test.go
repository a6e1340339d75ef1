package store_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/towerdefence/platformctl/internal/ratelimit"
	"github.com/towerdefence/platformctl/internal/storetest"
)

// allow fails t on an error and passes the verdict on.
func allow(t *testing.T) func(bool, time.Duration, error) (bool, time.Duration) {
	return func(ok bool, wait time.Duration, err error) (bool, time.Duration) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return ok, wait
	}
}

func TestRateLimitBurstThenSteadyRate(t *testing.T) {
	l := storetest.Open(t).RateLimits()
	ctx := t.Context()
	now := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	rule := ratelimit.Rule{Limit: 3, Window: 30 * time.Second}
	k := ratelimit.Check{Key: "k", Rule: rule}
	for i := range 3 {
		if ok, _ := allow(t)(l.Allow(ctx, now, k)); !ok {
			t.Fatalf("attempt %d of the burst refused", i+1)
		}
	}
	if ok, wait := allow(t)(l.Allow(ctx, now, k)); ok || wait != 10*time.Second {
		t.Fatalf("4th attempt = %v, wait %v; want refused with 10s", ok, wait)
	}
	if ok, _ := allow(t)(l.Allow(ctx, now, ratelimit.Check{Key: "other", Rule: rule})); !ok {
		t.Fatal("another key was refused")
	}
	if ok, wait := allow(t)(l.Allow(ctx, now.Add(9*time.Second), k)); ok || wait != time.Second {
		t.Fatalf("after 9s = %v, wait %v; want refused with 1s", ok, wait)
	}
	if ok, _ := allow(t)(l.Allow(ctx, now.Add(10*time.Second), k)); !ok {
		t.Fatal("after the interval the attempt was refused")
	}
	for i := range 3 {
		if ok, _ := allow(t)(l.Allow(ctx, now.Add(2*time.Minute), k)); !ok {
			t.Fatalf("after a quiet window, attempt %d refused", i+1)
		}
	}
}

func TestRateLimitAllOrNothing(t *testing.T) {
	l := storetest.Open(t).RateLimits()
	ctx := t.Context()
	now := time.Now()
	ip := ratelimit.Rule{Limit: 5, Window: time.Minute}
	acct := ratelimit.Rule{Limit: 1, Window: time.Minute}
	check := func(a string) []ratelimit.Check {
		return []ratelimit.Check{{Key: "ip", Rule: ip}, {Key: a, Rule: acct}}
	}
	if ok, _ := allow(t)(l.Allow(ctx, now, check("acct")...)); !ok {
		t.Fatal("first attempt refused")
	}
	if ok, _ := allow(t)(l.Allow(ctx, now, check("acct")...)); ok {
		t.Fatal("second attempt on the account allowed")
	}
	for i := range 4 {
		if ok, _ := allow(t)(l.Allow(ctx, now, check(fmt.Sprint("acct", i))...)); !ok {
			t.Fatalf("ip attempt %d refused; a refused attempt was counted", i+2)
		}
	}
	if ok, _ := allow(t)(l.Allow(ctx, now, check("fresh")...)); ok {
		t.Fatal("6th attempt from the IP allowed")
	}
	if ok, _ := allow(t)(l.Allow(ctx, now, ratelimit.Check{Key: "x"})); !ok {
		t.Fatal("an off rule refused")
	}
}

// Concurrent attempts on one key draw on one budget, exactly.
func TestRateLimitConcurrentAttemptsCountExactly(t *testing.T) {
	db := storetest.Open(t)
	rule := ratelimit.Rule{Limit: 50, Window: time.Hour}
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() {
			ok, _, err := db.RateLimits().Allow(t.Context(), time.Now(), ratelimit.Check{Key: "k", Rule: rule},
				ratelimit.Check{Key: "ip", Rule: ratelimit.Rule{Limit: 1000, Window: time.Hour}})
			if err != nil {
				t.Error(err)
			}
			if ok {
				allowed.Add(1)
			}
		})
	}
	wg.Wait()
	if allowed.Load() != 50 {
		t.Fatalf("%d of 200 concurrent attempts allowed, want exactly 50", allowed.Load())
	}
}

// A flood of fresh keys evicts nothing: a key that limits someone still
// limits them after a flood of other keys were counted, and the sweep removes
// only the keys whose time has passed. (The closing figures ran 1,300
// addresses through a real server; 300 keep the test quick.)
func TestRateLimitFloodEvictsNothing(t *testing.T) {
	db := storetest.Open(t)
	l := db.RateLimits()
	ctx := t.Context()
	now := time.Now()
	victim := ratelimit.Check{Key: "sign-in|account|player|victim@example.com", Rule: ratelimit.Rule{Limit: 10, Window: 15 * time.Minute}}
	for range 10 {
		allow(t)(l.Allow(ctx, now, victim))
	}
	for i := range 300 {
		ip := ratelimit.Check{Key: fmt.Sprintf("sign-up|ip|10.0.%d.%d", i/256, i%256), Rule: ratelimit.Rule{Limit: 30, Window: time.Minute}}
		allow(t)(l.Allow(ctx, now, ip))
	}
	if ok, wait := allow(t)(l.Allow(ctx, now, victim)); ok || wait != 90*time.Second {
		t.Fatalf("victim's lockout after the flood: allowed=%v wait=%v", ok, wait)
	}
	later := now.Add(time.Minute)
	n, err := db.Sweeps().RateLimits(ctx, later, false)
	if err != nil || n != 300 {
		t.Fatalf("sweep removed %d, %v; want the 300 expired keys", n, err)
	}
	if ok, wait := allow(t)(l.Allow(ctx, later, victim)); ok || wait != 30*time.Second {
		t.Fatalf("after the sweep the victim's key: allowed=%v wait=%v; want refused for 30s", ok, wait)
	}
}

// A burst on a key nobody has used yet is counted as exactly as one on a
// known key: the first attempts on a fresh key race to create its row, and
// only the limit's worth may pass (a password-reset burst from many
// addresses on PostgreSQL once passed up to 14 of a limit of 3).
func TestRateLimitFreshKeyBurstAdmitsExactlyTheLimit(t *testing.T) {
	db := storetest.Open(t)
	for round := range 5 {
		key := fmt.Sprintf("request-password-reset|account|player|burst%d@example.com", round)
		rule := ratelimit.Rule{Limit: 3, Window: 10 * time.Minute}
		var allowed atomic.Int64
		var wg sync.WaitGroup
		for i := range 200 {
			wg.Go(func() {
				ip := ratelimit.Check{Key: fmt.Sprintf("request-password-reset|ip|10.%d.%d.1", round, i), Rule: ratelimit.Rule{Limit: 10, Window: time.Minute}}
				ok, _, err := db.RateLimits().Allow(t.Context(), time.Now(), ip, ratelimit.Check{Key: key, Rule: rule})
				if err != nil {
					t.Error(err)
				}
				if ok {
					allowed.Add(1)
				}
			})
		}
		wg.Wait()
		if allowed.Load() != 3 {
			t.Fatalf("round %d: %d of 200 concurrent attempts on a fresh key allowed, want exactly 3", round, allowed.Load())
		}
	}
}

// BenchmarkRateLimitAllow compares an attempt on a key that has a row
// (one statement) with one on a fresh key (the statement runs twice: it
// first creates the key's row).
func BenchmarkRateLimitAllow(b *testing.B) {
	db := storetest.Open(b)
	rule := ratelimit.Rule{Limit: 1_000_000_000, Window: time.Hour}
	b.Run("known key", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := db.RateLimits().Allow(b.Context(), time.Now(), ratelimit.Check{Key: "known", Rule: rule}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fresh key", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			if _, _, err := db.RateLimits().Allow(b.Context(), time.Now(), ratelimit.Check{Key: fmt.Sprint("fresh-", i), Rule: rule}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// Attempts stamped before they wait for the key's row reach it out of
// order; a burst of one more than the limit on a fresh key, with the
// stamps shuffled, is admitted exactly the limit, every time.
func TestRateLimitOutOfOrderStampsAdmitExactlyTheLimit(t *testing.T) {
	db := storetest.Open(t)
	rule := ratelimit.Rule{Limit: 5, Window: time.Hour}
	base := time.Now()
	for round := range 30 {
		key := fmt.Sprintf("guest|ip|10.9.%d.1", round)
		var allowed atomic.Int64
		var wg sync.WaitGroup
		for i := range rule.Limit + 1 {
			at := base.Add(time.Duration((i*7+round)%(rule.Limit+1)) * time.Millisecond)
			wg.Go(func() {
				ok, _, err := db.RateLimits().Allow(t.Context(), at, ratelimit.Check{Key: key, Rule: rule})
				if err != nil {
					t.Error(err)
				}
				if ok {
					allowed.Add(1)
				}
			})
		}
		wg.Wait()
		if got := allowed.Load(); got != int64(rule.Limit) {
			t.Fatalf("round %d: %d of %d attempts allowed, want exactly %d", round, got, rule.Limit+1, rule.Limit)
		}
	}
}
