package gamemap

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
)

// clone deep-copies a layout so a test case can mutate it.
func clone(l MapLayout) MapLayout {
	c := l
	c.Lanes = slices.Clone(l.Lanes)
	for i := range c.Lanes {
		c.Lanes[i].Centerline = slices.Clone(l.Lanes[i].Centerline)
		c.Lanes[i].Cells = slices.Clone(l.Lanes[i].Cells)
	}
	c.OverlapCells = slices.Clone(l.OverlapCells)
	c.BuildZones = slices.Clone(l.BuildZones)
	for i := range c.BuildZones {
		c.BuildZones[i].LaneIDs = slices.Clone(l.BuildZones[i].LaneIDs)
		c.BuildZones[i].Cells = slices.Clone(l.BuildZones[i].Cells)
	}
	return c
}

func sortCells(cs []GridPoint) {
	slices.SortFunc(cs, func(a, b GridPoint) int {
		if a.Less(b) {
			return -1
		}
		if b.Less(a) {
			return 1
		}
		return 0
	})
}

// emptyCell returns a cell with no lane or build cell in its 3×3 block.
func emptyCell(t *testing.T, l MapLayout) GridPoint {
	t.Helper()
	lane, build, _ := cellKinds(l)
	for y := 1; y < l.Height-1; y++ {
		for x := 1; x < l.Width-1; x++ {
			clear := true
			for dy := -1; dy <= 1; dy++ {
				for dx := -1; dx <= 1; dx++ {
					c := GridPoint{x + dx, y + dy}
					clear = clear && !lane[c] && !build[c]
				}
			}
			if clear {
				return GridPoint{x, y}
			}
		}
	}
	t.Fatal("no empty cell")
	return GridPoint{}
}

