package gamemap

import (
	"fmt"
	"math/bits"

	"github.com/towerdefence/platformctl/internal/platform"
)

// StructureKind names what a player can place on a cell.
type StructureKind string

// The structure kinds. Every structure occupies its cell: units route around
// it. A tower stands on a build cell, beside the lanes; a trap stands on a
// lane cell, so traps narrow the corridors, and a trap that would leave a
// lane without a small-unit or a large-unit route is refused.
const (
	Tower StructureKind = "tower"
	Trap  StructureKind = "trap"
)

// Placement is one structure on one cell.
type Placement struct {
	Kind StructureKind `json:"kind"`
	Cell GridPoint     `json:"cell"`
}

// Refusal is the outcome of a placement check: Accepted, or the first rule
// the placement breaks, in the order of the constants below.
type Refusal uint8

// Placement outcomes, in the order the rules are checked.
const (
	Accepted              Refusal = iota
	RefusedUnknownKind            // kind is neither tower nor trap
	RefusedOutOfBounds            // the cell is outside the grid
	RefusedOccupied               // a structure already stands on the cell
	RefusedNotBuildCell           // a tower off the build cells
	RefusedNotPathCell            // a trap off the lane cells
	RefusedSpawnOrGoal            // a trap inside a spawn or goal footprint
	RefusedCutsSmallRoute         // some lane would lose its last small-unit route
	RefusedCutsLargeRoute         // some lane would lose its last large-unit route
)

// Stable error codes of placement refusals and of ValidatePlacement.
const (
	CodePlacementUnknownKind     = "PLACEMENT_UNKNOWN_KIND"
	CodePlacementOutOfBounds     = "PLACEMENT_OUT_OF_BOUNDS"
	CodePlacementOccupied        = "PLACEMENT_OCCUPIED"
	CodePlacementNotBuildCell    = "PLACEMENT_NOT_BUILD_CELL"
	CodePlacementNotPathCell     = "PLACEMENT_NOT_PATH_CELL"
	CodePlacementSpawnOrGoal     = "PLACEMENT_ON_SPAWN_OR_GOAL"
	CodePlacementCutsSmallRoute  = "PLACEMENT_CUTS_SMALL_ROUTE"
	CodePlacementCutsLargeRoute  = "PLACEMENT_CUTS_LARGE_ROUTE"
	CodePlacementExistingInvalid = "PLACEMENT_EXISTING_INVALID" // an already placed structure breaks a rule
	CodeLayoutInvalid            = "LAYOUT_INVALID"             // the layout has analysis problems
)

var refusalText = [...]struct{ code, msg string }{
	Accepted:              {"", "accepted"},
	RefusedUnknownKind:    {CodePlacementUnknownKind, `kind must be "tower" or "trap"`},
	RefusedOutOfBounds:    {CodePlacementOutOfBounds, "the cell is outside the map"},
	RefusedOccupied:       {CodePlacementOccupied, "a structure already stands on the cell"},
	RefusedNotBuildCell:   {CodePlacementNotBuildCell, "towers go only on build cells"},
	RefusedNotPathCell:    {CodePlacementNotPathCell, "traps go only on lane cells"},
	RefusedSpawnOrGoal:    {CodePlacementSpawnOrGoal, "traps may not stand on a spawn or goal footprint"},
	RefusedCutsSmallRoute: {CodePlacementCutsSmallRoute, "the trap would cut the last route for small units"},
	RefusedCutsLargeRoute: {CodePlacementCutsLargeRoute, "the trap would cut the last route for large units"},
}

// Code returns the stable code of a refusal, "" for Accepted.
func (r Refusal) Code() string {
	if int(r) < len(refusalText) {
		return refusalText[r].code
	}
	return "PLACEMENT_REFUSED"
}

// String returns a short explanation.
func (r Refusal) String() string {
	if int(r) < len(refusalText) {
		return refusalText[r].msg
	}
	return fmt.Sprintf("refusal %d", uint8(r))
}

// Err returns nil for Accepted, else an unprocessable *platform.Error whose
// code is r.Code() and whose details name the placement.
func (r Refusal) Err(p Placement) error {
	if r == Accepted {
		return nil
	}
	return &platform.Error{
		Kind:    platform.KindUnprocessable,
		Code:    r.Code(),
		Message: fmt.Sprintf("%s at (%d,%d): %s", p.Kind, p.Cell.X, p.Cell.Y, r),
		Details: map[string]any{"kind": string(p.Kind), "x": p.Cell.X, "y": p.Cell.Y},
	}
}

