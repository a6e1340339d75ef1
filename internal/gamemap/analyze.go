package gamemap

import (
	"fmt"
	"math/bits"
	"sync"
)

// Limits on layouts Analyze accepts. They bound the work and memory of an
// analysis no matter what a hand-edited or hostile layout claims.
const (
	MaxDimension = 256 // largest width or height
	MaxLanes     = 8   // most lanes in one layout
	MaxProblems  = 64  // problems reported before PROBLEMS_TRUNCATED
)

// Problem codes reported by Analyze. They are stable: clients and designers'
// scripts match on them.
const (
	ProblemDimensionsInvalid     = "LAYOUT_DIMENSIONS_INVALID"  // width or height < 1 or > MaxDimension; nothing else is checked
	ProblemTooManyLanes          = "LAYOUT_TOO_MANY_LANES"      // more than MaxLanes lanes; nothing else is checked
	ProblemVersionUnsupported    = "LAYOUT_VERSION_UNSUPPORTED" // version < 1 or newer than this engine
	ProblemSizeUnknown           = "LAYOUT_SIZE_UNKNOWN"        // size is neither "short" nor "long"
	ProblemSizeMismatch          = "LAYOUT_SIZE_MISMATCH"       // width, height or lane count differ from the size's preset
	ProblemNoLanes               = "LAYOUT_NO_LANES"            // the layout has no lane
	ProblemLaneIDMismatch        = "LANE_ID_MISMATCH"           // lanes[i].id is not i
	ProblemLaneWidthInvalid      = "LANE_WIDTH_INVALID"         // width < 2 (a large unit must fit) or wider than the grid
	ProblemCellOutOfBounds       = "CELL_OUT_OF_BOUNDS"         // a point lies outside the grid
	ProblemCellsNotSorted        = "CELLS_NOT_SORTED"           // a cell list is not in row-major order
	ProblemCellDuplicate         = "CELL_DUPLICATE"             // a cell list names a cell twice
	ProblemSpawnOffLane          = "SPAWN_OFF_LANE"             // the spawn footprint is not all lane cells
	ProblemGoalOffLane           = "GOAL_OFF_LANE"              // the goal footprint is not all lane cells
	ProblemCenterlineBroken      = "CENTERLINE_BROKEN"          // centerline empty, not spawn→goal, not 4-connected, or off the lane
	ProblemLaneNotConnected      = "LANE_NOT_CONNECTED"         // a lane cell cannot be reached from the spawn
	ProblemNoSmallRoute          = "NO_SMALL_ROUTE"             // no 1×1 route from spawn to goal
	ProblemNoLargeRoute          = "NO_LARGE_ROUTE"             // no 2×2 route from spawn to goal
	ProblemOverlapMismatch       = "OVERLAP_MISMATCH"           // overlapCells is not exactly the cells in two or more lanes
	ProblemBuildCellOnPath       = "BUILD_CELL_ON_PATH"         // a build cell is a lane cell
	ProblemBuildCellDetached     = "BUILD_CELL_DETACHED"        // a build cell touches no lane cell (8-neighbourhood)
	ProblemBuildZoneIDMismatch   = "BUILD_ZONE_ID_MISMATCH"     // buildZones[i].id is not i
	ProblemBuildZoneEmpty        = "BUILD_ZONE_EMPTY"           // a zone has no cells
	ProblemBuildZoneNotConnected = "BUILD_ZONE_NOT_CONNECTED"   // a zone's cells are not 4-connected
	ProblemBuildZonesOverlap     = "BUILD_ZONES_OVERLAP"        // a cell belongs to two zones
	ProblemBuildZoneLanes        = "BUILD_ZONE_LANES_MISMATCH"  // laneIds is not the sorted list of lanes touching the zone
	ProblemTruncated             = "PROBLEMS_TRUNCATED"         // more than MaxProblems problems; the rest are not listed
)

// Bits of analyzer.flags; bits 0..MaxLanes-1 mark lane membership.
const (
	laneMask     = 1<<MaxLanes - 1
	flagOverlap  = 1 << MaxLanes       // listed in overlapCells
	flagBuild    = 1 << (MaxLanes + 1) // listed in some build zone
	flagFootstep = 1 << (MaxLanes + 2) // inside some spawn or goal footprint (Board only)
	flagSeen     = 1 << (MaxLanes + 3) // reached by the current search; cleared after it
	flagAnchor   = 1 << (MaxLanes + 4) // a 2×2 square of the lane being routed starts here
	flagSeen2    = 1 << (MaxLanes + 5) // reached by the large-unit search
)

