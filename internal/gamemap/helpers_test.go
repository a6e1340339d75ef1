package gamemap

import (
	"math/rand/v2"
	"slices"
)

// referenceRoutes measures the routes of l with the given cells blocked
// using a plain breadth-first search written for the tests: an oracle that
// shares no code with Board (nor with the analyzer).
func referenceRoutes(l MapLayout, blocked []GridPoint) []RouteLength {
	W, H := l.Width, l.Height
	free := make([]bool, W*H)
	isBlocked := make([]bool, W*H)
	for _, b := range blocked {
		isBlocked[b.Y*W+b.X] = true
	}
	out := make([]RouteLength, len(l.Lanes))
	for i, ln := range l.Lanes {
		clear(free)
		for _, c := range ln.Cells {
			free[c.Y*W+c.X] = !isBlocked[c.Y*W+c.X]
		}
		cell := func(p GridPoint) bool {
			return p.X >= 0 && p.Y >= 0 && p.X < W && p.Y < H && free[p.Y*W+p.X]
		}
		square := func(p GridPoint) bool {
			return cell(p) && cell(GridPoint{p.X + 1, p.Y}) && cell(GridPoint{p.X, p.Y + 1}) && cell(GridPoint{p.X + 1, p.Y + 1})
		}
		out[i] = RouteLength{LaneID: i, SmallUnitLength: bfs(W, H, ln.Spawn, ln.Goal, cell), LargeUnitLength: bfs(W, H, ln.Spawn, ln.Goal, square)}
	}
	return out
}

// bfs returns the 4-neighbour distance from s to t over points where ok
// holds, or nil.
func bfs(W, H int, s, t GridPoint, ok func(GridPoint) bool) *int {
	if !ok(s) || !ok(t) {
		return nil
	}
	dist := make([]int, W*H)
	for i := range dist {
		dist[i] = -1
	}
	dist[s.Y*W+s.X] = 0
	queue := []GridPoint{s}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p == t {
			d := dist[p.Y*W+p.X]
			return &d
		}
		for _, d := range [4]GridPoint{{1, 0}, {-1, 0}, {0, 1}, {0, -1}} {
			q := GridPoint{p.X + d.X, p.Y + d.Y}
			if ok(q) && dist[q.Y*W+q.X] < 0 {
				dist[q.Y*W+q.X] = dist[p.Y*W+p.X] + 1
				queue = append(queue, q)
			}
		}
	}
	return nil
}

// allRoutes reports whether every lane has both routes.
func allRoutes(rs []RouteLength) bool {
	for _, r := range rs {
		if r.SmallUnitLength == nil || r.LargeUnitLength == nil {
			return false
		}
	}
	return true
}

// expectedTrap is what a trap on lane cell c must get, by the oracle.
func expectedTrap(l MapLayout, blocked []GridPoint, c GridPoint) Refusal {
	rs := referenceRoutes(l, append(slices.Clone(blocked), c))
	for _, r := range rs {
		if r.SmallUnitLength == nil {
			return RefusedCutsSmallRoute
		}
	}
	for _, r := range rs {
		if r.LargeUnitLength == nil {
			return RefusedCutsLargeRoute
		}
	}
	return Accepted
}

// randomShape builds a valid layout of the given size whose lanes are
// loop-erased random walks with random lumps, so lanes have holes, wide
// areas and crossings, and whose spawns and goals sit anywhere; with
// edges set, spawns sit on the left edge and goals on the right.
func randomShape(r *rand.Rand, size Size, edges bool) MapLayout {
	p, _ := size.preset()
	W, H := p.Width, p.Height
	g := new(generator)
	g.resize(W * H)
	lanes := make([]PathLane, p.Lanes)
	for i := range lanes {
		w := 2 + r.IntN(2)
		anchor := func(x int) GridPoint {
			if x < 0 {
				x = r.IntN(W - w + 1)
			}
			return GridPoint{x, r.IntN(H - w + 1)}
		}
		var s, t GridPoint
		for {
			if edges {
				s, t = anchor(0), anchor(W-w)
			} else {
				s, t = anchor(-1), anchor(-1)
			}
			if abs(s.X-t.X)+abs(s.Y-t.Y) >= 3 || r.IntN(8) == 0 {
				break
			}
		}
		path := walk(r, s, t, W-w, H-w)
		bit := uint8(1) << i
		stamp := func(x0, y0, x1, y1 int) {
			for y := max(y0, 0); y < min(y1, H); y++ {
				for x := max(x0, 0); x < min(x1, W); x++ {
					g.mask[y*W+x] |= bit
				}
			}
		}
		for _, a := range path {
			stamp(a.X, a.Y, a.X+w, a.Y+w)
		}
		for range r.IntN(6) {
			a := path[r.IntN(len(path))]
			x, y := a.X+r.IntN(w), a.Y+r.IntN(w)
			stamp(x-r.IntN(4), y-r.IntN(4), x+1+r.IntN(4), y+1+r.IntN(4))
		}
		lanes[i] = PathLane{ID: i, Width: w, Spawn: s, Goal: t, Centerline: path}
	}
	l := MapLayout{Version: Version, Size: size, Seed: 0, Width: W, Height: H, Lanes: lanes}
	g.finish(&l)
	return l
}

// walk is a loop-erased random walk of anchors from s to t, biased
// towards t, inside [0,xmax]×[0,ymax].
func walk(r *rand.Rand, s, t GridPoint, xmax, ymax int) []GridPoint {
	path := []GridPoint{s}
	at := map[GridPoint]int{s: 0}
	cur := s
	for steps := 0; cur != t; steps++ {
		var d GridPoint
		if r.IntN(10) < 6 || steps > 4000 {
			switch {
			case cur.X < t.X:
				d.X = 1
			case cur.X > t.X:
				d.X = -1
			case cur.Y < t.Y:
				d.Y = 1
			default:
				d.Y = -1
			}
			if cur.X != t.X && cur.Y != t.Y && r.IntN(2) == 0 {
				d = GridPoint{0, 1}
				if cur.Y > t.Y {
					d.Y = -1
				}
			}
		} else {
			d = [4]GridPoint{{1, 0}, {-1, 0}, {0, 1}, {0, -1}}[r.IntN(4)]
		}
		n := GridPoint{cur.X + d.X, cur.Y + d.Y}
		if n.X < 0 || n.Y < 0 || n.X > xmax || n.Y > ymax {
			continue
		}
		if k, seen := at[n]; seen {
			for _, q := range path[k+1:] {
				delete(at, q)
			}
			path = path[:k+1]
		} else {
			at[n] = len(path)
			path = append(path, n)
		}
		cur = n
	}
	return path
}
