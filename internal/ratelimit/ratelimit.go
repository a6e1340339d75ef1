// Package ratelimit counts attempts per key in memory, with the generic
// cell rate algorithm: a rule "N per W" lets a burst of N through, then one
// more every W/N. State lives in this process only; with several replicas
// behind a load balancer each enforces its own limits.
package ratelimit

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Rule allows Limit attempts per Window. A zero Limit means unlimited.
type Rule struct {
	Limit  int
	Window time.Duration
}

// Off reports whether the rule limits nothing.
func (r Rule) Off() bool { return r.Limit <= 0 || r.Window <= 0 }

// String formats the rule as ParseRule reads it.
func (r Rule) String() string {
	if r.Off() {
		return "off"
	}
	return strconv.Itoa(r.Limit) + "/" + r.Window.String()
}

// ParseRule reads "N/DURATION" (e.g. "10/1m") or "off".
func ParseRule(s string) (Rule, error) {
	s = strings.TrimSpace(s)
	if s == "off" || s == "0" {
		return Rule{}, nil
	}
	n, w, ok := strings.Cut(s, "/")
	limit, err := strconv.Atoi(n)
	if !ok || err != nil || limit < 1 {
		return Rule{}, fmt.Errorf("must be N/DURATION like 10/1m, or off")
	}
	window, err := time.ParseDuration(w)
	if err != nil || window < time.Second {
		return Rule{}, fmt.Errorf("must be N/DURATION with a window of at least 1s, like 10/1m")
	}
	return Rule{Limit: limit, Window: window}, nil
}

// Check is one key under one rule.
type Check struct {
	Key  string
	Rule Rule
}

// Limiter holds the state of every key. It is safe for concurrent use.
type Limiter struct {
	mu      sync.Mutex
	tat     map[string]time.Time // theoretical arrival time per key
	now     func() time.Time
	maxKeys int
}

// DefaultMaxKeys bounds memory: about 100 bytes per key.
const DefaultMaxKeys = 100_000

// New returns a limiter that tracks at most maxKeys keys.
func New(now func() time.Time, maxKeys int) *Limiter {
	if maxKeys <= 0 {
		maxKeys = DefaultMaxKeys
	}
	return &Limiter{tat: make(map[string]time.Time), now: now, maxKeys: maxKeys}
}

// Allow counts one attempt against every check, all or nothing: when any
// check is over its limit nothing is counted, and retryAfter says when the
// slowest of the refusing checks will let an attempt through.
func (l *Limiter) Allow(checks ...Check) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	var retryAfter time.Duration
	var next [4]time.Time
	nexts := next[:0]
	for _, c := range checks {
		if c.Rule.Off() {
			nexts = append(nexts, time.Time{})
			continue
		}
		interval := c.Rule.Window / time.Duration(c.Rule.Limit)
		tat := l.tat[c.Key]
		if tat.Before(now) {
			tat = now
		}
		newTAT := tat.Add(interval)
		if wait := newTAT.Sub(now) - c.Rule.Window; wait > 0 {
			retryAfter = max(retryAfter, wait)
			nexts = append(nexts, time.Time{})
			continue
		}
		nexts = append(nexts, newTAT)
	}
	if retryAfter > 0 {
		return false, retryAfter
	}
	if len(l.tat)+len(checks) > l.maxKeys {
		l.sweep(now)
	}
	for i, c := range checks {
		if !nexts[i].IsZero() {
			l.tat[c.Key] = nexts[i]
		}
	}
	return true, 0
}

// sweep forgets keys that are back to a full burst; if that frees too
// little, it forgets an arbitrary tenth of the rest (map order is random),
// which errs towards letting attempts through rather than growing without
// bound.
func (l *Limiter) sweep(now time.Time) {
	for k, tat := range l.tat {
		if !tat.After(now) {
			delete(l.tat, k)
		}
	}
	if len(l.tat) < l.maxKeys*9/10 {
		return
	}
	drop := len(l.tat) / 10
	for k := range l.tat {
		if drop == 0 {
			break
		}
		delete(l.tat, k)
		drop--
	}
}

// Len returns how many keys are tracked.
func (l *Limiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.tat)
}