// Analyze checks a layout and measures its routes. It accepts any layout,
// including hand-edited or hostile ones: it never panics, its work is bounded
// by MaxDimension, MaxLanes and the length of the layout's lists, and every
// finding is a MapProblem with a stable code. It is safe for concurrent use.
func Analyze(l MapLayout) MapLayoutAnalysis {
	a := analyzerPool.Get().(*analyzer)
	res := a.analyze(&l)
	analyzerPool.Put(a)
	return res
}

var analyzerPool = sync.Pool{New: func() any { return new(analyzer) }}

// analyzer holds the scratch space of one analysis, reused across calls.
// Grids are padded with one empty cell on every side, so neighbour lookups
// need no bounds checks; cell (x, y) lives at index (y+1)*pw + x+1.
type analyzer struct {
	w, h, pw  int
	flags     []uint16      // per cell: lane bits and flag* bits
	zone      []int16       // per cell: build zone index + 1, 0 for none
	mark      []uint32      // per cell: visit stamp of the current search
	laneCells [MaxLanes]int // distinct in-bounds cells per lane
	paths     int           // distinct lane cells
	shared    int           // cells in two or more lanes
	overlaps  int           // distinct in-bounds cells listed in overlapCells
	builds    int           // distinct in-bounds build cells
	stamp     uint32
	queue     []int32
	queue2    []int32
	sat       []int32 // summed-area table for wide centerline squares
	problems  []MapProblem
	seen      []problemKey
}

type problemKey struct {
	code  string
	owner int
}

// owner values for problems not tied to one lane or zone.
const (
	ownerLayout  = -1
	ownerOverlap = -2
	zoneOwner    = 1 << 16 // zone i reports as zoneOwner+i
)

// report records a problem not tied to a cell.
func (a *analyzer) report(code string, owner int, format string, args ...any) {
	a.add(code, owner, GridPoint{}, false, format, args)
}

// reportAt records a problem at cell c.
func (a *analyzer) reportAt(code string, owner int, c GridPoint, format string, args ...any) {
	a.add(code, owner, c, true, format, args)
}

// add records the first problem per (code, owner), up to MaxProblems.
func (a *analyzer) add(code string, owner int, cell GridPoint, hasCell bool, format string, args []any) {
	for _, k := range a.seen {
		if k.code == code && k.owner == owner {
			return
		}
	}
	if len(a.problems) == MaxProblems {
		a.problems = append(a.problems, MapProblem{
			Code:    ProblemTruncated,
			Message: fmt.Sprintf("more than %d problems; the rest are not listed", MaxProblems),
		})
	}
	if len(a.problems) > MaxProblems {
		return
	}
	a.seen = append(a.seen, problemKey{code, owner})
	p := MapProblem{Code: code, Message: fmt.Sprintf(format, args...)}
	if hasCell {
		p.Cell = &cell
	}
	a.problems = append(a.problems, p)
}

func (a *analyzer) reset(w, h int) {
	a.w, a.h, a.pw = w, h, w+2
	n := (w + 2) * (h + 2)
	if cap(a.flags) < n {
		a.flags = make([]uint16, n)
		a.zone = make([]int16, n)
		a.mark = make([]uint32, n)
		a.queue = make([]int32, 0, n)
		a.stamp = 0
	} else {
		a.flags = a.flags[:n]
		a.zone = a.zone[:n]
		a.mark = a.mark[:n]
		clear(a.flags)
		clear(a.zone)
	}
	a.queue, a.queue2 = a.queue[:0], a.queue2[:0]
	a.problems = a.problems[:0]
	a.seen = a.seen[:0]
	a.laneCells = [MaxLanes]int{}
	a.paths, a.shared, a.overlaps, a.builds = 0, 0, 0, 0
}

// nextStamp starts a new search over mark.
func (a *analyzer) nextStamp() uint32 {
	a.stamp++
	if a.stamp == 0 {
		clear(a.mark[:cap(a.mark)])
		a.stamp = 1
	}
	return a.stamp
}

func (a *analyzer) in(p GridPoint) bool {
	return p.X >= 0 && p.Y >= 0 && p.X < a.w && p.Y < a.h
}

