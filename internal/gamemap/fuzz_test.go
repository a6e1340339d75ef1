package gamemap

import (
	"io"
	"math/rand/v2"
	"testing"

	"github.com/towerdefence/platformctl/internal/platform"
)

// fuzzPlaces are drawn on fuzzed layouts: inside, outside and of no kind.
var fuzzPlaces = []Placement{{Tower, GridPoint{1, 1}}, {Trap, GridPoint{0, 0}}, {Trap, GridPoint{-1, 300}}, {"wall", GridPoint{2, 0}}}

// FuzzAnalyze feeds arbitrary JSON to the analyzer. Whatever decodes must
// analyse without panicking, deterministically, with the documented shape:
// valid exactly when there are no problems, lists never nil, at most
// MaxProblems+1 problems, and every null route explained by a problem.
func FuzzAnalyze(f *testing.F) {
	// Seeds stay small: the fuzzer minimises every new input byte by byte,
	// which stalls on the 10-20 KB of a generated layout. Those are covered
	// by the seed corpus in testdata/fuzz and by the invariant tests.
	f.Add([]byte(`{"version":1,"size":"short","seed":"1","width":4,"height":3,"lanes":[{"id":0,"width":2,"spawn":{"x":0,"y":0},"goal":{"x":2,"y":0},"centerline":[{"x":0,"y":0},{"x":1,"y":0},{"x":2,"y":0}],"cells":[{"x":0,"y":0},{"x":1,"y":0},{"x":2,"y":0},{"x":3,"y":0},{"x":0,"y":1},{"x":1,"y":1},{"x":2,"y":1},{"x":3,"y":1}]}],"overlapCells":[],"buildZones":[{"id":0,"laneIds":[0],"cells":[{"x":0,"y":2},{"x":1,"y":2},{"x":2,"y":2},{"x":3,"y":2}]}]}`))
	f.Add([]byte(`{"width":256,"height":256,"lanes":[{"width":200,"centerline":[{"x":0,"y":0},{"x":1,"y":0},{"x":0,"y":0}]}]}`))
	f.Add([]byte(`{"width":-1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := ParseLayout(data)
		if err != nil {
			return
		}
		a := Analyze(l)
		if a.Valid != (len(a.Problems) == 0) || a.Problems == nil || a.Routes == nil || len(a.Problems) > MaxProblems+1 {
			t.Fatalf("analysis shape: %+v", a)
		}
		for _, r := range a.Routes {
			if r.SmallUnitLength == nil && !hasCode(a, ProblemNoSmallRoute) || r.LargeUnitLength == nil && !hasCode(a, ProblemNoLargeRoute) {
				t.Fatalf("null route without a problem: %+v", a)
			}
			if a.Valid && *r.SmallUnitLength > *r.LargeUnitLength {
				t.Fatalf("small route longer than large: %+v", r)
			}
		}
		if again := Analyze(l); !analysesEqual(a, again) {
			t.Fatalf("two analyses differ")
		}
		ASCII(l)                                                  //nolint:errcheck // must not panic; errors are fine
		SVG(io.Discard, l, RenderOptions{Placements: fuzzPlaces}) //nolint:errcheck // must not panic; errors are fine
		if a.Valid {
			if _, err := NewBoard(l); err != nil {
				t.Fatalf("NewBoard of a valid layout: %v", err)
			}
		}
	})
}

// FuzzValidatePlacement plays fuzzed placement sequences on generated maps
// (mode 0), random shapes (1) and fuzzed JSON layouts (2), checking every
// answer against the route oracle.
func FuzzValidatePlacement(f *testing.F) {
	f.Add([]byte(nil), uint64(1), uint8(0), []byte{1, 5, 5, 0, 6, 6, 1, 10, 7})
	f.Add([]byte(nil), uint64(7), uint8(1), []byte{1, 3, 3, 1, 4, 3, 1, 5, 3, 1, 6, 3})
	f.Add([]byte(`{"version":1,"size":"short","width":4,"height":3,"lanes":[]}`), uint64(0), uint8(2), []byte{1, 2, 2})
	f.Fuzz(func(t *testing.T, data []byte, seed uint64, mode uint8, ops []byte) {
		size := Sizes[seed%2]
		var l MapLayout
		switch mode % 3 {
		case 0:
			l = Generate(size, seed)
		case 1:
			l = randomShape(rand.New(rand.NewPCG(seed, 3)), size, seed%3 == 0)
		default:
			var err error
			if l, err = ParseLayout(data); err != nil {
				return
			}
		}
		var existing []Placement
		for i := 0; i+2 < len(ops) && i < 3*64; i += 3 {
			kind := Trap
			switch ops[i] % 3 {
			case 0:
				kind = Tower
			case 2:
				kind = StructureKind([]string{"", "wall", "TRAP"}[ops[i]%3])
			}
			p := Placement{kind, GridPoint{int(ops[i+1]) - 2, int(ops[i+2]) - 2}}
			err := ValidatePlacement(l, existing, p)
			if !Analyze(l).Valid {
				if err == nil {
					t.Fatal("placement accepted on an invalid layout")
				}
				return
			}
			if err == nil {
				existing = append(existing, p)
			}
			var blocked []GridPoint
			for _, e := range existing {
				if e.Kind == Trap {
					blocked = append(blocked, e.Cell)
				}
			}
			if !allRoutes(referenceRoutes(l, blocked)) {
				t.Fatalf("accepted placements %v cut a route", existing)
			}
			if code := platform.ErrorCode(err); (code == CodePlacementCutsSmallRoute || code == CodePlacementCutsLargeRoute) &&
				allRoutes(referenceRoutes(l, append(blocked, p.Cell))) {
				t.Fatalf("%v refused as %s but cuts nothing", p, code)
			}
		}
	})
}
