package qa_test

import (
	"testing"

	"github.com/towerdefence/platformctl/internal/gamemap"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/qa"
)

// TestKnownSeedsHoldTheirProperty regenerates every scanned seed and
// checks that each reported seed really is the extreme of its property,
// with ties going to the lowest seed.
func TestKnownSeedsHoldTheirProperty(t *testing.T) {
	const scan = 16
	measures := map[string]func(gamemap.MapLayout, gamemap.MapLayoutAnalysis) int{
		"most-overlap":       func(_ gamemap.MapLayout, a gamemap.MapLayoutAnalysis) int { return a.OverlapCellCount },
		"least-overlap":      func(_ gamemap.MapLayout, a gamemap.MapLayoutAnalysis) int { return -a.OverlapCellCount },
		"longest-route":      func(_ gamemap.MapLayout, a gamemap.MapLayoutAnalysis) int { return routeExtreme(a, true) },
		"shortest-route":     func(_ gamemap.MapLayout, a gamemap.MapLayoutAnalysis) int { return -routeExtreme(a, false) },
		"most-build-cells":   func(_ gamemap.MapLayout, a gamemap.MapLayoutAnalysis) int { return a.BuildCellCount },
		"fewest-build-cells": func(_ gamemap.MapLayout, a gamemap.MapLayoutAnalysis) int { return -a.BuildCellCount },
		"most-unbalanced": func(_ gamemap.MapLayout, a gamemap.MapLayoutAnalysis) int {
			return routeExtreme(a, true) - routeExtreme(a, false)
		},
	}
	for _, size := range gamemap.Sizes {
		known := qa.FindKnownSeeds(size, scan)
		if len(known) != len(measures) {
			t.Fatalf("%s: %d properties, want %d", size, len(known), len(measures))
		}
		for _, k := range known {
			measure, ok := measures[k.Property]
			if !ok {
				t.Fatalf("unexpected property %s", k.Property)
			}
			bestSeed, best := uint64(0), 0
			for seed := uint64(1); seed <= scan; seed++ {
				if v := measure(gamemap.GenerateAnalyzed(size, seed)); bestSeed == 0 || v > best {
					bestSeed, best = seed, v
				}
			}
			if uint64(k.Map.Seed) != bestSeed || k.Map.Size != size {
				t.Errorf("%s %s: seed %d, want %d", size, k.Property, k.Map.Seed, bestSeed)
			}
			if abs(best) != k.Value {
				t.Errorf("%s %s: value %d, want %d", size, k.Property, k.Value, abs(best))
			}
		}
	}
}

func routeExtreme(a gamemap.MapLayoutAnalysis, longest bool) int {
	out := 0
	for _, r := range a.Routes {
		if r.SmallUnitLength == nil {
			continue
		}
		n := *r.SmallUnitLength
		if out == 0 || (longest && n > out) || (!longest && n < out) {
			out = n
		}
	}
	return out
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func TestTestingMetadataFollowsTheSwitch(t *testing.T) {
	ctx := t.Context()
	off := qa.New("production", qa.ToolSwitches{TestingTools: false}, nil)
	if _, err := off.Metadata(ctx); platform.ErrorCode(err) != platform.CodeNotFound {
		t.Fatalf("disabled testing tools answered: %v", err)
	}
	on := qa.New("development", qa.ToolSwitches{TestingTools: true}, nil)
	md, err := on.Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !md.Enabled || md.Environment != "development" || len(md.Tools) == 0 || md.FixturePlayers == nil || md.DeckCodeVectors == nil {
		t.Fatalf("metadata %+v", md)
	}
	for _, size := range gamemap.Sizes {
		if len(md.MapSeeds[string(size)]) == 0 {
			t.Fatalf("no known seeds for %s", size)
		}
	}
}