// at returns the padded index of an in-bounds cell.
func (a *analyzer) at(p GridPoint) int { return (p.Y+1)*a.pw + p.X + 1 }

// point returns the cell at a padded index.
func (a *analyzer) point(i int) GridPoint { return GridPoint{i%a.pw - 1, i/a.pw - 1} }

func (a *analyzer) analyze(l *MapLayout) MapLayoutAnalysis {
	res := MapLayoutAnalysis{Routes: []RouteLength{}}
	if l.Width < 1 || l.Height < 1 || l.Width > MaxDimension || l.Height > MaxDimension {
		res.Problems = []MapProblem{{
			Code:    ProblemDimensionsInvalid,
			Message: fmt.Sprintf("width and height must be between 1 and %d, got %d×%d", MaxDimension, l.Width, l.Height),
		}}
		return res
	}
	if len(l.Lanes) > MaxLanes {
		res.Problems = []MapProblem{{
			Code:    ProblemTooManyLanes,
			Message: fmt.Sprintf("at most %d lanes are allowed, got %d", MaxLanes, len(l.Lanes)),
		}}
		return res
	}
	a.reset(l.Width, l.Height)

	if l.Version < 1 || l.Version > Version {
		a.report(ProblemVersionUnsupported, ownerLayout, "version %d is not between 1 and %d", l.Version, Version)
	}
	if p, ok := l.Size.preset(); !ok {
		a.report(ProblemSizeUnknown, ownerLayout, "size %q is neither %q nor %q", l.Size, Short, Long)
	} else if p.Width != l.Width || p.Height != l.Height || p.Lanes != len(l.Lanes) {
		a.report(ProblemSizeMismatch, ownerLayout, "a %s map is %d×%d with %d lanes, got %d×%d with %d",
			l.Size, p.Width, p.Height, p.Lanes, l.Width, l.Height, len(l.Lanes))
	}
	if len(l.Lanes) == 0 {
		a.report(ProblemNoLanes, ownerLayout, "the layout has no lanes")
	}

	// Lane cells first: every later check refers to them.
	maxWidth := min(l.Width, l.Height)
	for i := range l.Lanes {
		ln := &l.Lanes[i]
		if ln.ID != i {
			a.report(ProblemLaneIDMismatch, i, "lane %d has id %d", i, ln.ID)
		}
		if ln.Width < 2 || ln.Width > maxWidth {
			a.report(ProblemLaneWidthInvalid, i, "lane %d has width %d; it must be between 2 and %d", i, ln.Width, maxWidth)
		}
		a.laneCells[i] = a.markList(ln.Cells, uint16(1)<<i, i, listName{"lane", i})
	}
	for i := range l.Lanes {
		ln := &l.Lanes[i]
		a.checkPoint(ln.Spawn, i, "spawn")
		a.checkPoint(ln.Goal, i, "goal")
		for _, c := range ln.Centerline {
			if !a.in(c) {
				a.reportAt(ProblemCellOutOfBounds, i, c, "lane %d centerline point (%d,%d) is outside the %d×%d grid", i, c.X, c.Y, a.w, a.h)
				break
			}
		}
		if ln.Width >= 2 && ln.Width <= maxWidth {
			if c, ok := a.squareOff(ln.Spawn, ln.Width, i); !ok {
				a.reportAt(ProblemSpawnOffLane, i, c, "lane %d spawn footprint (%d×%d at (%d,%d)) is not all lane cells", i, ln.Width, ln.Width, ln.Spawn.X, ln.Spawn.Y)
			}
			if c, ok := a.squareOff(ln.Goal, ln.Width, i); !ok {
				a.reportAt(ProblemGoalOffLane, i, c, "lane %d goal footprint (%d×%d at (%d,%d)) is not all lane cells", i, ln.Width, ln.Width, ln.Goal.X, ln.Goal.Y)
			}
			a.checkCenterline(ln, i)
		}
	}
	a.overlaps = a.markList(l.OverlapCells, flagOverlap, ownerOverlap, listName{"overlap", 0})
	a.checkZones(l)

	res.PathCellCount, res.OverlapCellCount, res.BuildCellCount = a.paths, a.shared, a.builds
	// The overlap list is exact when its distinct cells are all shared and
	// as many as the shared cells; only otherwise scan for the culprit.
	listedShared := 0
	for _, c := range l.OverlapCells {
		if a.in(c) {
			if f := a.flags[a.at(c)]; f&laneMask&(f&laneMask-1) != 0 {
				listedShared++
			}
		}
	}
	if listedShared != a.overlaps || a.overlaps != a.shared {
		a.findOverlapMismatch()
	}

	res.Routes = make([]RouteLength, len(l.Lanes))
	lengths := make([]int, 2*len(l.Lanes))
	for i := range l.Lanes {
		ln := &l.Lanes[i]
		r := RouteLength{LaneID: i}
		if small, ok := a.smallRoute(ln, i); ok {
			lengths[2*i] = small
			r.SmallUnitLength = &lengths[2*i]
		} else {
			a.report(ProblemNoSmallRoute, i, "lane %d has no route for a small unit from spawn (%d,%d) to goal (%d,%d)", i, ln.Spawn.X, ln.Spawn.Y, ln.Goal.X, ln.Goal.Y)
		}
		if large, ok := a.largeRoute(ln, i); ok {
			lengths[2*i+1] = large
			r.LargeUnitLength = &lengths[2*i+1]
		} else {
			a.report(ProblemNoLargeRoute, i, "lane %d has no route for a large unit from spawn (%d,%d) to goal (%d,%d)", i, ln.Spawn.X, ln.Spawn.Y, ln.Goal.X, ln.Goal.Y)
		}
		a.unsee()
		res.Routes[i] = r
	}

	if len(a.problems) == 0 {
		res.Valid = true
		res.Problems = []MapProblem{}
	} else {
		res.Problems = append([]MapProblem(nil), a.problems...)
	}
	return res
}