// TestAnalyzeProblemCodes breaks a valid layout in one way per case and
// expects the named problem code (and valid false).
func TestAnalyzeProblemCodes(t *testing.T) {
	base := Generate(Short, 1)
	if a := Analyze(base); !a.Valid {
		t.Fatalf("base layout: %v", a.Problems)
	}
	lane0 := func(l *MapLayout) *PathLane { return &l.Lanes[0] }
	cutAt := func(l *MapLayout, x int, keepOne bool) {
		ln := lane0(l)
		var kept []GridPoint
		var col []GridPoint
		for _, c := range ln.Cells {
			if c.X == x {
				col = append(col, c)
				continue
			}
			kept = append(kept, c)
		}
		if keepOne {
			kept = append(kept, col[len(col)/2])
			sortCells(kept)
		}
		ln.Cells = kept
	}
	cases := []struct {
		code   string
		mutate func(t *testing.T, l *MapLayout)
		cell   bool // the problem must point at a cell
	}{
		{ProblemDimensionsInvalid, func(t *testing.T, l *MapLayout) { l.Width = 0 }, false},
		{ProblemDimensionsInvalid, func(t *testing.T, l *MapLayout) { l.Height = MaxDimension + 1 }, false},
		{ProblemTooManyLanes, func(t *testing.T, l *MapLayout) {
			for len(l.Lanes) <= MaxLanes {
				l.Lanes = append(l.Lanes, l.Lanes[0])
			}
		}, false},
		{ProblemVersionUnsupported, func(t *testing.T, l *MapLayout) { l.Version = Version + 1 }, false},
		{ProblemVersionUnsupported, func(t *testing.T, l *MapLayout) { l.Version = 0 }, false},
		{ProblemSizeUnknown, func(t *testing.T, l *MapLayout) { l.Size = "medium" }, false},
		{ProblemSizeMismatch, func(t *testing.T, l *MapLayout) { l.Size = Long }, false},
		{ProblemNoLanes, func(t *testing.T, l *MapLayout) { l.Lanes = []PathLane{} }, false},
		{ProblemLaneIDMismatch, func(t *testing.T, l *MapLayout) { l.Lanes[1].ID = 7 }, false},
		{ProblemLaneWidthInvalid, func(t *testing.T, l *MapLayout) { l.Lanes[0].Width = 1 }, false},
		{ProblemCellOutOfBounds, func(t *testing.T, l *MapLayout) {
			l.Lanes[0].Cells = append(l.Lanes[0].Cells, GridPoint{l.Width, 0})
		}, true},
		{ProblemCellOutOfBounds, func(t *testing.T, l *MapLayout) { l.Lanes[1].Spawn = GridPoint{-1, 4} }, true},
		{ProblemCellOutOfBounds, func(t *testing.T, l *MapLayout) {
			l.BuildZones[0].Cells = append(l.BuildZones[0].Cells, GridPoint{0, l.Height})
		}, true},
		{ProblemCellsNotSorted, func(t *testing.T, l *MapLayout) {
			c := l.Lanes[0].Cells
			c[3], c[4] = c[4], c[3]
		}, true},
		{ProblemCellsNotSorted, func(t *testing.T, l *MapLayout) { slices.Reverse(l.OverlapCells) }, true},
		{ProblemCellDuplicate, func(t *testing.T, l *MapLayout) {
			l.Lanes[0].Cells = slices.Insert(l.Lanes[0].Cells, 3, l.Lanes[0].Cells[3])
		}, true},
		{ProblemCellDuplicate, func(t *testing.T, l *MapLayout) {
			z := &l.BuildZones[0]
			z.Cells = slices.Insert(z.Cells, 1, z.Cells[1])
		}, true},
		{ProblemSpawnOffLane, func(t *testing.T, l *MapLayout) { l.Lanes[0].Spawn.Y = 17 }, true},
		{ProblemGoalOffLane, func(t *testing.T, l *MapLayout) { l.Lanes[1].Goal = GridPoint{l.Width - 2, 0} }, true},
		{ProblemCenterlineBroken, func(t *testing.T, l *MapLayout) {
			cl := l.Lanes[0].Centerline
			l.Lanes[0].Centerline = slices.Delete(cl, 5, 6)
		}, true},
		{ProblemCenterlineBroken, func(t *testing.T, l *MapLayout) { l.Lanes[1].Centerline = []GridPoint{} }, false},
		{ProblemCenterlineBroken, func(t *testing.T, l *MapLayout) {
			cl := l.Lanes[0].Centerline
			l.Lanes[0].Centerline = append(cl[:2:2], cl[1], cl[0])
		}, true},
		{ProblemLaneNotConnected, func(t *testing.T, l *MapLayout) {
			l.Lanes[0].Cells = append(l.Lanes[0].Cells, emptyCell(t, *l))
			sortCells(l.Lanes[0].Cells)
		}, true},
		{ProblemNoSmallRoute, func(t *testing.T, l *MapLayout) { cutAt(l, 10, false) }, false},
		{ProblemNoLargeRoute, func(t *testing.T, l *MapLayout) { cutAt(l, 10, true) }, false},
		{ProblemOverlapMismatch, func(t *testing.T, l *MapLayout) { l.OverlapCells = l.OverlapCells[1:] }, true},
		{ProblemOverlapMismatch, func(t *testing.T, l *MapLayout) {
			l.OverlapCells = append(l.OverlapCells, emptyCell(t, *l))
			sortCells(l.OverlapCells)
		}, true},
		{ProblemBuildCellOnPath, func(t *testing.T, l *MapLayout) {
			l.BuildZones[0].Cells = append(l.BuildZones[0].Cells, l.Lanes[0].Cells[10])
			sortCells(l.BuildZones[0].Cells)
		}, true},
		{ProblemBuildCellDetached, func(t *testing.T, l *MapLayout) {
			l.BuildZones[0].Cells = append(l.BuildZones[0].Cells, emptyCell(t, *l))
			sortCells(l.BuildZones[0].Cells)
		}, true},
		{ProblemBuildZoneIDMismatch, func(t *testing.T, l *MapLayout) { l.BuildZones[2].ID = 0 }, false},
		{ProblemBuildZoneEmpty, func(t *testing.T, l *MapLayout) { l.BuildZones[1].Cells = []GridPoint{} }, false},
		{ProblemBuildZoneNotConnected, func(t *testing.T, l *MapLayout) {
			z := &l.BuildZones[0]
			z.Cells = append(z.Cells, l.BuildZones[len(l.BuildZones)-1].Cells...)
			sortCells(z.Cells)
			l.BuildZones = l.BuildZones[:len(l.BuildZones)-1]
		}, true},
		{ProblemBuildZonesOverlap, func(t *testing.T, l *MapLayout) {
			l.BuildZones[1].Cells = append(l.BuildZones[1].Cells, l.BuildZones[0].Cells[0])
			sortCells(l.BuildZones[1].Cells)
		}, true},
		{ProblemBuildZoneLanes, func(t *testing.T, l *MapLayout) { l.BuildZones[0].LaneIDs = []int{} }, false},
		{ProblemBuildZoneLanes, func(t *testing.T, l *MapLayout) { l.BuildZones[0].LaneIDs = []int{0, 0} }, false},
		{ProblemBuildZoneLanes, func(t *testing.T, l *MapLayout) { l.BuildZones[0].LaneIDs = []int{5} }, false},
		{ProblemTruncated, func(t *testing.T, l *MapLayout) {
			for range MaxProblems + 5 {
				l.BuildZones = append(l.BuildZones, BuildZone{ID: len(l.BuildZones), LaneIDs: []int{}, Cells: []GridPoint{}})
			}
		}, false},
	}
	seen := map[string]bool{}
	for _, tc := range cases {
		t.Run(tc.code, func(t *testing.T) {
			l := clone(base)
			tc.mutate(t, &l)
			a := Analyze(l)
			if a.Valid {
				t.Fatalf("valid after the mutation")
			}
			i := slices.IndexFunc(a.Problems, func(p MapProblem) bool { return p.Code == tc.code })
			if i < 0 {
				t.Fatalf("no %s among %v", tc.code, a.Problems)
			}
			if p := a.Problems[i]; p.Message == "" || (tc.cell && p.Cell == nil) {
				t.Errorf("problem %+v: want a message%s", p, map[bool]string{true: " and a cell"}[tc.cell])
			}
			if len(a.Problems) > MaxProblems+1 {
				t.Errorf("%d problems, more than MaxProblems+1", len(a.Problems))
			}
			for _, r := range a.Routes {
				if r.SmallUnitLength == nil && !hasCode(a, ProblemNoSmallRoute) || r.LargeUnitLength == nil && !hasCode(a, ProblemNoLargeRoute) {
					t.Errorf("a route is null without its NO_*_ROUTE problem: %v", a.Problems)
				}
			}
			seen[tc.code] = true
		})
	}
	for _, code := range []string{ProblemDimensionsInvalid, ProblemTooManyLanes, ProblemVersionUnsupported, ProblemSizeUnknown,
		ProblemSizeMismatch, ProblemNoLanes, ProblemLaneIDMismatch, ProblemLaneWidthInvalid, ProblemCellOutOfBounds,
		ProblemCellsNotSorted, ProblemCellDuplicate, ProblemSpawnOffLane, ProblemGoalOffLane, ProblemCenterlineBroken,
		ProblemLaneNotConnected, ProblemNoSmallRoute, ProblemNoLargeRoute, ProblemOverlapMismatch, ProblemBuildCellOnPath,
		ProblemBuildCellDetached, ProblemBuildZoneIDMismatch, ProblemBuildZoneEmpty, ProblemBuildZoneNotConnected,
		ProblemBuildZonesOverlap, ProblemBuildZoneLanes, ProblemTruncated} {
		if !seen[code] {
			t.Errorf("no case for %s", code)
		}
	}
}