// ValidatePlacement checks p against a layout on which the existing
// structures already stand. It returns nil when p is accepted, a
// CodeLayoutInvalid error when the layout has problems, a
// CodePlacementExistingInvalid error when an existing structure itself breaks
// a rule, and otherwise the refusal as Refusal.Err does. It prepares the
// layout on every call; hot loops use NewBoard and State instead.
func ValidatePlacement(l MapLayout, existing []Placement, p Placement) error {
	b, err := NewBoard(l)
	if err != nil {
		return err
	}
	s := b.NewState()
	for i, e := range existing {
		if r := s.Place(e); r != Accepted {
			return &platform.Error{
				Kind:    platform.KindInvalid,
				Code:    CodePlacementExistingInvalid,
				Message: fmt.Sprintf("existing placement %d (%s at (%d,%d)): %s", i, e.Kind, e.Cell.X, e.Cell.Y, r),
				Details: map[string]any{"index": i, "reason": r.Code()},
			}
		}
	}
	return s.Check(p).Err(p)
}

// Board is a layout prepared for placement checks. It is immutable and safe
// for concurrent use; placements live in a State.
//
// Each lane has two routing spaces: its cells (small units) and its 2×2
// anchors (large units). A placement blocks one cell, and with it up to four
// anchors. Whether that disconnects the spawn from the goal is decided by
// planar duality rather than by a search: the spawn and goal regions touch
// the edge of the grid, a virtual edge joins them outside the grid and splits
// the ring of outside positions into two arcs A and B, and every blocked
// position carries the arcs its 8-connected blocked group touches. Blocking
// a free position disconnects the route exactly when its blocked neighbours
// touch both arcs. Checks therefore read at most 40 bytes per lane, and
// placing updates the labels with a flood over the merged group only.
// Layouts whose spawn or goal region does not touch the edge (possible only
// when hand-edited) fall back to a search per check.
type Board struct {
	w, h  int
	cell  []uint16 // per cell: lane bits, flagBuild, flagFootstep
	lanes []boardLane
}

type boardLane struct {
	space [2]space // small, large
}

// Space modes.
const (
	modeUncuttable = iota // spawn and goal are joined by cells no structure may take
	modePlanar            // labelled arcs decide cuts
	modeSearch            // a search decides cuts
)

// Position states in a space.
const (
	arcA     = 1
	arcB     = 2
	obstacle = 4
	void     = 8 // padding and the two exits: neither free nor blocking
)

// space is one routing space of one lane, stored with two positions of
// padding: a ring of outside positions (obstacles, split into arcs A and B)
// and a void margin, so neighbour lookups never need bounds checks.
type space struct {
	sw, sh      int // positions in the space: cells (W×H) or anchors ((W-1)×(H-1))
	pw          int // padded width, sw+4
	mode        uint8
	spawn, goal int     // padded positions
	init        []uint8 // states before any placement
}

func (s *space) pos(x, y int) int { return (y+2)*s.pw + x + 2 }

func (s *space) in(x, y int) bool { return x >= 0 && y >= 0 && x < s.sw && y < s.sh }

// NewBoard prepares a layout for placement checks. A layout with analysis
// problems yields a CodeLayoutInvalid error listing their codes.
func NewBoard(l MapLayout) (*Board, error) {
	an := Analyze(l)
	if !an.Valid {
		codes := make([]string, len(an.Problems))
		for i, p := range an.Problems {
			codes[i] = p.Code
		}
		return nil, &platform.Error{
			Kind:    platform.KindInvalid,
			Code:    CodeLayoutInvalid,
			Message: fmt.Sprintf("the layout has %d problems, first %s: %s", len(an.Problems), an.Problems[0].Code, an.Problems[0].Message),
			Details: map[string]any{"problems": codes},
		}
	}
	W, H := l.Width, l.Height
	b := &Board{w: W, h: H, cell: make([]uint16, W*H), lanes: make([]boardLane, len(l.Lanes))}
	for i, ln := range l.Lanes {
		for _, c := range ln.Cells {
			b.cell[c.Y*W+c.X] |= 1 << i
		}
	}
	for _, ln := range l.Lanes {
		for _, p := range [2]GridPoint{ln.Spawn, ln.Goal} {
			for dy := range ln.Width {
				for dx := range ln.Width {
					b.cell[(p.Y+dy)*W+p.X+dx] |= flagFootstep
				}
			}
		}
	}
	for _, z := range l.BuildZones {
		for _, c := range z.Cells {
			b.cell[c.Y*W+c.X] |= flagBuild
		}
	}
	var scratch []int32
	for i, ln := range l.Lanes {
		bit := uint16(1) << i
		small := func(x, y int) (free, fixed bool) {
			f := b.cell[y*W+x]
			return f&bit != 0, f&flagFootstep != 0
		}
		large := func(x, y int) (free, fixed bool) {
			j := y*W + x
			f := b.cell[j] & b.cell[j+1] & b.cell[j+W] & b.cell[j+W+1]
			return f&bit != 0, f&flagFootstep != 0
		}
		b.lanes[i].space[0], scratch = newSpace(W, H, ln.Spawn, ln.Goal, small, scratch)
		b.lanes[i].space[1], scratch = newSpace(W-1, H-1, ln.Spawn, ln.Goal, large, scratch)
	}
	return b, nil
}

