// Package ratelimit names attempt budgets: a rule "N per W" lets a burst
// of N through, then one more every W/N (the generic cell rate
// algorithm). The counts live in the database (store.RateLimits), so every
// replica behind a load balancer enforces one shared limit.
package ratelimit

import (
	"fmt"
	"strconv"
	"strings"
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
