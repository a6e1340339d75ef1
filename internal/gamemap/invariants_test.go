package gamemap

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// invariantSeeds is how many seeds per size TestGenerateInvariants checks;
// with -short it checks shortInvariantSeeds, so a developer's run stays
// quick while CI (no -short) checks them all.
const (
	invariantSeeds      = 10_000
	shortInvariantSeeds = 200
)

// TestGenerateInvariants checks every documented invariant of generated
// layouts over invariantSeeds seeds per size, spread over all cores.
func TestGenerateInvariants(t *testing.T) {
	seeds := uint64(invariantSeeds)
	if testing.Short() {
		seeds = shortInvariantSeeds
	}
	for _, size := range Sizes {
		t.Run(string(size), func(t *testing.T) {
			t.Parallel()
			workers := runtime.GOMAXPROCS(0)
			var (
				mu       sync.Mutex
				failures []string
				redrawn  int
				wg       sync.WaitGroup
			)
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					var local []string
					var ck checker
					localRedrawn := 0
					for seed := uint64(w); seed < seeds; seed += uint64(workers) {
						l, a, attempts := generate(size, seed)
						if attempts != 1 {
							localRedrawn++
						}
						if err := ck.check(size, seed, l, a, attempts); err != nil {
							local = append(local, fmt.Sprintf("seed %d: %v", seed, err))
						}
					}
					mu.Lock()
					failures = append(failures, local...)
					redrawn += localRedrawn
					mu.Unlock()
				}()
			}
			wg.Wait()
			for i, f := range failures {
				if i == 10 {
					t.Errorf("... and %d more", len(failures)-10)
					break
				}
				t.Error(f)
			}
			// The redraw path must actually run, or the balance rule and the
			// redraw loop are untested (a short run may be too few to hit it).
			if redrawn == 0 && !testing.Short() {
				t.Errorf("no seed out of %d was redrawn", seeds)
			}
			t.Logf("%s: %d of %d seeds needed a redraw", size, redrawn, seeds)
		})
	}
}

// checker verifies generated layouts against the invariants with code
// independent of the analyzer. Its buffers are reused across layouts.
type checker struct {
	lanesAt []uint8
	near    []uint8
	union   []bool
	stamp   []int
	zoneAt  []int
	gen     int
}

