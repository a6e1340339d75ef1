package gamemap

// Version identifies the generation algorithm. The same (size, seed, Version)
// always yields byte-identical JSON; Version is bumped whenever a change to
// the algorithm changes any generated layout on purpose.
const Version = 1

// GridPoint is one cell of the grid: X is the column counted from the left,
// Y the row counted from the top, both from 0.
type GridPoint struct {
	X int `json:"x"`
	Y int `json:"y"`
}

// PathLane is one enemy lane: a corridor Width cells wide that runs from the
// spawn to the goal. Spawn and Goal are the top-left cells of Width×Width
// footprints; Centerline lists the top-left anchors of the corridor's
// squares in walking order; Cells is the corridor, sorted row-major.
type PathLane struct {
	ID         int         `json:"id"`
	Width      int         `json:"width"`
	Spawn      GridPoint   `json:"spawn"`
	Goal       GridPoint   `json:"goal"`
	Centerline []GridPoint `json:"centerline"`
	Cells      []GridPoint `json:"cells"`
}

// BuildZone is a 4-connected group of build cells beside one or more lanes.
// LaneIDs lists, ascending, the lanes whose cells touch the zone (8-adjacent).
type BuildZone struct {
	ID      int         `json:"id"`
	LaneIDs []int       `json:"laneIds"`
	Cells   []GridPoint `json:"cells"`
}

// MapLayout is a generated (or hand-edited) map. Seed is encoded as a decimal
// string because JSON numbers above 2^53 lose precision in JavaScript clients.
type MapLayout struct {
	Version      int         `json:"version"`
	Size         Size        `json:"size"`
	Seed         uint64      `json:"seed,string"`
	Width        int         `json:"width"`
	Height       int         `json:"height"`
	Lanes        []PathLane  `json:"lanes"`
	OverlapCells []GridPoint `json:"overlapCells"`
	BuildZones   []BuildZone `json:"buildZones"`
}

// MapLayoutAnalysis is what Analyze reports about a layout. Valid is true
// exactly when Problems is empty.
type MapLayoutAnalysis struct {
	PathCellCount    int           `json:"pathCellCount"`
	BuildCellCount   int           `json:"buildCellCount"`
	OverlapCellCount int           `json:"overlapCellCount"`
	Routes           []RouteLength `json:"routes"`
	Valid            bool          `json:"valid"`
	Problems         []MapProblem  `json:"problems"`
}

// RouteLength gives, for one lane, the number of 4-neighbour steps of the
// shortest route from spawn to goal over the lane's own cells for a small
// (1×1) and a large (2×2, anchored at its top-left cell) unit; nil when no
// such route exists.
type RouteLength struct {
	LaneID          int  `json:"laneId"`
	SmallUnitLength *int `json:"smallUnitLength"`
	LargeUnitLength *int `json:"largeUnitLength"`
}

// MapProblem is one reason a layout is not valid. Code is stable (see the
// Problem* constants); Message is for people; Cell, when set, points at the
// first offending cell.
type MapProblem struct {
	Code    string     `json:"code"`
	Message string     `json:"message"`
	Cell    *GridPoint `json:"cell,omitempty"`
}

// Less orders points row-major: by row, then by column. Every cell list in a
// layout is sorted this way.
func (p GridPoint) Less(q GridPoint) bool {
	if p.Y != q.Y {
		return p.Y < q.Y
	}
	return p.X < q.X
}