func hasCode(a MapLayoutAnalysis, code string) bool {
	return slices.ContainsFunc(a.Problems, func(p MapProblem) bool { return p.Code == code })
}

func TestAnalyzeFatalProblemsStopEarly(t *testing.T) {
	l := Generate(Long, 3)
	l.Width = -4
	a := Analyze(l)
	if a.Valid || len(a.Problems) != 1 || a.Problems[0].Code != ProblemDimensionsInvalid || a.Routes == nil || len(a.Routes) != 0 {
		t.Fatalf("%+v", a)
	}
	data, _ := json.Marshal(a)
	if !strings.Contains(string(data), `"routes":[]`) {
		t.Errorf("routes not [] in %s", data)
	}
}

// TestAnalyzeHostileSizes feeds lists far larger than the grid; the
// analysis must answer, with bounded problems, without panicking.
func TestAnalyzeHostileSizes(t *testing.T) {
	big := make([]GridPoint, 200_000)
	for i := range big {
		big[i] = GridPoint{i % 7, -i}
	}
	wide := make([]GridPoint, 0, 4000)
	for i := range 4000 {
		wide = append(wide, GridPoint{i % 2, 0})
	}
	l := MapLayout{Version: 1, Size: Long, Seed: 1, Width: MaxDimension, Height: MaxDimension,
		Lanes: []PathLane{
			{ID: 0, Width: 250, Spawn: GridPoint{0, 0}, Goal: GridPoint{1, 0}, Centerline: wide, Cells: big},
			{ID: 1, Width: math.MaxInt, Spawn: GridPoint{math.MaxInt, math.MinInt}, Goal: GridPoint{math.MinInt, math.MaxInt}, Centerline: big},
		},
		OverlapCells: big,
		BuildZones:   []BuildZone{{ID: 0, LaneIDs: []int{-1, math.MaxInt}, Cells: big}},
	}
	a := Analyze(l)
	if a.Valid || len(a.Problems) == 0 || len(a.Problems) > MaxProblems+1 {
		t.Fatalf("valid %v with %d problems", a.Valid, len(a.Problems))
	}
}

func TestAnalyzeNilListsAreEmpty(t *testing.T) {
	a := Analyze(MapLayout{Version: 1, Size: Short, Width: 32, Height: 18})
	data, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "null") {
		t.Errorf("analysis JSON has null: %s", data)
	}
}

// TestAnalyzeAfterLargerLayout analyses a tiny broken layout right after a
// large one on the same pooled scratch space: nothing of the first may leak
// into the second (this once indexed past the smaller grid).
func TestAnalyzeAfterLargerLayout(t *testing.T) {
	big := Generate(Long, 1)
	tiny := MapLayout{Version: 1, Size: Short, Width: 1, Height: 1,
		Lanes: []PathLane{{Width: 2, Centerline: []GridPoint{{0, 0}, {1, 0}, {0, 0}}}}}
	for range 3 {
		a := new(analyzer)
		a.analyze(&big)
		got := a.analyze(&tiny)
		if got.Valid || !hasCode(got, ProblemLaneWidthInvalid) {
			t.Fatalf("tiny layout after a long one: %+v", got)
		}
		if again := a.analyze(&big); !again.Valid {
			t.Fatalf("the long layout after the tiny one: %v", again.Problems)
		}
	}
}
