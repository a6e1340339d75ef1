package gamemap

import (
	"math/bits"
	"math/rand/v2"
	"sync"
)

// maxAttempts bounds the redraws of one seed. Draws are redrawn from the same
// PCG stream, so the result still depends only on (size, seed, Version).
const maxAttempts = 32

// Generate returns the layout of the given preset and seed. It is
// deterministic: the same (size, seed, Version) gives byte-identical JSON on
// every platform and Go version. It panics if size is not Short or Long (a
// programming error; parse input with ParseSize). It is safe for concurrent
// use.
func Generate(size Size, seed uint64) MapLayout {
	l, _ := GenerateAnalyzed(size, seed)
	return l
}

// GenerateAnalyzed is Generate that also returns the analysis the generator
// used for its own check, saving a second Analyze call.
func GenerateAnalyzed(size Size, seed uint64) (MapLayout, MapLayoutAnalysis) {
	l, a, _ := generate(size, seed)
	return l, a
}

// generate also reports how many draws the seed took; 0 means every draw
// failed and the fallback layout was returned.
func generate(size Size, seed uint64) (MapLayout, MapLayoutAnalysis, int) {
	p, ok := size.preset()
	if !ok {
		panic("gamemap: unknown size " + string(size))
	}
	g := generatorPool.Get().(*generator)
	defer generatorPool.Put(g)
	g.pcg.Seed(seed, p.stream)
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		g.draw(p)
		l := g.layout(size, seed, p)
		a := g.an.analyze(&l)
		if a.Valid && balanced(a, p) {
			return l, a, attempt
		}
	}
	g.straight(p)
	l := g.layout(size, seed, p)
	return l, g.an.analyze(&l), 0
}

// balanced reports whether the lanes of a valid draw are fair to each other:
// the longest small-unit route is at most maxImbalance percent longer than
// the shortest. Unbalanced draws are redrawn.
func balanced(a MapLayoutAnalysis, p preset) bool {
	lo, hi := -1, -1
	for _, r := range a.Routes {
		n := *r.SmallUnitLength
		if lo < 0 || n < lo {
			lo = n
		}
		hi = max(hi, n)
	}
	return (hi-lo)*100 <= maxImbalance*lo
}

// maxImbalance is the largest accepted difference between the longest and
// the shortest small-unit route, in percent of the shortest.
const maxImbalance = 25

var generatorPool = sync.Pool{New: func() any {
	g := new(generator)
	g.rng = rand.New(&g.pcg)
	return g
}}

// generator holds the scratch space of one generation, reused across calls.
type generator struct {
	pcg     rand.PCG
	rng     *rand.Rand
	centers [MaxLanes][]GridPoint
	mask    []uint8 // per cell: bit i set when the cell is in lane i
	near    []uint8 // per cell: lanes among the 8 neighbours
	zone    []int16 // per cell: build zone index + 1
	stack   []int32
	counts  []int   // cells per build zone
	touch   []uint8 // lanes per build zone
	an      analyzer
}

// draw walks every lane's centerline. Lane i keeps its anchors in its own
// horizontal band, which leaves at least one free row between bands, so lanes
// meet only in the last mergeCols anchor columns where all of them head for
// the shared goal. Each walk is monotone in x: runs of 3..maxRun steps right,
// each followed by a vertical move to a new row, so it is 4-connected and
// never revisits an anchor.
func (g *generator) draw(p preset) {
	w := p.LaneWidth
	xmax := p.Width - w
	mergeX := xmax - p.mergeCols + 1
	goalY := (p.Height - w) / 2
	for lane := range p.Lanes {
		lo := lane * p.Height / p.Lanes
		hi := (lane+1)*p.Height/p.Lanes - w - 1
		c := g.centers[lane][:0]
		x, y := 0, lo+g.rng.IntN(hi-lo+1)
		c = append(c, GridPoint{x, y})
		for x < xmax {
			for run := p.minRun + g.rng.IntN(p.maxRun-p.minRun+1); run > 0 && x < xmax; run-- {
				x++
				c = append(c, GridPoint{x, y})
			}
			ty := goalY
			if x < mergeX {
				ty = lo + g.rng.IntN(hi-lo+1)
			}
			c = stepTo(c, x, y, ty)
			y = ty
		}
		g.centers[lane] = c
	}
}