// grid returns s resized to n and cleared.
func grid[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

func (ck *checker) check(size Size, seed uint64, l MapLayout, a MapLayoutAnalysis, attempts int) error {
	p, _ := size.preset()
	W, H := p.Width, p.Height
	if attempts < 1 {
		return fmt.Errorf("every draw failed; fallback used")
	}
	if l.Version != Version || l.Size != size || l.Seed != seed || l.Width != W || l.Height != H || len(l.Lanes) != p.Lanes {
		return fmt.Errorf("header: version %d size %q seed %d %d×%d lanes %d", l.Version, l.Size, l.Seed, l.Width, l.Height, len(l.Lanes))
	}
	in := func(c GridPoint) bool { return c.X >= 0 && c.Y >= 0 && c.X < W && c.Y < H }
	sorted := func(what string, cs []GridPoint) error {
		if cs == nil {
			return fmt.Errorf("%s is nil", what)
		}
		for i, c := range cs {
			if !in(c) {
				return fmt.Errorf("%s: %v out of bounds", what, c)
			}
			if i > 0 && !cs[i-1].Less(c) {
				return fmt.Errorf("%s: %v then %v is not strictly row-major", what, cs[i-1], c)
			}
		}
		return nil
	}
	ck.lanesAt = grid(ck.lanesAt, W*H)
	ck.zoneAt = grid(ck.zoneAt, W*H)
	if len(ck.stamp) != W*H {
		ck.stamp = make([]int, W*H)
	}
	lanesAt, zoneAt := ck.lanesAt, ck.zoneAt
	goal := GridPoint{W - p.LaneWidth, (H - p.LaneWidth) / 2}
	for i, ln := range l.Lanes {
		if ln.ID != i || ln.Width != p.LaneWidth {
			return fmt.Errorf("lane %d: id %d width %d", i, ln.ID, ln.Width)
		}
		cl := ln.Centerline
		if len(cl) == 0 || cl[0] != ln.Spawn || cl[len(cl)-1] != ln.Goal || ln.Spawn.X != 0 || ln.Goal != goal {
			return fmt.Errorf("lane %d: centerline does not run from spawn %v at x=0 to goal %v", i, ln.Spawn, ln.Goal)
		}
		ck.union = grid(ck.union, W*H)
		union := ck.union
		ck.gen++
		for k, c := range cl {
			if !in(c) || ck.stamp[c.Y*W+c.X] == ck.gen {
				return fmt.Errorf("lane %d: centerline point %v repeats or leaves the grid", i, c)
			}
			ck.stamp[c.Y*W+c.X] = ck.gen
			if k > 0 && abs(c.X-cl[k-1].X)+abs(c.Y-cl[k-1].Y) != 1 {
				return fmt.Errorf("lane %d: centerline jumps %v -> %v", i, cl[k-1], c)
			}
			if c.X < 0 || c.Y < 0 || c.X+ln.Width > W || c.Y+ln.Width > H {
				return fmt.Errorf("lane %d: square at %v leaves the grid", i, c)
			}
			for dy := range ln.Width {
				for dx := range ln.Width {
					union[(c.Y+dy)*W+c.X+dx] = true
				}
			}
		}
		if err := sorted(fmt.Sprintf("lane %d cells", i), ln.Cells); err != nil {
			return err
		}
		n := 0
		for _, c := range ln.Cells {
			if !union[c.Y*W+c.X] {
				return fmt.Errorf("lane %d: cell %v is not under the centerline", i, c)
			}
			lanesAt[c.Y*W+c.X] |= 1 << i
			n++
		}
		for _, u := range union {
			if u {
				n--
			}
		}
		if n != 0 {
			return fmt.Errorf("lane %d: cells are not the union of the centerline squares", i)
		}
	}
	if err := sorted("overlapCells", l.OverlapCells); err != nil {
		return err
	}
	var wantOverlap []GridPoint
	path := 0
	for idx, m := range lanesAt {
		if m != 0 {
			path++
		}
		if m&(m-1) != 0 {
			wantOverlap = append(wantOverlap, GridPoint{idx % W, idx / W})
		}
	}
	if !slices.Equal(wantOverlap, l.OverlapCells) {
		return fmt.Errorf("overlapCells %v, cells in two or more lanes %v", l.OverlapCells, wantOverlap)
	}
	// Lanes within one step (8 neighbours) of each cell: every lane cell
	// paints its 3×3 block.
	ck.near = grid(ck.near, W*H)
	for idx, m := range lanesAt {
		if m == 0 {
			continue
		}
		x, y := idx%W, idx/W
		for ny := max(y-1, 0); ny <= min(y+1, H-1); ny++ {
			for nx := max(x-1, 0); nx <= min(x+1, W-1); nx++ {
				ck.near[ny*W+nx] |= m
			}
		}
	}
	near := func(c GridPoint) uint8 { return ck.near[c.Y*W+c.X] }
	build := 0
	for z, bz := range l.BuildZones {
		if bz.ID != z {
			return fmt.Errorf("zone %d has id %d", z, bz.ID)
		}
		if err := sorted(fmt.Sprintf("zone %d cells", z), bz.Cells); err != nil {
			return err
		}
		if len(bz.Cells) == 0 {
			return fmt.Errorf("zone %d is empty", z)
		}
		var touch uint8
		for _, c := range bz.Cells {
			i := c.Y*W + c.X
			if lanesAt[i] != 0 {
				return fmt.Errorf("zone %d: build cell %v is on a path", z, c)
			}
			if zoneAt[i] != 0 {
				return fmt.Errorf("zone %d: cell %v is also in zone %d", z, c, zoneAt[i]-1)
			}
			if near(c) == 0 {
				return fmt.Errorf("zone %d: build cell %v is not next to a path", z, c)
			}
			touch |= near(c)
			zoneAt[i] = z + 1
			build++
		}
		if !slices.Equal(bz.LaneIDs, laneList(uint16(touch))) || bz.LaneIDs == nil {
			return fmt.Errorf("zone %d: laneIds %v, touching %v", z, bz.LaneIDs, laneList(uint16(touch)))
		}
		// 4-connected: a flood from the first cell reaches them all.
		ck.gen++
		ck.stamp[bz.Cells[0].Y*W+bz.Cells[0].X] = ck.gen
		reached := 1
		stack := []GridPoint{bz.Cells[0]}
		for len(stack) > 0 {
			c := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, d := range [4]GridPoint{{1, 0}, {-1, 0}, {0, 1}, {0, -1}} {
				q := GridPoint{c.X + d.X, c.Y + d.Y}
				if in(q) && zoneAt[q.Y*W+q.X] == z+1 && ck.stamp[q.Y*W+q.X] != ck.gen {
					ck.stamp[q.Y*W+q.X] = ck.gen
					reached++
					stack = append(stack, q)
				}
			}
		}
		if reached != len(bz.Cells) {
			return fmt.Errorf("zone %d is not 4-connected", z)
		}
	}
	// Every cell next to a path is a build cell, and zones are maximal.
	for i := range zoneAt {
		c := GridPoint{i % W, i / W}
		if lanesAt[i] == 0 && near(c) != 0 && zoneAt[i] == 0 {
			return fmt.Errorf("cell %v is next to a path but not a build cell", c)
		}
		if zoneAt[i] != 0 && c.X+1 < W && zoneAt[i+1] != 0 && zoneAt[i+1] != zoneAt[i] {
			return fmt.Errorf("zones %d and %d touch at %v", zoneAt[i]-1, zoneAt[i+1]-1, c)
		}
		if zoneAt[i] != 0 && c.Y+1 < H && zoneAt[i+W] != 0 && zoneAt[i+W] != zoneAt[i] {
			return fmt.Errorf("zones %d and %d touch at %v", zoneAt[i]-1, zoneAt[i+W]-1, c)
		}
	}

	// The generator's own analysis.
	if !a.Valid || len(a.Problems) != 0 {
		return fmt.Errorf("analysis not valid: %v", a.Problems)
	}
	if a.PathCellCount != path || a.BuildCellCount != build || a.OverlapCellCount != len(l.OverlapCells) || path+build > W*H {
		return fmt.Errorf("counts path %d build %d overlap %d, want %d %d %d", a.PathCellCount, a.BuildCellCount, a.OverlapCellCount, path, build, len(l.OverlapCells))
	}
	if len(a.Routes) != len(l.Lanes) {
		return fmt.Errorf("%d routes for %d lanes", len(a.Routes), len(l.Lanes))
	}
	lo, hi := 1<<30, 0
	for i, r := range a.Routes {
		ln := l.Lanes[i]
		if r.LaneID != i || r.SmallUnitLength == nil || r.LargeUnitLength == nil {
			return fmt.Errorf("route %d: %+v", i, r)
		}
		s, g := *r.SmallUnitLength, *r.LargeUnitLength
		md := abs(ln.Goal.X-ln.Spawn.X) + abs(ln.Goal.Y-ln.Spawn.Y)
		if md > s || s > g || g > len(ln.Centerline)-1 {
			return fmt.Errorf("lane %d: want manhattan %d <= small %d <= large %d <= centerline %d", i, md, s, g, len(ln.Centerline)-1)
		}
		lo, hi = min(lo, s), max(hi, s)
	}
	if (hi-lo)*100 > maxImbalance*lo {
		return fmt.Errorf("small routes %d..%d differ by more than %d%%", lo, hi, maxImbalance)
	}

	// JSON: stable bytes, empty lists as [], and a round trip analyses the
	// same as the generator did.
	data, err := json.Marshal(l)
	if err != nil {
		return err
	}
	if bytes.Contains(data, []byte("null")) {
		return fmt.Errorf("layout JSON contains null")
	}
	if !bytes.Contains(data, []byte(fmt.Sprintf(`"seed":"%d"`, seed))) {
		return fmt.Errorf("seed is not a decimal string")
	}
	back, err := ParseLayout(data)
	if err != nil {
		return err
	}
	if again := Analyze(back); !analysesEqual(a, again) {
		return fmt.Errorf("analysis after a JSON round trip differs (-generator +round trip):\n%s", cmp.Diff(a, again))
	}
	if !layoutsEqual(l, back) {
		return fmt.Errorf("layout after a JSON round trip differs:\n%s", cmp.Diff(l, back))
	}
	return nil
}

// layoutsEqual is reflect.DeepEqual for layouts, fast enough to run on
// every seed under the race detector. Nil and empty lists differ.
func layoutsEqual(a, b MapLayout) bool {
	points := func(p, q []GridPoint) bool { return (p == nil) == (q == nil) && slices.Equal(p, q) }
	if a.Version != b.Version || a.Size != b.Size || a.Seed != b.Seed || a.Width != b.Width || a.Height != b.Height ||
		len(a.Lanes) != len(b.Lanes) || len(a.BuildZones) != len(b.BuildZones) || !points(a.OverlapCells, b.OverlapCells) {
		return false
	}
	for i, p := range a.Lanes {
		q := b.Lanes[i]
		if p.ID != q.ID || p.Width != q.Width || p.Spawn != q.Spawn || p.Goal != q.Goal || !points(p.Centerline, q.Centerline) || !points(p.Cells, q.Cells) {
			return false
		}
	}
	for i, p := range a.BuildZones {
		q := b.BuildZones[i]
		if p.ID != q.ID || (p.LaneIDs == nil) != (q.LaneIDs == nil) || !slices.Equal(p.LaneIDs, q.LaneIDs) || !points(p.Cells, q.Cells) {
			return false
		}
	}
	return true
}

// analysesEqual is reflect.DeepEqual for analyses.
func analysesEqual(a, b MapLayoutAnalysis) bool {
	ptr := func(p, q *int) bool { return (p == nil && q == nil) || (p != nil && q != nil && *p == *q) }
	if a.PathCellCount != b.PathCellCount || a.BuildCellCount != b.BuildCellCount || a.OverlapCellCount != b.OverlapCellCount ||
		a.Valid != b.Valid || len(a.Routes) != len(b.Routes) || len(a.Problems) != len(b.Problems) ||
		(a.Routes == nil) != (b.Routes == nil) || (a.Problems == nil) != (b.Problems == nil) {
		return false
	}
	for i, r := range a.Routes {
		q := b.Routes[i]
		if r.LaneID != q.LaneID || !ptr(r.SmallUnitLength, q.SmallUnitLength) || !ptr(r.LargeUnitLength, q.LargeUnitLength) {
			return false
		}
	}
	for i, p := range a.Problems {
		q := b.Problems[i]
		if p.Code != q.Code || p.Message != q.Message || (p.Cell == nil) != (q.Cell == nil) || (p.Cell != nil && *p.Cell != *q.Cell) {
			return false
		}
	}
	return true
}

// TestGenerateIsRepeatable generates the same seeds again, in another order
// and from several goroutines, so that state left in pooled scratch space
// would show up as a different layout.
func TestGenerateIsRepeatable(t *testing.T) {
	const n = 500
	for _, size := range Sizes {
		first := make([]MapLayout, n)
		for i := range first {
			first[i] = Generate(size, uint64(i))
		}
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := n - 1 - w; i >= 0; i -= 4 {
					if got := Generate(size, uint64(i)); !layoutsEqual(got, first[i]) {
						t.Errorf("%s seed %d: second Generate differs:\n%s", size, i, cmp.Diff(first[i], got))
					}
				}
			}()
		}
		wg.Wait()
	}
}

func TestFallbackLayoutIsValid(t *testing.T) {
	for _, size := range Sizes {
		p, _ := size.preset()
		g := new(generator)
		g.straight(p)
		l := g.layout(size, 7, p)
		a := Analyze(l)
		if !a.Valid {
			t.Fatalf("%s fallback: %v", size, a.Problems)
		}
		var ck checker
		if err := ck.check(size, 7, l, a, 1); err != nil {
			t.Errorf("%s fallback: %v", size, err)
		}
	}
}

func TestGenerateUnknownSizePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Generate with an unknown size did not panic")
		}
	}()
	Generate("medium", 1)
}

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Size
		ok   bool
	}{{"short", Short, true}, {"long", Long, true}, {"", "", false}, {"Short", "", false}, {"medium", "", false}} {
		got, err := ParseSize(tc.in)
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("ParseSize(%q) = %q, %v; want %q, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
