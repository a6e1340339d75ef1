package gamemap

import (
	"bytes"
	"encoding/xml"
	"image/png"
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

func TestPNGMatchesGlyphs(t *testing.T) {
	l := Generate(Short, 8)
	var buf bytes.Buffer
	const scale = 4
	if err := PNG(&buf, l, scale, Placement{Trap, l.Lanes[0].Cells[20]}); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != l.Width*scale || b.Dy() != l.Height*scale {
		t.Fatalf("image is %v", b)
	}
	g, _ := glyphs(l, []Placement{{Trap, l.Lanes[0].Cells[20]}})
	for y := range l.Height {
		for x := range l.Width {
			want := hexColor(GlyphColor(g[y*l.Width+x]))
			for _, px := range [][2]int{{0, 0}, {scale - 1, scale - 1}} {
				r, gg, b, _ := img.At(x*scale+px[0], y*scale+px[1]).RGBA()
				if uint8(r>>8) != want.R || uint8(gg>>8) != want.G || uint8(b>>8) != want.B {
					t.Fatalf("pixel of cell (%d,%d) is %d,%d,%d, want %v", x, y, r>>8, gg>>8, b>>8, want)
				}
			}
		}
	}
	if err := PNG(io.Discard, l, 0); err == nil {
		t.Error("scale 0 accepted")
	}
}

func TestSVGIsWellFormed(t *testing.T) {
	l := Generate(Long, 8)
	l.Size = `<&">`
	var buf bytes.Buffer
	if err := SVG(&buf, l); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(&buf)
	rects := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "rect" {
			rects++
		}
	}
	if rects < 2 {
		t.Errorf("%d rects", rects)
	}
}

func TestRenderRejectsImpossibleGrids(t *testing.T) {
	for _, l := range []MapLayout{{Width: 0, Height: 5}, {Width: 5, Height: MaxDimension + 1}} {
		if _, err := ASCII(l); err == nil {
			t.Errorf("ASCII of %d×%d: no error", l.Width, l.Height)
		}
		if err := SVG(io.Discard, l); err == nil {
			t.Errorf("SVG of %d×%d: no error", l.Width, l.Height)
		}
		if err := PNG(io.Discard, l, 2); err == nil {
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
}