// markList sets bit on every in-bounds cell of list, reports bounds, order
// and duplicate problems for the list, each at most once, and returns the
// number of distinct in-bounds cells.
func (a *analyzer) markList(list []GridPoint, bit uint16, owner int, what listName) (distinct int) {
	f, w, h, pw := a.flags, a.w, a.h, a.pw
	paths, shared := 0, 0
	prev := -1
	sortReported, dupReported, boundsReported := false, false, false
	for _, c := range list {
		if c.X < 0 || c.Y < 0 || c.X >= w || c.Y >= h {
			if !boundsReported {
				boundsReported = true
				a.reportAt(ProblemCellOutOfBounds, owner, c, "%s: (%d,%d) is outside the %d×%d grid", what, c.X, c.Y, a.w, a.h)
			}
			continue
		}
		idx := (c.Y+1)*pw + c.X + 1
		old := f[idx]
		if old&bit != 0 && !dupReported {
			dupReported = true
			a.reportAt(ProblemCellDuplicate, owner, c, "%s: (%d,%d) is listed twice", what, c.X, c.Y)
		}
		if idx < prev && !sortReported {
			sortReported = true
			a.reportAt(ProblemCellsNotSorted, owner, c, "%s: (%d,%d) is out of row-major order", what, c.X, c.Y)
		}
		prev = idx
		if old&bit != 0 {
			continue
		}
		distinct++
		if lanes := old & laneMask; lanes == 0 {
			paths++
		} else if lanes&(lanes-1) == 0 {
			shared++ // a second lane claims the cell
		}
		f[idx] = old | bit
	}
	if bit&laneMask != 0 {
		a.paths += paths
		a.shared += shared
	}
	return distinct
}

// findOverlapMismatch reports the first cell, row-major, where the overlap
// list and the lanes disagree.
func (a *analyzer) findOverlapMismatch() {
	for idx, f := range a.flags {
		lanes := f & laneMask
		shared := lanes&(lanes-1) != 0
		if shared == (f&flagOverlap != 0) {
			continue
		}
		c := a.point(idx)
		switch {
		case shared:
			a.reportAt(ProblemOverlapMismatch, ownerOverlap, c, "cell (%d,%d) is in %d lanes but not listed in overlapCells", c.X, c.Y, bits.OnesCount16(lanes))
		case lanes == 0:
			a.reportAt(ProblemOverlapMismatch, ownerOverlap, c, "cell (%d,%d) is listed in overlapCells but is in no lane", c.X, c.Y)
		default:
			a.reportAt(ProblemOverlapMismatch, ownerOverlap, c, "cell (%d,%d) is listed in overlapCells but is in 1 lane", c.X, c.Y)
		}
		return
	}
}

func (a *analyzer) checkPoint(p GridPoint, lane int, what string) {
	if !a.in(p) {
		a.reportAt(ProblemCellOutOfBounds, lane, p, "lane %d %s (%d,%d) is outside the %d×%d grid", lane, what, p.X, p.Y, a.w, a.h)
	}
}

