package gamemap

import (
	"io"
	"strings"
	"testing"
)

func TestASCIIShowsEveryCellKind(t *testing.T) {
	l := Generate(Long, 5)
	lane, build, _ := cellKinds(l)
	overlap := map[GridPoint]bool{}
	for _, c := range l.OverlapCells {
		overlap[c] = true
	}
	text, err := ASCII(l, Placement{Tower, l.BuildZones[0].Cells[0]})
	if err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(rows) != l.Height {
		t.Fatalf("%d rows, want %d", len(rows), l.Height)
	}
	for y, row := range rows {
		if len(row) != l.Width {
			t.Fatalf("row %d has %d cells", y, len(row))
		}
		for x := range row {
			c, g := GridPoint{x, y}, row[x]
			var want string
			switch {
			case c == l.BuildZones[0].Cells[0]:
				want = "T"
			case build[c]:
				want = "+"
			case overlap[c]:
				want = "XGABC"
			case lane[c]:
				want = "#GABC"
			default:
				want = "."
			}
			if !strings.ContainsRune(want, rune(g)) {
				t.Fatalf("cell %v is %q, want one of %q\n%s", c, g, want, text)
			}
		}
	}
	if rows[l.Lanes[2].Spawn.Y][0] != 'C' || rows[l.Lanes[0].Goal.Y][l.Width-1] != 'G' {
		t.Errorf("spawn or goal glyph missing:\n%s", text)
	}
}

func TestRenderRejectsImpossibleGrids(t *testing.T) {
	for _, l := range []MapLayout{{Width: 0, Height: 5}, {Width: 5, Height: MaxDimension + 1}} {
		if _, err := ASCII(l); err == nil {
			t.Errorf("ASCII of %d×%d: no error", l.Width, l.Height)
		}
		if err := SVG(io.Discard, l, RenderOptions{}); err == nil {
			t.Errorf("SVG of %d×%d: no error", l.Width, l.Height)
		}
		if err := PNG(io.Discard, l, RenderOptions{}); err == nil {
			t.Errorf("PNG of %d×%d: no error", l.Width, l.Height)
		}
	}
	// Points outside the grid are skipped, not drawn or panicked on.
	l := Generate(Short, 1)
	l.Lanes[0].Cells = append(l.Lanes[0].Cells, GridPoint{-5, 99})
	l.Lanes[1].Width = 1 << 30
	if _, err := ASCII(l); err != nil {
		t.Fatal(err)
	}
	l.Lanes[0].Spawn = GridPoint{-3, 500}
	l.BuildZones[0].Cells = append(l.BuildZones[0].Cells, GridPoint{1 << 20, 2})
	outside := []Placement{{Tower, GridPoint{-1, 0}}, {Trap, GridPoint{0, l.Height}}, {"wall", GridPoint{1, 1}}}
	if err := PNG(io.Discard, l, RenderOptions{Scale: MinScale, Placements: outside}); err != nil {
		t.Fatal(err)
	}
	if err := SVG(io.Discard, l, RenderOptions{Placements: outside}); err != nil {
		t.Fatal(err)
	}
}
