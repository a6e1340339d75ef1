package platform

import (
	"runtime/debug"
	"testing"
)

func TestWithBuildInfo(t *testing.T) {
	info := &debug.BuildInfo{
		Main: debug.Module{Version: "v1.4.0"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123abcd"},
			{Key: "vcs.time", Value: "2026-11-20T10:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	cases := []struct {
		name string
		in   Build
		want Build
	}{
		{"unset fields filled", Build{"dev", "none", "unknown"}, Build{"v1.4.0", "0123abcd-dirty", "2026-11-20T10:00:00Z"}},
		{"linker flags win", Build{"v2.0.0", "feedbeef", "2026-11-21T00:00:00Z"}, Build{"v2.0.0", "feedbeef", "2026-11-21T00:00:00Z"}},
	}
	for _, c := range cases {
		if got := c.in.WithBuildInfo(info); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
	devel := &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}
	if got := (Build{"dev", "none", "unknown"}).WithBuildInfo(devel); got.Version != "dev" {
		t.Errorf("a (devel) build reports version %q, want dev", got.Version)
	}
	if got := (Build{"dev", "none", "unknown"}).WithBuildInfo(nil); got.Commit != "none" {
		t.Errorf("no build info changed the commit to %q", got.Commit)
	}
}