// squareOff reports whether the w×w square at p lies on lane cells; if not,
// it returns the first cell that does not.
func (a *analyzer) squareOff(p GridPoint, w, lane int) (GridPoint, bool) {
	bit := uint16(1) << lane
	if !a.in(p) {
		return p, false
	}
	for dy := range w {
		for dx := range w {
			c := GridPoint{p.X + dx, p.Y + dy}
			if !a.in(c) || a.flags[a.at(c)]&bit == 0 {
				return c, false
			}
		}
	}
	return GridPoint{}, true
}

func (a *analyzer) checkCenterline(ln *PathLane, i int) {
	cl := ln.Centerline
	switch {
	case len(cl) == 0:
		a.report(ProblemCenterlineBroken, i, "lane %d has an empty centerline", i)
		return
	case cl[0] != ln.Spawn:
		a.reportAt(ProblemCenterlineBroken, i, cl[0], "lane %d centerline starts at (%d,%d), not at the spawn (%d,%d)", i, cl[0].X, cl[0].Y, ln.Spawn.X, ln.Spawn.Y)
		return
	case cl[len(cl)-1] != ln.Goal:
		c := cl[len(cl)-1]
		a.reportAt(ProblemCenterlineBroken, i, c, "lane %d centerline ends at (%d,%d), not at the goal (%d,%d)", i, c.X, c.Y, ln.Goal.X, ln.Goal.Y)
		return
	}
	// A square test costs Width² lookups; for wide lanes a summed-area
	// table makes it O(1), so the work stays bounded by the grid.
	wide := ln.Width > 4
	if wide {
		a.buildSAT(uint16(1) << i)
	}
	bit := uint16(1) << i
	st := a.nextStamp()
	for k, p := range cl {
		if k > 0 {
			d := abs(p.X-cl[k-1].X) + abs(p.Y-cl[k-1].Y)
			if d != 1 {
				a.reportAt(ProblemCenterlineBroken, i, p, "lane %d centerline jumps from (%d,%d) to (%d,%d)", i, cl[k-1].X, cl[k-1].Y, p.X, p.Y)
				return
			}
		}
		if !a.in(p) || p.X+ln.Width > a.w || p.Y+ln.Width > a.h {
			a.reportAt(ProblemCenterlineBroken, i, p, "lane %d centerline square at (%d,%d) leaves the grid", i, p.X, p.Y)
			return
		}
		idx := a.at(p)
		if a.mark[idx] == st {
			a.reportAt(ProblemCenterlineBroken, i, p, "lane %d centerline visits (%d,%d) twice", i, p.X, p.Y)
			return
		}
		a.mark[idx] = st
		if wide {
			if a.satSum(p, ln.Width) == int32(ln.Width*ln.Width) {
				continue
			}
		} else {
			// After a step only the edge the square moved onto is new.
			x0, x1, y0, y1 := 0, ln.Width, 0, ln.Width
			if k > 0 {
				switch {
				case p.X > cl[k-1].X:
					x0 = ln.Width - 1
				case p.X < cl[k-1].X:
					x1 = 1
				case p.Y > cl[k-1].Y:
					y0 = ln.Width - 1
				default:
					y1 = 1
				}
			}
			ok := true
			for dy := y0; dy < y1; dy++ {
				row := idx + dy*a.pw
				for dx := x0; dx < x1; dx++ {
					ok = ok && a.flags[row+dx]&bit != 0
				}
			}
			if ok {
				continue
			}
		}
		c, _ := a.squareOff(p, ln.Width, i)
		a.reportAt(ProblemCenterlineBroken, i, c, "lane %d centerline square at (%d,%d) leaves the lane at (%d,%d)", i, p.X, p.Y, c.X, c.Y)
		return
	}
}

// buildSAT fills the summed-area table of the cells carrying bit.
func (a *analyzer) buildSAT(bit uint16) {
	w, h := a.w, a.h
	n := (w + 1) * (h + 1)
	if cap(a.sat) < n {
		a.sat = make([]int32, n)
	}
	a.sat = a.sat[:n]
	clear(a.sat[:w+1])
	for y := range h {
		row := (y + 1) * (w + 1)
		a.sat[row] = 0
		var run int32
		for x := range w {
			if a.flags[(y+1)*a.pw+x+1]&bit != 0 {
				run++
			}
			a.sat[row+x+1] = a.sat[row-(w+1)+x+1] + run
		}
	}
}

