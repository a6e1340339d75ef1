package gamemap

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/towerdefence/platformctl/internal/platform"
)

// cellKinds classifies the cells of a layout for the placement rules.
func cellKinds(l MapLayout) (lane, build, footprint map[GridPoint]bool) {
	lane, build, footprint = map[GridPoint]bool{}, map[GridPoint]bool{}, map[GridPoint]bool{}
	for _, ln := range l.Lanes {
		for _, c := range ln.Cells {
			lane[c] = true
		}
		for _, p := range []GridPoint{ln.Spawn, ln.Goal} {
			for dy := range ln.Width {
				for dx := range ln.Width {
					footprint[GridPoint{p.X + dx, p.Y + dy}] = true
				}
			}
		}
	}
	for _, z := range l.BuildZones {
		for _, c := range z.Cells {
			build[c] = true
		}
	}
	return
}

// checkEveryCell compares State.Check for a tower and a trap on every cell
// with the rules and, for traps on lanes, with the route oracle.
func checkEveryCell(t *testing.T, l MapLayout, st *State, blocked []GridPoint) (cuts int) {
	t.Helper()
	lane, build, footprint := cellKinds(l)
	occupied := map[GridPoint]bool{}
	for _, p := range st.Placements() {
		occupied[p.Cell] = true
	}
	for y := -1; y <= l.Height; y++ {
		for x := -1; x <= l.Width; x++ {
			c := GridPoint{x, y}
			var tower, trap Refusal
			switch {
			case x < 0 || y < 0 || x >= l.Width || y >= l.Height:
				tower, trap = RefusedOutOfBounds, RefusedOutOfBounds
			case occupied[c]:
				tower, trap = RefusedOccupied, RefusedOccupied
			default:
				tower = RefusedNotBuildCell
				if build[c] {
					tower = Accepted
				}
				switch {
				case !lane[c]:
					trap = RefusedNotPathCell
				case footprint[c]:
					trap = RefusedSpawnOrGoal
				default:
					trap = expectedTrap(l, blocked, c)
				}
			}
			if got := st.Check(Placement{Tower, c}); got != tower {
				t.Fatalf("tower at %v: got %s (%s), want %s (%s)", c, got.Code(), got, tower.Code(), tower)
			}
			if got := st.Check(Placement{Trap, c}); got != trap {
				t.Fatalf("trap at %v after %v: got %q, want %q", c, blocked, got.Code(), trap.Code())
			}
			if trap == RefusedCutsLargeRoute || trap == RefusedCutsSmallRoute {
				cuts++
			}
		}
	}
	return cuts
}

func TestPlacementRulesOnEveryCell(t *testing.T) {
	for _, size := range Sizes {
		for seed := range uint64(3) {
			t.Run(fmt.Sprintf("%s-%d", size, seed), func(t *testing.T) {
				t.Parallel()
				placementRulesOnEveryCell(t, size, seed)
			})
		}
	}
}

func placementRulesOnEveryCell(t *testing.T, size Size, seed uint64) {
	l := Generate(size, seed)
	b, err := NewBoard(l)
	if err != nil {
		t.Fatal(err)
	}
	st := b.NewState()
	if cuts := checkEveryCell(t, l, st, nil); cuts == 0 {
		t.Errorf("%s seed %d: no lane cell is a cut cell; the route check is untested", size, seed)
	}
	if r := st.Check(Placement{"wall", l.Lanes[0].Cells[5]}); r != RefusedUnknownKind {
		t.Errorf("unknown kind: got %s", r.Code())
	}
}

// TestRandomPlacementSequences places random structures on generated maps
// and on random shapes (holes, crossings, spawns inside the grid) and checks
// every answer against the route oracle: no accepted placement cuts a route,
// and no refusal claims a cut that is not one.
func TestRandomPlacementSequences(t *testing.T) {
	type board struct {
		name string
		l    MapLayout
	}
	var boards []board
	for _, size := range Sizes {
		for seed := range uint64(8) {
			boards = append(boards, board{fmt.Sprintf("%s-%d", size, seed), Generate(size, seed)})
		}
		r := rand.New(rand.NewPCG(uint64(len(size)), 99))
		for i := range 16 {
			boards = append(boards, board{fmt.Sprintf("%s-shape-%d", size, i), randomShape(r, size, i%2 == 0)})
		}
	}
	var mu sync.Mutex
	modes := map[uint8]int{}
	t.Run("boards", func(t *testing.T) {
		for i, bd := range boards {
			t.Run(bd.name, func(t *testing.T) {
				t.Parallel()
				sequence(t, i, bd.l, &mu, modes)
			})
		}
	})
	// Every strategy must have run, or part of the board code is untested.
	for _, m := range []uint8{modeUncuttable, modePlanar, modeSearch} {
		if modes[m] == 0 {
			t.Errorf("no routing space used mode %d", m)
		}
	}
	t.Logf("routing spaces per mode (uncuttable, planar, search): %d %d %d", modes[modeUncuttable], modes[modePlanar], modes[modeSearch])
}