// newSpace lays out one routing space. at reports whether a position is
// free and whether it is fixed (no structure may ever block it).
func newSpace(sw, sh int, spawn, goal GridPoint, at func(x, y int) (free, fixed bool), stack []int32) (space, []int32) {
	s := space{sw: sw, sh: sh, pw: sw + 4}
	s.init = make([]uint8, s.pw*(sh+4))
	for i := range s.init {
		s.init[i] = void
	}
	for y := -1; y <= sh; y++ {
		for x := -1; x <= sw; x++ {
			if !s.in(x, y) {
				s.init[s.pos(x, y)] = obstacle
			} else if free, _ := at(x, y); !free {
				s.init[s.pos(x, y)] = obstacle
			} else {
				s.init[s.pos(x, y)] = 0
			}
		}
	}
	s.spawn, s.goal = s.pos(spawn.X, spawn.Y), s.pos(goal.X, goal.Y)

	// The fixed regions around spawn and goal, and where they meet the edge.
	fixedAt := func(p int) bool {
		x, y := p%s.pw-2, p/s.pw-2
		if !s.in(x, y) {
			return false
		}
		free, fixed := at(x, y)
		return free && fixed
	}
	seen := make([]bool, len(s.init))
	region := func(start int) (edge int, reaches bool) {
		edge = -1
		seen[start] = true
		stack = append(stack[:0], int32(start))
		for len(stack) > 0 {
			p := int(stack[len(stack)-1])
			stack = stack[:len(stack)-1]
			if p == s.goal && start == s.spawn {
				reaches = true
			}
			x, y := p%s.pw-2, p/s.pw-2
			if (x == 0 || y == 0 || x == sw-1 || y == sh-1) && (edge < 0 || p < edge) {
				edge = p
			}
			for _, q := range [4]int{p - 1, p + 1, p - s.pw, p + s.pw} {
				if !seen[q] && fixedAt(q) {
					seen[q] = true
					stack = append(stack, int32(q))
				}
			}
		}
		return edge, reaches
	}
	if !fixedAt(s.spawn) || !fixedAt(s.goal) {
		s.mode = modeSearch
		return s, stack
	}
	se, joined := region(s.spawn)
	if joined {
		s.mode = modeUncuttable
		return s, stack
	}
	ge, _ := region(s.goal)
	if se < 0 || ge < 0 {
		s.mode = modeSearch
		return s, stack
	}
	s.mode = modePlanar

	// Walk the ring clockwise from the top-left corner; the two exits split
	// it into arc A (clockwise from the spawn's exit) and arc B.
	ring := make([]int, 0, 2*sw+2*sh+4)
	for x := -1; x <= sw; x++ {
		ring = append(ring, s.pos(x, -1))
	}
	for y := 0; y <= sh; y++ {
		ring = append(ring, s.pos(sw, y))
	}
	for x := sw - 1; x >= -1; x-- {
		ring = append(ring, s.pos(x, sh))
	}
	for y := sh - 1; y >= 0; y-- {
		ring = append(ring, s.pos(-1, y))
	}
	exit := func(p int) int {
		x, y := p%s.pw-2, p/s.pw-2
		switch {
		case x == 0:
			return s.pos(-1, y)
		case x == sw-1:
			return s.pos(sw, y)
		case y == 0:
			return s.pos(x, -1)
		}
		return s.pos(x, sh)
	}
	es, eg := exit(se), exit(ge)
	is, ig := -1, -1
	for i, p := range ring {
		if p == es {
			is = i
		}
		if p == eg {
			ig = i
		}
	}
	s.init[es], s.init[eg] = void, void
	label := uint8(arcA)
	for k := 1; k < len(ring); k++ {
		i := (is + k) % len(ring)
		if i == ig {
			label = arcB
			continue
		}
		s.init[ring[i]] |= label
	}
	// Spread each arc's label over the blocked groups touching it.
	for _, lab := range [2]uint8{arcA, arcB} {
		stack = stack[:0]
		for _, p := range ring {
			if s.init[p]&lab != 0 {
				stack = append(stack, int32(p))
			}
		}
		stack = s.flood(s.init, lab, stack)
	}
	for _, v := range s.init {
		if v&(arcA|arcB) == arcA|arcB {
			// Already cut: impossible for a layout with routes, but never
			// trust labels that say so.
			s.mode = modeSearch
			break
		}
	}
	return s, stack
}