// satSum counts the marked cells of the s×s square at p (inside the grid).
func (a *analyzer) satSum(p GridPoint, s int) int32 {
	W := a.w + 1
	x0, y0, x1, y1 := p.X, p.Y, p.X+s, p.Y+s
	return a.sat[y1*W+x1] - a.sat[y0*W+x1] - a.sat[y1*W+x0] + a.sat[y0*W+x0]
}

func (a *analyzer) checkZones(l *MapLayout) {
	for z := range l.BuildZones {
		bz := &l.BuildZones[z]
		owner := zoneOwner + z
		if bz.ID != z {
			a.report(ProblemBuildZoneIDMismatch, owner, "build zone %d has id %d", z, bz.ID)
		}
		if len(bz.Cells) == 0 {
			a.report(ProblemBuildZoneEmpty, owner, "build zone %d has no cells", z)
			continue
		}
		what := listName{"zone", z}
		zid := int16(z + 1)
		prev := -1
		var touching uint16
		first, distinct := -1, 0
		sortReported, dupReported := false, false
		f, zone, w, h, pw := a.flags, a.zone, a.w, a.h, a.pw
		for _, c := range bz.Cells {
			if c.X < 0 || c.Y < 0 || c.X >= w || c.Y >= h {
				a.reportAt(ProblemCellOutOfBounds, owner, c, "%s: (%d,%d) is outside the %d×%d grid", what, c.X, c.Y, a.w, a.h)
				continue
			}
			idx := (c.Y+1)*pw + c.X + 1
			switch zone[idx] {
			case 0:
				zone[idx] = zid
				f[idx] |= flagBuild
				distinct++
				if first < 0 {
					first = idx
				}
			case zid:
				if !dupReported {
					dupReported = true
					a.reportAt(ProblemCellDuplicate, owner, c, "%s: (%d,%d) is listed twice", what, c.X, c.Y)
				}
			default:
				a.reportAt(ProblemBuildZonesOverlap, owner, c, "build zone %d: (%d,%d) already belongs to build zone %d", z, c.X, c.Y, a.zone[idx]-1)
			}
			if idx < prev && !sortReported {
				sortReported = true
				a.reportAt(ProblemCellsNotSorted, owner, c, "%s: (%d,%d) is out of row-major order", what, c.X, c.Y)
			}
			prev = idx
			if f[idx]&laneMask != 0 {
				a.reportAt(ProblemBuildCellOnPath, owner, c, "build zone %d: (%d,%d) is a lane cell", z, c.X, c.Y)
			}
			near := (f[idx-pw-1] | f[idx-pw] | f[idx-pw+1] | f[idx-1] | f[idx+1] | f[idx+pw-1] | f[idx+pw] | f[idx+pw+1]) & laneMask
			if near == 0 {
				a.reportAt(ProblemBuildCellDetached, owner, c, "build zone %d: (%d,%d) touches no lane cell", z, c.X, c.Y)
			}
			touching |= near
		}
		a.builds += distinct
		if first >= 0 && a.zoneReach(first, zid) != distinct {
			for _, c := range bz.Cells {
				if a.in(c) && a.zone[a.at(c)] == zid && a.flags[a.at(c)]&flagSeen == 0 {
					a.reportAt(ProblemBuildZoneNotConnected, owner, c, "build zone %d: (%d,%d) is not 4-connected to the rest of the zone", z, c.X, c.Y)
					break
				}
			}
		}
		if first >= 0 {
			a.unsee()
		}
		var listed uint16
		ok := true
		for k, id := range bz.LaneIDs {
			if id < 0 || id >= len(l.Lanes) || (k > 0 && id <= bz.LaneIDs[k-1]) {
				ok = false
				break
			}
			listed |= 1 << id
		}
		if !ok || listed != touching {
			a.report(ProblemBuildZoneLanes, owner, "build zone %d: laneIds %v; the lanes touching it are %v", z, bz.LaneIDs, laneList(touching))
		}
	}
}