// sequence plays 80 random placements on l, checking each against the
// oracle, and counts the routing modes of the board in modes.
func sequence(t *testing.T, i int, l MapLayout, mu *sync.Mutex, modes map[uint8]int) {
	b, err := NewBoard(l)
	if err != nil {
		t.Fatalf("%v\n%s", err, mustASCII(l))
	}
	if got, want := routeValues(referenceRoutes(l, nil)), routeValues(Analyze(l).Routes); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("oracle %v, analysis %v", got, want)
	}
	mu.Lock()
	for _, ln := range b.lanes {
		modes[ln.space[0].mode]++
		modes[ln.space[1].mode]++
	}
	mu.Unlock()
	r := rand.New(rand.NewPCG(uint64(i), 7))
	var laneCells []GridPoint
	for _, ln := range l.Lanes {
		laneCells = append(laneCells, ln.Cells...)
	}
	var buildCells []GridPoint
	for _, z := range l.BuildZones {
		buildCells = append(buildCells, z.Cells...)
	}
	st := b.NewState()
	var blocked []GridPoint
	lane, build, footprint := cellKinds(l)
	occupied := map[GridPoint]bool{}
	refusedCuts := 0
	for step := range 80 {
		var p Placement
		if r.IntN(4) == 0 && len(buildCells) > 0 {
			p = Placement{Tower, buildCells[r.IntN(len(buildCells))]}
		} else {
			p = Placement{Trap, laneCells[r.IntN(len(laneCells))]}
		}
		want := Accepted
		switch {
		case occupied[p.Cell]:
			want = RefusedOccupied
		case p.Kind == Tower && !build[p.Cell]:
			want = RefusedNotBuildCell
		case p.Kind == Trap && !lane[p.Cell]:
			want = RefusedNotPathCell
		case p.Kind == Trap && footprint[p.Cell]:
			want = RefusedSpawnOrGoal
		case p.Kind == Trap:
			want = expectedTrap(l, blocked, p.Cell)
		}
		if got := st.Place(p); got != want {
			t.Fatalf("step %d: %s at %v after %v: got %q, want %q\n%s", step, p.Kind, p.Cell, blocked, got.Code(), want.Code(), mustASCII(l, st.Placements()...))
		}
		if want == RefusedCutsSmallRoute || want == RefusedCutsLargeRoute {
			refusedCuts++
		}
		if want == Accepted {
			occupied[p.Cell] = true
			if p.Kind == Trap {
				blocked = append(blocked, p.Cell)
			}
		}
		ref := referenceRoutes(l, blocked)
		if !allRoutes(ref) {
			t.Fatalf("step %d: accepted placements %v cut a route", step, blocked)
		}
		if got := st.Routes(); fmt.Sprint(routeValues(got)) != fmt.Sprint(routeValues(ref)) {
			t.Fatalf("step %d: State.Routes %v, oracle %v", step, routeValues(got), routeValues(ref))
		}
		if step == 40 && i%3 == 0 {
			checkEveryCell(t, l, st, blocked)
		}
	}
	checkEveryCell(t, l, st, blocked)
	if refusedCuts == 0 && i%3 == 0 {
		t.Logf("no cut was refused in 80 steps")
	}
}

// TestPlacementSequenceUntilFull keeps placing traps on one generated map
// until no lane cell accepts one: the final state still has every route and
// every remaining free lane cell is a genuine cut.
func TestPlacementSequenceUntilFull(t *testing.T) {
	for _, size := range Sizes {
		t.Run(string(size), func(t *testing.T) {
			t.Parallel()
			placementSequenceUntilFull(t, size)
		})
	}
}

func placementSequenceUntilFull(t *testing.T, size Size) {
	l := Generate(size, 11)
	b, err := NewBoard(l)
	if err != nil {
		t.Fatal(err)
	}
	st := b.NewState()
	r := rand.New(rand.NewPCG(5, 5))
	var cells []GridPoint
	for _, ln := range l.Lanes {
		cells = append(cells, ln.Cells...)
	}
	r.Shuffle(len(cells), func(i, j int) { cells[i], cells[j] = cells[j], cells[i] })
	var blocked []GridPoint
	for _, c := range cells {
		if st.Place(Placement{Trap, c}) == Accepted {
			blocked = append(blocked, c)
		}
	}
	if !allRoutes(referenceRoutes(l, blocked)) {
		t.Fatalf("%s: %d traps cut a route", size, len(blocked))
	}
	cuts := checkEveryCell(t, l, st, blocked)
	t.Logf("%s: %d traps placed; %d free lane cells left, all cuts", size, len(blocked), cuts)
}

