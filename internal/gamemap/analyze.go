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
	flagFootstep = 1 << (MaxLanes + 2) // inside some spawn or goal footprint
)

// Analyze checks a layout and measures its routes. It accepts any layout,
// including hand-edited or hostile ones: it never panics, its work is bounded
// by MaxDimension, MaxLanes and the length of the layout's lists, and every
// finding is a Problem with a stable code. It is safe for concurrent use.
func Analyze(l MapLayout) MapLayoutAnalysis {
	a := analyzerPool.Get().(*analyzer)
	res := a.analyze(&l)
	analyzerPool.Put(a)
	return res
}

var analyzerPool = sync.Pool{New: func() any { return new(analyzer) }}

// analyzer holds the scratch space of one analysis, reused across calls.
type analyzer struct {
	w, h     int
	flags    []uint16 // per cell: lane bits and flag* bits
	zone     []int16  // per cell: build zone index + 1, 0 for none
	mark     []uint32 // per cell: visit stamp of the current search
	dist     []int32  // per cell: distance, valid where mark == stamp
	stamp    uint32
	queue    []int32
	sat      []int32 // summed-area table for wide centerline squares
	problems []Problem
	seen     []problemKey
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

func (a *analyzer) report(code string, owner int, cell *GridPoint, format string, args ...any) {
	for _, k := range a.seen {
		if k.code == code && k.owner == owner {
			return
		}
	}
	if len(a.problems) == MaxProblems {
		a.problems = append(a.problems, Problem{
			Code:    ProblemTruncated,
			Message: fmt.Sprintf("more than %d problems; the rest are not listed", MaxProblems),
		})
	}
	if len(a.problems) > MaxProblems {
		return
	}
	a.seen = append(a.seen, problemKey{code, owner})
	p := Problem{Code: code, Message: fmt.Sprintf(format, args...)}
	if cell != nil {
		c := *cell
		p.Cell = &c
	}
	a.problems = append(a.problems, p)
}

func (a *analyzer) reset(w, h int) {
	a.w, a.h = w, h
	n := w * h
	if cap(a.flags) < n {
		a.flags = make([]uint16, n)
		a.zone = make([]int16, n)
		a.mark = make([]uint32, n)
		a.dist = make([]int32, n)
		a.queue = make([]int32, 0, n)
		a.stamp = 0
	} else {
		a.flags = a.flags[:n]
		a.zone = a.zone[:n]
		a.mark = a.mark[:n]
		a.dist = a.dist[:n]
		clear(a.flags)
		clear(a.zone)
	}
	a.problems = a.problems[:0]
	a.seen = a.seen[:0]
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

func (a *analyzer) analyze(l *MapLayout) MapLayoutAnalysis {
	res := MapLayoutAnalysis{Routes: []RouteLength{}}
	if l.Width < 1 || l.Height < 1 || l.Width > MaxDimension || l.Height > MaxDimension {
		res.Problems = []Problem{{
			Code:    ProblemDimensionsInvalid,
			Message: fmt.Sprintf("width and height must be between 1 and %d, got %d×%d", MaxDimension, l.Width, l.Height),
		}}
		return res
	}
	if len(l.Lanes) > MaxLanes {
		res.Problems = []Problem{{
			Code:    ProblemTooManyLanes,
			Message: fmt.Sprintf("at most %d lanes are allowed, got %d", MaxLanes, len(l.Lanes)),
		}}
		return res
	}
	a.reset(l.Width, l.Height)

	if l.Version < 1 || l.Version > Version {
		a.report(ProblemVersionUnsupported, ownerLayout, nil, "version %d is not between 1 and %d", l.Version, Version)
	}
	if p, ok := l.Size.preset(); !ok {
		a.report(ProblemSizeUnknown, ownerLayout, nil, "size %q is neither %q nor %q", l.Size, Short, Long)
	} else if p.Width != l.Width || p.Height != l.Height || p.Lanes != len(l.Lanes) {
		a.report(ProblemSizeMismatch, ownerLayout, nil, "a %s map is %d×%d with %d lanes, got %d×%d with %d",
			l.Size, p.Width, p.Height, p.Lanes, l.Width, l.Height, len(l.Lanes))
	}
	if len(l.Lanes) == 0 {
		a.report(ProblemNoLanes, ownerLayout, nil, "the layout has no lanes")
	}

	// Lane cells first: every later check refers to them.
	for i := range l.Lanes {
		ln := &l.Lanes[i]
		if ln.ID != i {
			a.report(ProblemLaneIDMismatch, i, nil, "lane %d has id %d", i, ln.ID)
		}
		if ln.Width < 2 || ln.Width > min(l.Width, l.Height) {
			a.report(ProblemLaneWidthInvalid, i, nil, "lane %d has width %d; it must be between 2 and %d", i, ln.Width, min(l.Width, l.Height))
		}
		a.markList(ln.Cells, uint16(1)<<i, i, fmt.Sprintf("lane %d cells", i))
	}
	for i := range l.Lanes {
		ln := &l.Lanes[i]
		a.checkPoint(ln.Spawn, i, "spawn", i)
		a.checkPoint(ln.Goal, i, "goal", i)
		for _, c := range ln.Centerline {
			if !a.in(c) {
				a.report(ProblemCellOutOfBounds, i, &c, "lane %d centerline point (%d,%d) is outside the %d×%d grid", i, c.X, c.Y, a.w, a.h)
				break
			}
		}
		if ln.Width >= 2 && ln.Width <= min(l.Width, l.Height) {
			if c, ok := a.squareOff(ln.Spawn, ln.Width, i); !ok {
				a.report(ProblemSpawnOffLane, i, c, "lane %d spawn footprint (%d×%d at (%d,%d)) is not all lane cells", i, ln.Width, ln.Width, ln.Spawn.X, ln.Spawn.Y)
			} else {
				a.markSquare(ln.Spawn, ln.Width)
			}
			if c, ok := a.squareOff(ln.Goal, ln.Width, i); !ok {
				a.report(ProblemGoalOffLane, i, c, "lane %d goal footprint (%d×%d at (%d,%d)) is not all lane cells", i, ln.Width, ln.Width, ln.Goal.X, ln.Goal.Y)
			} else {
				a.markSquare(ln.Goal, ln.Width)
			}
			a.checkCenterline(ln, i)
		}
	}

	a.markList(l.OverlapCells, flagOverlap, ownerOverlap, "overlapCells")
	a.checkZones(l)

	// One pass over the grid: counts and the overlap list.
	overlapReported := false
	for idx, f := range a.flags {
		lanes := f & laneMask
		if lanes != 0 {
			res.PathCellCount++
		}
		if a.zone[idx] != 0 {
			res.BuildCellCount++
		}
		shared := bits.OnesCount16(lanes) >= 2
		if shared {
			res.OverlapCellCount++
		}
		if !overlapReported && shared != (f&flagOverlap != 0) {
			overlapReported = true
			c := GridPoint{idx % a.w, idx / a.w}
			if shared {
				a.report(ProblemOverlapMismatch, ownerOverlap, &c, "cell (%d,%d) is in %d lanes but not listed in overlapCells", c.X, c.Y, bits.OnesCount16(lanes))
			} else {
				a.report(ProblemOverlapMismatch, ownerOverlap, &c, "cell (%d,%d) is listed in overlapCells but is in %d lanes", c.X, c.Y, bits.OnesCount16(lanes))
			}
		}
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
			a.report(ProblemNoSmallRoute, i, nil, "lane %d has no route for a small unit from spawn (%d,%d) to goal (%d,%d)", i, ln.Spawn.X, ln.Spawn.Y, ln.Goal.X, ln.Goal.Y)
		}
		if large, ok := a.largeRoute(ln, i); ok {
			lengths[2*i+1] = large
			r.LargeUnitLength = &lengths[2*i+1]
		} else {
			a.report(ProblemNoLargeRoute, i, nil, "lane %d has no route for a large unit from spawn (%d,%d) to goal (%d,%d)", i, ln.Spawn.X, ln.Spawn.Y, ln.Goal.X, ln.Goal.Y)
		}
		res.Routes[i] = r
	}

	if len(a.problems) == 0 {
		res.Valid = true
		res.Problems = []Problem{}
	} else {
		res.Problems = append([]Problem(nil), a.problems...)
	}
	return res
}

// markList sets bit on every in-bounds cell of list and reports bounds, order
// and duplicate problems for the list, each at most once.
func (a *analyzer) markList(list []GridPoint, bit uint16, owner int, what string) {
	prev := -1
	sortReported, dupReported, boundsReported := false, false, false
	for i := range list {
		c := list[i]
		if !a.in(c) {
			if !boundsReported {
				boundsReported = true
				a.report(ProblemCellOutOfBounds, owner, &c, "%s: (%d,%d) is outside the %d×%d grid", what, c.X, c.Y, a.w, a.h)
			}
			continue
		}
		idx := c.Y*a.w + c.X
		if a.flags[idx]&bit != 0 {
			if !dupReported {
				dupReported = true
				a.report(ProblemCellDuplicate, owner, &c, "%s: (%d,%d) is listed twice", what, c.X, c.Y)
			}
		}
		if idx < prev && !sortReported {
			sortReported = true
			a.report(ProblemCellsNotSorted, owner, &c, "%s: (%d,%d) is out of row-major order", what, c.X, c.Y)
		}
		prev = idx
		a.flags[idx] |= bit
	}
}

func (a *analyzer) checkPoint(p GridPoint, lane int, what string, owner int) {
	if !a.in(p) {
		a.report(ProblemCellOutOfBounds, owner, &p, "lane %d %s (%d,%d) is outside the %d×%d grid", lane, what, p.X, p.Y, a.w, a.h)
	}
}

// squareOff reports whether the w×w square at p lies on lane cells; if not,
// it returns the first cell that does not.
func (a *analyzer) squareOff(p GridPoint, w, lane int) (*GridPoint, bool) {
	bit := uint16(1) << lane
	for dy := range w {
		for dx := range w {
			c := GridPoint{p.X + dx, p.Y + dy}
			if !a.in(c) || a.flags[c.Y*a.w+c.X]&bit == 0 {
				return &c, false
			}
		}
	}
	return nil, true
}

func (a *analyzer) markSquare(p GridPoint, w int) {
	for dy := range w {
		row := (p.Y + dy) * a.w
		for dx := range w {
			a.flags[row+p.X+dx] |= flagFootstep
		}
	}
}

func (a *analyzer) checkCenterline(ln *PathLane, i int) {
	cl := ln.Centerline
	switch {
	case len(cl) == 0:
		a.report(ProblemCenterlineBroken, i, nil, "lane %d has an empty centerline", i)
		return
	case cl[0] != ln.Spawn:
		a.report(ProblemCenterlineBroken, i, &cl[0], "lane %d centerline starts at (%d,%d), not at the spawn (%d,%d)", i, cl[0].X, cl[0].Y, ln.Spawn.X, ln.Spawn.Y)
		return
	case cl[len(cl)-1] != ln.Goal:
		c := cl[len(cl)-1]
		a.report(ProblemCenterlineBroken, i, &c, "lane %d centerline ends at (%d,%d), not at the goal (%d,%d)", i, c.X, c.Y, ln.Goal.X, ln.Goal.Y)
		return
	}
	// A square test costs Width² lookups; for wide lanes a summed-area
	// table makes it O(1), so the work stays bounded by the grid.
	wide := ln.Width > 4
	if wide {
		a.buildSAT(uint16(1) << i)
	}
	st := a.nextStamp()
	for k := range cl {
		p := cl[k]
		if k > 0 {
			d := abs(p.X-cl[k-1].X) + abs(p.Y-cl[k-1].Y)
			if d != 1 {
				a.report(ProblemCenterlineBroken, i, &cl[k], "lane %d centerline jumps from (%d,%d) to (%d,%d)", i, cl[k-1].X, cl[k-1].Y, p.X, p.Y)
				return
			}
		}
		if !a.in(p) || p.X+ln.Width > a.w || p.Y+ln.Width > a.h {
			a.report(ProblemCenterlineBroken, i, &cl[k], "lane %d centerline square at (%d,%d) leaves the grid", i, p.X, p.Y)
			return
		}
		idx := p.Y*a.w + p.X
		if a.mark[idx] == st {
			a.report(ProblemCenterlineBroken, i, &cl[k], "lane %d centerline visits (%d,%d) twice", i, p.X, p.Y)
			return
		}
		a.mark[idx] = st
		if wide {
			if a.satSum(p, ln.Width) != int32(ln.Width*ln.Width) {
				a.report(ProblemCenterlineBroken, i, &cl[k], "lane %d centerline square at (%d,%d) leaves the lane", i, p.X, p.Y)
				return
			}
		} else if c, ok := a.squareOff(p, ln.Width, i); !ok {
			a.report(ProblemCenterlineBroken, i, c, "lane %d centerline square at (%d,%d) leaves the lane at (%d,%d)", i, p.X, p.Y, c.X, c.Y)
			return
		}
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
			if a.flags[y*w+x]&bit != 0 {
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
			a.report(ProblemBuildZoneIDMismatch, owner, nil, "build zone %d has id %d", z, bz.ID)
		}
		if len(bz.Cells) == 0 {
			a.report(ProblemBuildZoneEmpty, owner, nil, "build zone %d has no cells", z)
			continue
		}
		what := fmt.Sprintf("build zone %d cells", z)
		prev := -1
		var touching uint16
		first := -1
		distinct := 0
		sortReported, dupReported := false, false
		for k := range bz.Cells {
			c := bz.Cells[k]
			if !a.in(c) {
				a.report(ProblemCellOutOfBounds, owner, &c, "%s: (%d,%d) is outside the %d×%d grid", what, c.X, c.Y, a.w, a.h)
				continue
			}
			idx := c.Y*a.w + c.X
			switch a.zone[idx] {
			case 0:
				a.zone[idx] = int16(z + 1)
				a.flags[idx] |= flagBuild
				distinct++
				if first < 0 {
					first = idx
				}
			case int16(z + 1):
				if !dupReported {
					dupReported = true
					a.report(ProblemCellDuplicate, owner, &c, "%s: (%d,%d) is listed twice", what, c.X, c.Y)
				}
			default:
				a.report(ProblemBuildZonesOverlap, owner, &c, "build zone %d: (%d,%d) already belongs to build zone %d", z, c.X, c.Y, a.zone[idx]-1)
			}
			if idx < prev && !sortReported {
				sortReported = true
				a.report(ProblemCellsNotSorted, owner, &c, "%s: (%d,%d) is out of row-major order", what, c.X, c.Y)
			}
			prev = idx
			if a.flags[idx]&laneMask != 0 {
				a.report(ProblemBuildCellOnPath, owner, &c, "build zone %d: (%d,%d) is a lane cell", z, c.X, c.Y)
			}
			near := a.around(c)
			if near == 0 {
				a.report(ProblemBuildCellDetached, owner, &c, "build zone %d: (%d,%d) touches no lane cell", z, c.X, c.Y)
			}
			touching |= near
		}
		if first >= 0 {
			if n, stray := a.zoneReach(first, int16(z+1), bz.Cells); n != distinct {
				a.report(ProblemBuildZoneNotConnected, owner, stray, "build zone %d: (%d,%d) is not 4-connected to the rest of the zone", z, stray.X, stray.Y)
			}
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
			a.report(ProblemBuildZoneLanes, owner, nil, "build zone %d: laneIds %v; the lanes touching it are %v", z, bz.LaneIDs, laneList(touching))
		}
	}
}

// around returns the lane bits of the 8 neighbours of c.
func (a *analyzer) around(c GridPoint) uint16 {
	var m uint16
	for dy := -1; dy <= 1; dy++ {
		y := c.Y + dy
		if y < 0 || y >= a.h {
			continue
		}
		for dx := -1; dx <= 1; dx++ {
			x := c.X + dx
			if x < 0 || x >= a.w || (dx == 0 && dy == 0) {
				continue
			}
			m |= a.flags[y*a.w+x]
		}
	}
	return m & laneMask
}

// zoneReach counts the cells of zone z 4-connected to start, and returns
// the first listed cell it did not reach.
func (a *analyzer) zoneReach(start int, z int16, cells []GridPoint) (int, *GridPoint) {
	st := a.nextStamp()
	q := a.queue[:0]
	q = append(q, int32(start))
	a.mark[start] = st
	w := a.w
	for head := 0; head < len(q); head++ {
		i := int(q[head])
		x := i % w
		if x > 0 && a.zone[i-1] == z && a.mark[i-1] != st {
			a.mark[i-1] = st
			q = append(q, int32(i-1))
		}
		if x < w-1 && a.zone[i+1] == z && a.mark[i+1] != st {
			a.mark[i+1] = st
			q = append(q, int32(i+1))
		}
		if i >= w && a.zone[i-w] == z && a.mark[i-w] != st {
			a.mark[i-w] = st
			q = append(q, int32(i-w))
		}
		if i+w < len(a.zone) && a.zone[i+w] == z && a.mark[i+w] != st {
			a.mark[i+w] = st
			q = append(q, int32(i+w))
		}
	}
	a.queue = q
	for k := range cells {
		c := cells[k]
		if a.in(c) {
			idx := c.Y*w + c.X
			if a.zone[idx] == z && a.mark[idx] != st {
				return len(q), &c
			}
		}
	}
	return len(q), nil
}

// smallRoute measures the 1×1 route of lane i and reports lane cells the
// spawn cannot reach.
func (a *analyzer) smallRoute(ln *PathLane, i int) (int, bool) {
	bit := uint16(1) << i
	if !a.in(ln.Spawn) || !a.in(ln.Goal) {
		return 0, false
	}
	w := a.w
	start := ln.Spawn.Y*w + ln.Spawn.X
	goal := ln.Goal.Y*w + ln.Goal.X
	if a.flags[start]&bit == 0 {
		return 0, false
	}
	st := a.nextStamp()
	q := a.queue[:0]
	q = append(q, int32(start))
	a.mark[start] = st
	a.dist[start] = 0
	for head := 0; head < len(q); head++ {
		i := int(q[head])
		d := a.dist[i] + 1
		x := i % w
		if x > 0 && a.flags[i-1]&bit != 0 && a.mark[i-1] != st {
			a.mark[i-1], a.dist[i-1] = st, d
			q = append(q, int32(i-1))
		}
		if x < w-1 && a.flags[i+1]&bit != 0 && a.mark[i+1] != st {
			a.mark[i+1], a.dist[i+1] = st, d
			q = append(q, int32(i+1))
		}
		if i >= w && a.flags[i-w]&bit != 0 && a.mark[i-w] != st {
			a.mark[i-w], a.dist[i-w] = st, d
			q = append(q, int32(i-w))
		}
		if i+w < len(a.flags) && a.flags[i+w]&bit != 0 && a.mark[i+w] != st {
			a.mark[i+w], a.dist[i+w] = st, d
			q = append(q, int32(i+w))
		}
	}
	a.queue = q
	for k := range ln.Cells {
		c := ln.Cells[k]
		if a.in(c) && a.mark[c.Y*w+c.X] != st {
			a.report(ProblemLaneNotConnected, i, &c, "lane %d: cell (%d,%d) cannot be reached from the spawn", i, c.X, c.Y)
			break
		}
	}
	if a.mark[goal] != st {
		return 0, false
	}
	return int(a.dist[goal]), true
}

// largeRoute measures the 2×2 route of lane i over top-left anchors whose
// four cells are all lane cells.
func (a *analyzer) largeRoute(ln *PathLane, i int) (int, bool) {
	bit := uint16(1) << i
	w, h := a.w, a.h
	ok := func(p GridPoint) bool {
		return p.X >= 0 && p.Y >= 0 && p.X < w-1 && p.Y < h-1
	}
	if !ok(ln.Spawn) || !ok(ln.Goal) {
		return 0, false
	}
	f := a.flags
	anchor := func(i int) bool {
		return f[i]&f[i+1]&f[i+w]&f[i+w+1]&bit != 0
	}
	start := ln.Spawn.Y*w + ln.Spawn.X
	goal := ln.Goal.Y*w + ln.Goal.X
	if !anchor(start) || !anchor(goal) {
		return 0, false
	}
	st := a.nextStamp()
	q := a.queue[:0]
	q = append(q, int32(start))
	a.mark[start] = st
	a.dist[start] = 0
	limit := (h - 1) * w // anchors live in rows 0..h-2
	for head := 0; head < len(q); head++ {
		i := int(q[head])
		if i == goal {
			break
		}
		d := a.dist[i] + 1
		x := i % w
		if x > 0 && a.mark[i-1] != st && anchor(i-1) {
			a.mark[i-1], a.dist[i-1] = st, d
			q = append(q, int32(i-1))
		}
		if x < w-2 && a.mark[i+1] != st && anchor(i+1) {
			a.mark[i+1], a.dist[i+1] = st, d
			q = append(q, int32(i+1))
		}
		if i >= w && a.mark[i-w] != st && anchor(i-w) {
			a.mark[i-w], a.dist[i-w] = st, d
			q = append(q, int32(i-w))
		}
		if i+w < limit && a.mark[i+w] != st && anchor(i+w) {
			a.mark[i+w], a.dist[i+w] = st, d
			q = append(q, int32(i+w))
		}
	}
	a.queue = q
	if a.mark[goal] != st {
		return 0, false
	}
	return int(a.dist[goal]), true
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