// zoneReach counts the cells of zone z 4-connected to start. It leaves them
// marked flagSeen; the caller clears the marks with unsee.
func (a *analyzer) zoneReach(start int, z int16) int {
	f, zone, pw := a.flags, a.zone, a.pw
	q := append(a.queue[:0], int32(start))
	f[start] |= flagSeen
	for head := 0; head < len(q); head++ {
		i := int(q[head])
		for _, j := range [4]int{i - 1, i + 1, i - pw, i + pw} {
			if zone[j] == z && f[j]&flagSeen == 0 {
				f[j] |= flagSeen
				q = append(q, int32(j))
			}
		}
	}
	a.queue = q
	return len(q)
}

// unsee clears the search bits from the cells of the last search (for a
// lane, the small-unit search visits every cell the large one can).
func (a *analyzer) unsee() {
	f := a.flags
	for _, i := range a.queue {
		f[i] &^= flagSeen | flagAnchor | flagSeen2
	}
}

// smallRoute measures the 1×1 route of lane i and reports lane cells the
// spawn cannot reach. It leaves its search bits (and flagAnchor) on the
// cells in a.queue for largeRoute; the caller clears them with unsee.
func (a *analyzer) smallRoute(ln *PathLane, lane int) (int, bool) {
	a.queue = a.queue[:0] // nothing for unsee to clear if we return early
	bit := uint16(1) << lane
	if !a.in(ln.Spawn) || !a.in(ln.Goal) {
		return 0, false
	}
	start, goal := a.at(ln.Spawn), a.at(ln.Goal)
	if a.flags[start]&bit == 0 {
		return 0, false
	}
	q := append(a.queue[:0], int32(start))
	f := a.flags
	f[start] |= flagSeen
	pw := a.pw
	steps, levelEnd, found := 0, 1, -1
	for head := 0; head < len(q); head++ {
		if head == levelEnd {
			steps++
			levelEnd = len(q)
		}
		i := int(q[head])
		if i == goal {
			found = steps
		}
		// Note where a large unit fits, for largeRoute: only cells this
		// search reaches can hold a reachable 2×2 square.
		if f[i+1]&f[i+pw]&f[i+pw+1]&bit != 0 {
			f[i] |= flagAnchor
		}
		for _, j := range [4]int{i - 1, i + 1, i - pw, i + pw} {
			if f[j]&(bit|flagSeen) == bit {
				f[j] |= flagSeen
				q = append(q, int32(j))
			}
		}
	}
	a.queue = q
	if len(q) != a.laneCells[lane] {
		for _, c := range ln.Cells {
			if a.in(c) && f[a.at(c)]&flagSeen == 0 {
				a.reportAt(ProblemLaneNotConnected, lane, c, "lane %d: cell (%d,%d) cannot be reached from the spawn", lane, c.X, c.Y)
				break
			}
		}
	}
	return found, found >= 0
}

// largeRoute measures the 2×2 route of lane i over the top-left anchors
// smallRoute marked. Its queue is separate, so the small search's cells stay
// listed in a.queue for unsee.
func (a *analyzer) largeRoute(ln *PathLane, i int) (int, bool) {
	if !a.in(ln.Spawn) || !a.in(ln.Goal) {
		return 0, false
	}
	f, pw := a.flags, a.pw
	start, goal := a.at(ln.Spawn), a.at(ln.Goal)
	if f[start]&flagAnchor == 0 || f[goal]&flagAnchor == 0 {
		return 0, false
	}
	q := append(a.queue2[:0], int32(start))
	f[start] |= flagSeen2
	steps, levelEnd := 0, 1
	for head := 0; head < len(q); head++ {
		if head == levelEnd {
			steps++
			levelEnd = len(q)
		}
		i := int(q[head])
		if i == goal {
			a.queue2 = q
			return steps, true
		}
		for _, j := range [4]int{i - 1, i + 1, i - pw, i + pw} {
			if f[j]&(flagAnchor|flagSeen2) == flagAnchor {
				f[j] |= flagSeen2
				q = append(q, int32(j))
			}
		}
	}
	a.queue2 = q
	return 0, false
}

// listName names a cell list in problem messages, formatted only when a
// problem is reported.
type listName struct {
	kind string
	i    int
}

func (n listName) String() string {
	switch n.kind {
	case "lane":
		return fmt.Sprintf("lane %d cells", n.i)
	case "zone":
		return fmt.Sprintf("build zone %d cells", n.i)
	}
	return "overlapCells"
}

func laneList(m uint16) []int {
	out := []int{}
	for m != 0 {
		out = append(out, bits.TrailingZeros16(m))
		m &= m - 1
	}
	return out
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}