// offsets8 returns the 8-neighbour offsets of the padded grid.
func (s *space) offsets8() [8]int {
	pw := s.pw
	return [8]int{-pw - 1, -pw, -pw + 1, -1, 1, pw - 1, pw, pw + 1}
}

// flood adds lab to every blocked position 8-connected to the stacked ones.
func (s *space) flood(st []uint8, lab uint8, stack []int32) []int32 {
	off := s.offsets8()
	for len(stack) > 0 {
		p := int(stack[len(stack)-1])
		stack = stack[:len(stack)-1]
		for _, o := range off {
			q := p + o
			if v := st[q]; v&obstacle != 0 && v&lab != lab {
				st[q] = v | lab
				stack = append(stack, int32(q))
			}
		}
	}
	return stack
}

// State is the set of structures standing on a Board. It is not safe for
// concurrent use; make one per match (NewState) or copy one (Clone).
type State struct {
	b      *Board
	occ    []uint64 // occupied cells, bitset by row-major index
	placed []Placement
	st     [][2][]uint8 // per lane and space: position states
	stack  []int32
	queue  []int32
	mark   []uint32
	stamp  uint32
}

// NewState returns an empty state on b.
func (b *Board) NewState() *State {
	s := &State{b: b, occ: make([]uint64, (b.w*b.h+63)/64), placed: []Placement{}, st: make([][2][]uint8, len(b.lanes))}
	for i := range b.lanes {
		for k := range 2 {
			s.st[i][k] = append([]uint8(nil), b.lanes[i].space[k].init...)
		}
	}
	return s
}

// Clone returns an independent copy of s.
func (s *State) Clone() *State {
	c := &State{b: s.b, occ: append([]uint64(nil), s.occ...), placed: append([]Placement{}, s.placed...), st: make([][2][]uint8, len(s.st))}
	for i := range s.st {
		for k := range 2 {
			c.st[i][k] = append([]uint8(nil), s.st[i][k]...)
		}
	}
	return c
}

// Placements returns the accepted placements in order.
func (s *State) Placements() []Placement { return append([]Placement{}, s.placed...) }

// Check returns Accepted if p may be placed now, else the first rule it
// breaks. It does not change s and allocates nothing.
func (s *State) Check(p Placement) Refusal {
	b := s.b
	if p.Kind != Tower && p.Kind != Trap {
		return RefusedUnknownKind
	}
	x, y := p.Cell.X, p.Cell.Y
	if x < 0 || y < 0 || x >= b.w || y >= b.h {
		return RefusedOutOfBounds
	}
	i := y*b.w + x
	if s.occ[i>>6]&(1<<(i&63)) != 0 {
		return RefusedOccupied
	}
	f := b.cell[i]
	if p.Kind == Tower {
		if f&flagBuild == 0 {
			return RefusedNotBuildCell
		}
	} else {
		if f&laneMask == 0 {
			return RefusedNotPathCell
		}
		if f&flagFootstep != 0 {
			return RefusedSpawnOrGoal
		}
	}
	lanes := f & laneMask
	for m := lanes; m != 0; m &= m - 1 {
		ln := bits.TrailingZeros16(m)
		sp := &b.lanes[ln].space[0]
		if s.cuts(sp, s.st[ln][0], sp.pos(x, y), -1, -1, -1) {
			return RefusedCutsSmallRoute
		}
	}
	for m := lanes; m != 0; m &= m - 1 {
		ln := bits.TrailingZeros16(m)
		sp := &b.lanes[ln].space[1]
		st := s.st[ln][1]
		var blob [4]int
		n := 0
		for _, d := range [4][2]int{{-1, -1}, {0, -1}, {-1, 0}, {0, 0}} {
			if ax, ay := x+d[0], y+d[1]; sp.in(ax, ay) {
				if q := sp.pos(ax, ay); st[q] == 0 {
					blob[n] = q
					n++
				}
			}
		}
		for k := n; k < 4; k++ {
			blob[k] = -1
		}
		if n > 0 && s.cuts(sp, st, blob[0], blob[1], blob[2], blob[3]) {
			return RefusedCutsLargeRoute
		}
	}
	return Accepted
}

