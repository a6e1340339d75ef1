package ratelimit

import (
	"testing"
	"time"
)

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