func routeValues(rs []RouteLength) [][2]int {
	out := make([][2]int, len(rs))
	for i, r := range rs {
		out[i] = [2]int{-1, -1}
		if r.SmallUnitLength != nil {
			out[i][0] = *r.SmallUnitLength
		}
		if r.LargeUnitLength != nil {
			out[i][1] = *r.LargeUnitLength
		}
	}
	return out
}

func mustASCII(l MapLayout, ps ...Placement) string {
	s, err := ASCII(l, ps...)
	if err != nil {
		return err.Error()
	}
	return s
}

func TestValidatePlacement(t *testing.T) {
	l := Generate(Short, 4)
	b, _ := NewBoard(l)
	st := b.NewState()
	var cut GridPoint
	found := false
	for _, c := range l.Lanes[0].Cells {
		if r := st.Check(Placement{Trap, c}); r == RefusedCutsLargeRoute {
			cut, found = c, true
			break
		}
	}
	if !found {
		t.Fatal("no cut cell on lane 0")
	}
	tower := Placement{Tower, l.BuildZones[0].Cells[0]}
	broken := l
	broken.Width = 0
	for _, tc := range []struct {
		name     string
		layout   MapLayout
		existing []Placement
		p        Placement
		code     string
		kind     platform.Kind
	}{
		{"accepted", l, nil, tower, "", 0},
		{"occupied", l, []Placement{tower}, tower, CodePlacementOccupied, platform.KindUnprocessable},
		{"tower on a lane", l, nil, Placement{Tower, cut}, CodePlacementNotBuildCell, platform.KindUnprocessable},
		{"trap on a build cell", l, nil, Placement{Trap, tower.Cell}, CodePlacementNotPathCell, platform.KindUnprocessable},
		{"trap on the spawn", l, nil, Placement{Trap, l.Lanes[0].Spawn}, CodePlacementSpawnOrGoal, platform.KindUnprocessable},
		{"trap on the goal", l, nil, Placement{Trap, l.Lanes[1].Goal}, CodePlacementSpawnOrGoal, platform.KindUnprocessable},
		{"trap cutting a route", l, nil, Placement{Trap, cut}, CodePlacementCutsLargeRoute, platform.KindUnprocessable},
		{"out of bounds", l, nil, Placement{Trap, GridPoint{-1, 3}}, CodePlacementOutOfBounds, platform.KindUnprocessable},
		{"unknown kind", l, nil, Placement{"wall", tower.Cell}, CodePlacementUnknownKind, platform.KindUnprocessable},
		{"existing breaks a rule", l, []Placement{{Tower, cut}}, tower, CodePlacementExistingInvalid, platform.KindInvalid},
		{"invalid layout", broken, nil, tower, CodeLayoutInvalid, platform.KindInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidatePlacement(tc.layout, tc.existing, tc.p)
			if tc.code == "" {
				if err != nil {
					t.Fatalf("got %v, want accepted", err)
				}
				return
			}
			var pe *platform.Error
			if !errors.As(err, &pe) || pe.Code != tc.code || pe.Kind != tc.kind {
				t.Fatalf("got %v, want code %s kind %d", err, tc.code, tc.kind)
			}
		})
	}
}

func TestCheckDoesNotAllocate(t *testing.T) {
	l := Generate(Long, 2)
	b, _ := NewBoard(l)
	st := b.NewState()
	probes := []Placement{{Trap, l.Lanes[1].Cells[40]}, {Tower, l.BuildZones[2].Cells[0]}, {Trap, GridPoint{3, 99}}}
	if n := testing.AllocsPerRun(100, func() {
		for _, p := range probes {
			st.Check(p)
		}
	}); n != 0 {
		t.Errorf("Check allocates %.1f times per run", n)
	}
}

// TestBoardIsSharedSafely runs many states on one board at once; the race
// detector and the oracle check that the board is never written.
func TestBoardIsSharedSafely(t *testing.T) {
	l := Generate(Long, 9)
	b, err := NewBoard(l)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 1))
			st := b.NewState()
			cells := l.Lanes[g%len(l.Lanes)].Cells
			for range 200 {
				st.Place(Placement{Trap, cells[r.IntN(len(cells))]})
				c := st.Clone()
				c.Place(Placement{Trap, cells[r.IntN(len(cells))]})
			}
			var blocked []GridPoint
			for _, p := range st.Placements() {
				blocked = append(blocked, p.Cell)
			}
			if !allRoutes(referenceRoutes(l, blocked)) {
				t.Errorf("goroutine %d: a route was cut", g)
			}
		}()
	}
	wg.Wait()
	fresh := b.NewState()
	if len(fresh.Placements()) != 0 || !allRoutes(fresh.Routes()) {
		t.Error("a new state is not empty")
	}
}