// straight is the fallback when every draw failed: each lane runs straight
// from the middle of its band to the merge zone, then to the goal row, then
// to the goal. It satisfies every invariant by construction.
func (g *generator) straight(p preset) {
	w := p.LaneWidth
	xmax := p.Width - w
	mergeX := xmax - p.mergeCols + 1
	goalY := (p.Height - w) / 2
	for lane := range p.Lanes {
		lo := lane * p.Height / p.Lanes
		hi := (lane+1)*p.Height/p.Lanes - w - 1
		y := (lo + hi) / 2
		c := g.centers[lane][:0]
		for x := 0; x <= mergeX; x++ {
			c = append(c, GridPoint{x, y})
		}
		c = stepTo(c, mergeX, y, goalY)
		for x := mergeX + 1; x <= xmax; x++ {
			c = append(c, GridPoint{x, goalY})
		}
		g.centers[lane] = c
	}
}

// stepTo appends the vertical steps from (x, y) to (x, ty).
func stepTo(c []GridPoint, x, y, ty int) []GridPoint {
	for y < ty {
		y++
		c = append(c, GridPoint{x, y})
	}
	for y > ty {
		y--
		c = append(c, GridPoint{x, y})
	}
	return c
}

// layout turns the drawn centerlines into a MapLayout.
func (g *generator) layout(size Size, seed uint64, p preset) MapLayout {
	W, H := p.Width, p.Height
	g.resize(W * H)
	lanes := make([]PathLane, p.Lanes)
	total := 0
	for i := range lanes {
		total += len(g.centers[i])
	}
	centers := make([]GridPoint, 0, total)
	for i := range lanes {
		c := g.centers[i]
		start := len(centers)
		centers = append(centers, c...)
		cl := centers[start:len(centers):len(centers)]
		lanes[i] = PathLane{
			ID:         i,
			Width:      p.LaneWidth,
			Spawn:      cl[0],
			Goal:       cl[len(cl)-1],
			Centerline: cl,
		}
		bit := uint8(1) << i
		for _, a := range c {
			for dy := range p.LaneWidth {
				row := (a.Y+dy)*W + a.X
				for dx := range p.LaneWidth {
					g.mask[row+dx] |= bit
				}
			}
		}
	}
	l := MapLayout{Version: Version, Size: size, Seed: seed, Width: W, Height: H, Lanes: lanes}
	g.finish(&l)
	return l
}

func (g *generator) resize(n int) {
	if cap(g.mask) < n {
		g.mask = make([]uint8, n)
		g.near = make([]uint8, n)
		g.zone = make([]int16, n)
	}
	g.mask, g.near, g.zone = g.mask[:n], g.near[:n], g.zone[:n]
	clear(g.mask)
	clear(g.zone)
}

// finish derives every lane's cells, the overlap cells and the build zones
// from g.mask (lane membership per cell), resolving overlaps: a cell claimed
// by several lanes is one path cell, listed once in OverlapCells, and never a
// build cell. A build cell is a cell of no lane with a lane cell among its 8
// neighbours; zones are the 4-connected groups of build cells, numbered in
// row-major order of their first cell. All point lists share one backing
// array (each capped at its length, so an append by a caller copies).
func (g *generator) finish(l *MapLayout) {
	W, H := l.Width, l.Height
	laneCount, overlaps := g.countLaneCells()
	g.dilate(W, H)
	builds, laneIDs := g.labelZones(W, H)

	total := overlaps + builds
	for _, c := range laneCount {
		total += c
	}
	pts := make([]GridPoint, 0, total)
	take := func(k int) []GridPoint {
		s := pts[len(pts) : len(pts) : len(pts)+k]
		pts = pts[:len(pts)+k]
		return s
	}
	for i := range l.Lanes {
		l.Lanes[i].Cells = take(laneCount[i])
	}
	l.OverlapCells = take(overlaps)
	ids := make([]int, 0, laneIDs)
	l.BuildZones = make([]BuildZone, len(g.counts))
	for z := range l.BuildZones {
		start := len(ids)
		for b := g.touch[z]; b != 0; b &= b - 1 {
			ids = append(ids, bits.TrailingZeros8(b))
		}
		l.BuildZones[z] = BuildZone{ID: z, LaneIDs: ids[start:len(ids):len(ids)], Cells: take(g.counts[z])}
	}
	g.listCells(l)
}