// cuts reports whether blocking the free positions p0..p3 (-1 for none)
// disconnects the space's spawn from its goal.
func (s *State) cuts(sp *space, st []uint8, p0, p1, p2, p3 int) bool {
	switch sp.mode {
	case modeUncuttable:
		return false
	case modePlanar:
		off := sp.offsets8()
		var lab uint8
		for _, p := range [4]int{p0, p1, p2, p3} {
			if p < 0 {
				continue
			}
			for _, o := range off {
				lab |= st[p+o]
			}
		}
		return lab&(arcA|arcB) == arcA|arcB
	}
	// Search: block temporarily, look for a route, restore.
	var saved [4]uint8
	ps := [4]int{p0, p1, p2, p3}
	for k, p := range ps {
		if p >= 0 {
			saved[k] = st[p]
			st[p] = obstacle
		}
	}
	_, ok := s.route(sp, st)
	for k, p := range ps {
		if p >= 0 {
			st[p] = saved[k]
		}
	}
	return !ok
}

// Place checks p and, if accepted, adds it to s.
func (s *State) Place(p Placement) Refusal {
	r := s.Check(p)
	if r != Accepted {
		return r
	}
	b := s.b
	x, y := p.Cell.X, p.Cell.Y
	i := y*b.w + x
	s.occ[i>>6] |= 1 << (i & 63)
	s.placed = append(s.placed, p)
	for m := b.cell[i] & laneMask; m != 0; m &= m - 1 {
		ln := bits.TrailingZeros16(m)
		sp := &b.lanes[ln].space[0]
		s.block(sp, s.st[ln][0], sp.pos(x, y))
		sp = &b.lanes[ln].space[1]
		for _, d := range [4][2]int{{-1, -1}, {0, -1}, {-1, 0}, {0, 0}} {
			if ax, ay := x+d[0], y+d[1]; sp.in(ax, ay) {
				if q := sp.pos(ax, ay); s.st[ln][1][q] == 0 {
					s.block(sp, s.st[ln][1], q)
				}
			}
		}
	}
	return Accepted
}

// block turns a free position into an obstacle and merges the labels of the
// blocked groups it joins.
func (s *State) block(sp *space, st []uint8, p int) {
	if sp.mode != modePlanar {
		st[p] = obstacle
		return
	}
	var lab uint8
	for _, o := range sp.offsets8() {
		lab |= st[p+o]
	}
	lab &= arcA | arcB
	st[p] = obstacle | lab
	if lab != 0 {
		s.stack = sp.flood(st, lab, append(s.stack[:0], int32(p)))
	}
}

// Routes returns, per lane, the current shortest small- and large-unit
// routes around the structures placed so far.
func (s *State) Routes() []RouteLength {
	out := make([]RouteLength, len(s.st))
	for i := range s.st {
		out[i].LaneID = i
		for k := range 2 {
			if n, ok := s.route(&s.b.lanes[i].space[k], s.st[i][k]); ok {
				if k == 0 {
					out[i].SmallUnitLength = &n
				} else {
					out[i].LargeUnitLength = &n
				}
			}
		}
	}
	return out
}

// route runs a breadth-first search from spawn to goal over free positions.
func (s *State) route(sp *space, st []uint8) (int, bool) {
	n := len(st)
	if len(s.mark) < n {
		s.mark = make([]uint32, n)
		s.stamp = 0
	}
	s.stamp++
	if s.stamp == 0 {
		clear(s.mark)
		s.stamp = 1
	}
	if st[sp.spawn] != 0 || st[sp.goal] != 0 {
		return 0, false
	}
	stamp := s.stamp
	q := append(s.queue[:0], int32(sp.spawn))
	s.mark[sp.spawn] = stamp
	steps, levelEnd := 0, 1
	for head := 0; head < len(q); head++ {
		if head == levelEnd {
			steps++
			levelEnd = len(q)
		}
		p := int(q[head])
		if p == sp.goal {
			s.queue = q
			return steps, true
		}
		for _, o := range [4]int{-1, 1, -sp.pw, sp.pw} {
			if r := p + o; st[r] == 0 && s.mark[r] != stamp {
				s.mark[r] = stamp
				q = append(q, int32(r))
			}
		}
	}
	s.queue = q
	return 0, false
}