// countLaneCells counts the cells of each lane and the cells several lanes
// share.
func (g *generator) countLaneCells() (laneCount [MaxLanes]int, overlaps int) {
	for _, m := range g.mask {
		if m == 0 {
			continue
		}
		for b := m; b != 0; b &= b - 1 {
			laneCount[bits.TrailingZeros8(b)]++
		}
		if m&(m-1) != 0 {
			overlaps++
		}
	}
	return laneCount, overlaps
}

// labelZones labels the build zones with a flood fill, recording each
// zone's size in g.counts and the lanes it touches in g.touch, and returns
// the build cells and the zones' lane ids in all. The cells themselves are
// listed by listCells in one row-major pass, so every list comes out
// sorted.
func (g *generator) labelZones(W, H int) (builds, laneIDs int) {
	n := W * H
	g.counts = g.counts[:0]
	g.touch = g.touch[:0]
	for i := range n {
		if !g.isFreeBuild(i) {
			continue
		}
		count, t := g.fillZone(i, int16(len(g.counts)+1), W, n)
		g.counts = append(g.counts, count)
		g.touch = append(g.touch, t)
		builds += count
		laneIDs += bits.OnesCount8(t)
	}
	return builds, laneIDs
}

// fillZone marks zone z on the free build cells 4-connected to cell i and
// returns how many there are and the lanes next to them.
func (g *generator) fillZone(i int, z int16, W, n int) (count int, t uint8) {
	s := append(g.stack[:0], int32(i))
	g.zone[i] = z
	for len(s) > 0 {
		j := int(s[len(s)-1])
		s = s[:len(s)-1]
		count++
		t |= g.near[j]
		x := j % W
		if x > 0 && g.isFreeBuild(j-1) {
			g.zone[j-1] = z
			s = append(s, int32(j-1))
		}
		if x < W-1 && g.isFreeBuild(j+1) {
			g.zone[j+1] = z
			s = append(s, int32(j+1))
		}
		if j >= W && g.isFreeBuild(j-W) {
			g.zone[j-W] = z
			s = append(s, int32(j-W))
		}
		if j+W < n && g.isFreeBuild(j+W) {
			g.zone[j+W] = z
			s = append(s, int32(j+W))
		}
	}
	g.stack = s
	return count, t
}

// listCells appends every cell, in row-major order, to the lists l holds
// for it: its lanes' cells, the overlap cells, its build zone's cells.
func (g *generator) listCells(l *MapLayout) {
	W := l.Width
	for i := range W * l.Height {
		m := g.mask[i]
		if m == 0 {
			if z := g.zone[i]; z != 0 {
				bz := &l.BuildZones[z-1]
				bz.Cells = append(bz.Cells, GridPoint{i % W, i / W})
			}
			continue
		}
		p := GridPoint{i % W, i / W}
		for b := m; b != 0; b &= b - 1 {
			ln := &l.Lanes[bits.TrailingZeros8(b)]
			ln.Cells = append(ln.Cells, p)
		}
		if m&(m-1) != 0 {
			l.OverlapCells = append(l.OverlapCells, p)
		}
	}
}

// dilate fills g.near with the lanes of each cell's 3×3 block.
func (g *generator) dilate(W, H int) {
	for y := range H {
		row := g.mask[y*W : y*W+W]
		out := g.near[y*W : y*W+W]
		for x := range W {
			m := row[x]
			if x > 0 {
				m |= row[x-1]
			}
			if x < W-1 {
				m |= row[x+1]
			}
			out[x] = m
		}
	}
	// g.near holds horizontal neighbourhoods; combine rows in place,
	// keeping the previous row's horizontal value.
	var prev, cur [MaxDimension]uint8
	for y := range H {
		copy(cur[:W], g.near[y*W:y*W+W])
		for x := range W {
			m := cur[x]
			if y > 0 {
				m |= prev[x]
			}
			if y < H-1 {
				m |= g.near[(y+1)*W+x]
			}
			g.near[y*W+x] = m
		}
		prev, cur = cur, prev
	}
}

func (g *generator) isFreeBuild(i int) bool {
	return g.zone[i] == 0 && g.mask[i] == 0 && g.near[i] != 0
}
