package gamemap

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// pictureCases are the pinned pictures: a short map bare, and a long map
// with a tower on a build cell and a trap on a lane.
func pictureCases() []struct {
	name string
	l    MapLayout
	opt  RenderOptions
} {
	long := Generate(Long, 42)
	zone := slices.MaxFunc(long.BuildZones, func(a, b BuildZone) int { return len(a.Cells) - len(b.Cells) })
	tower := zone.Cells[len(zone.Cells)/2]
	trap := long.Lanes[1].Cells[40]
	return []struct {
		name string
		l    MapLayout
		opt  RenderOptions
	}{
		{"picture-short-42", Generate(Short, 42), RenderOptions{Scale: 16}},
		{"picture-long-42-placed", long, RenderOptions{Scale: 16, Placements: []Placement{{Tower, tower}, {Trap, trap}}}},
	}
}

// TestPictureGolden pins the SVG text byte for byte and the PNG pixel for
// pixel (decoded, so a change in the PNG encoder alone does not matter).
// Look at the PNGs under testdata/golden after go test -update.
func TestPictureGolden(t *testing.T) {
	for _, tc := range pictureCases() {
		t.Run(tc.name, func(t *testing.T) {
			var svg, pngBuf bytes.Buffer
			if err := SVG(&svg, tc.l, tc.opt); err != nil {
				t.Fatal(err)
			}
			golden(t, tc.name+".svg", svg.Bytes())
			if err := PNG(&pngBuf, tc.l, tc.opt); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", "golden", tc.name+".png")
			if *update {
				golden(t, tc.name+".png", pngBuf.Bytes())
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if d := pixelDiff(t, pngBuf.Bytes(), want); d != "" {
				t.Errorf("%s differs from the golden picture: %s (go test -update rewrites it)", path, d)
			}
		})
	}
}

func pixelDiff(t *testing.T, got, want []byte) string {
	t.Helper()
	g, err := png.Decode(bytes.NewReader(got))
	if err != nil {
		t.Fatal(err)
	}
	w, err := png.Decode(bytes.NewReader(want))
	if err != nil {
		t.Fatal(err)
	}
	if g.Bounds() != w.Bounds() {
		return fmt.Sprintf("size %v, want %v", g.Bounds(), w.Bounds())
	}
	gp, wp := toNRGBA(g), toNRGBA(w)
	if i := slicesMismatch(gp.Pix, wp.Pix); i >= 0 {
		return fmt.Sprintf("first difference at pixel (%d,%d)", i/4%gp.Bounds().Dx(), i/gp.Stride)
	}
	return ""
}

func toNRGBA(img image.Image) *image.NRGBA {
	out := image.NewNRGBA(img.Bounds())
	draw.Draw(out, out.Bounds(), img, img.Bounds().Min, draw.Src)
	return out
}

func slicesMismatch(a, b []byte) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

// cellPixel is the colour of the PNG a few pixels inside the top-left
// corner of a cell, clear of grid lines and labels.
func cellPixel(img image.Image, scale int, c GridPoint) color.NRGBA {
	x := int(math.Round((marginLeft+float64(c.X))*float64(scale))) + 3
	y := int(math.Round((titleBand+coordBand+float64(c.Y))*float64(scale))) + 3
	return color.NRGBAModel.Convert(img.At(x, y)).(color.NRGBA)
}

func renderPNG(t *testing.T, l MapLayout, opt RenderOptions) image.Image {
	t.Helper()
	var buf bytes.Buffer
	if err := PNG(&buf, l, opt); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// TestPNGColoursEachLane checks the picture against the layout: every
// single-lane cell in its lane's colour, overlap cells in stripes of
// exactly their lanes' colours, and free build cells green.
func TestPNGColoursEachLane(t *testing.T) {
	const scale = 12
	for _, seed := range []uint64{3, 42} {
		l := Generate(Long, seed)
		img := renderPNG(t, l, RenderOptions{Scale: scale})
		b, err := newBoard(l)
		if err != nil {
			t.Fatal(err)
		}
		footprint := footprintCells(l)
		for i, lanes := range b.lanes {
			c := GridPoint{i % l.Width, i / l.Width}
			if footprint[c] || len(lanes) == 0 {
				continue
			}
			if len(lanes) == 1 {
				if got := cellPixel(img, scale, c); got != laneColor(lanes[0]) {
					t.Fatalf("seed %d: cell %v of lane %d is %v, want %v", seed, c, lanes[0], got, laneColor(lanes[0]))
				}
				continue
			}
			seen := map[color.NRGBA]bool{}
			for dy := 1; dy < scale-1; dy++ {
				for dx := 1; dx < scale-1; dx++ {
					x := int(math.Round((marginLeft+float64(c.X))*scale)) + dx
					y := int(math.Round((titleBand+coordBand+float64(c.Y))*scale)) + dy
					seen[color.NRGBAModel.Convert(img.At(x, y)).(color.NRGBA)] = true
				}
			}
			for _, li := range lanes {
				if !seen[laneColor(li)] {
					t.Fatalf("seed %d: overlap cell %v lacks lane %d's colour; has %v", seed, c, li, seen)
				}
			}
		}
		z := l.BuildZones[0]
		if got := cellPixel(img, scale, z.Cells[len(z.Cells)-1]); got != colorBuild {
			t.Errorf("seed %d: build cell is %v, want %v", seed, got, colorBuild)
		}
	}
}

func footprintCells(l MapLayout) map[GridPoint]bool {
	fp := map[GridPoint]bool{}
	for _, ln := range l.Lanes {
		for _, p := range []GridPoint{ln.Spawn, ln.Goal} {
			for dy := range ln.Width {
				for dx := range ln.Width {
					fp[GridPoint{p.X + dx, p.Y + dy}] = true
				}
			}
		}
	}
	return fp
}

// TestPictureScale: both formats grow in proportion to the scale.
func TestPictureScale(t *testing.T) {
	l := Generate(Short, 5)
	small := renderPNG(t, l, RenderOptions{Scale: MinScale}).Bounds()
	big := renderPNG(t, l, RenderOptions{Scale: 2 * MinScale}).Bounds()
	if big.Dx() < 2*small.Dx()-2 || big.Dx() > 2*small.Dx()+2 || big.Dy() < 2*small.Dy()-2 || big.Dy() > 2*small.Dy()+2 {
		t.Errorf("scale %d gives %v, scale %d gives %v; want twice the size", MinScale, small, 2*MinScale, big)
	}
	if small.Dx() < l.Width*MinScale || small.Dy() < l.Height*MinScale {
		t.Errorf("picture %v is smaller than the board", small)
	}
	for scale, png := range map[int]image.Rectangle{MinScale: small, 2 * MinScale: big} {
		root := svgRoot(t, l, RenderOptions{Scale: scale})
		w, errW := strconv.ParseFloat(root["width"], 64)
		h, errH := strconv.ParseFloat(root["height"], 64)
		if errW != nil || errH != nil || math.Abs(w-float64(png.Dx())) > 1 || math.Abs(h-float64(png.Dy())) > 1 {
			t.Errorf("scale %d: SVG %q×%q, PNG %v", scale, root["width"], root["height"], png)
		}
	}
	for _, bad := range []int{-1, MinScale - 1, MaxScale + 1} {
		if err := PNG(io.Discard, l, RenderOptions{Scale: bad}); err == nil {
			t.Errorf("PNG scale %d accepted", bad)
		}
		if err := SVG(io.Discard, l, RenderOptions{Scale: bad}); err == nil {
			t.Errorf("SVG scale %d accepted", bad)
		}
	}
}

// svgRoot parses the SVG (failing on malformed XML) and returns the
// attributes of its root element.
func svgRoot(t *testing.T, l MapLayout, opt RenderOptions) map[string]string {
	t.Helper()
	var buf bytes.Buffer
	if err := SVG(&buf, l, opt); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(&buf)
	root := map[string]string{}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return root
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && len(root) == 0 {
			for _, a := range se.Attr {
				root[a.Name.Local] = a.Value
			}
		}
	}
}

// TestSVGText checks what a designer reads: the title, a number for every
// spawn, every zone id, the coordinates and a legend entry per lane;
// tower and trap in the legend only when placed.
func TestSVGText(t *testing.T) {
	l := Generate(Long, 8)
	texts := svgTexts(t, l, RenderOptions{})
	want := []string{"long map · seed 8 · version 1 · 48×27", "G", "lane 0", "lane 1", "lane 2", "lanes overlap",
		"build zone, its id", "spawn, lane's number", "goal", "47", "26"}
	for _, z := range l.BuildZones {
		want = append(want, strconv.Itoa(z.ID))
	}
	for _, w := range want {
		if texts[w] == 0 {
			t.Errorf("no text %q in the SVG", w)
		}
	}
	if texts["tower"] > 0 || texts["trap"] > 0 {
		t.Error("tower or trap in the legend of a map without placements")
	}
	placed := svgTexts(t, l, RenderOptions{Placements: []Placement{{Tower, l.BuildZones[0].Cells[0]}}})
	if placed["tower"] != 1 || placed["trap"] != 0 || !strings.Contains(svgString(t, l, RenderOptions{Placements: []Placement{{Tower, GridPoint{}}}}), "1 placements") {
		t.Errorf("legend with one tower: %v", placed)
	}
	l.Size = `<&">`
	if got := svgTexts(t, l, RenderOptions{}); got[`<&"> map · seed 8 · version 1 · 48×27`] != 1 {
		t.Error("the title was not escaped and read back")
	}
}

func svgString(t *testing.T, l MapLayout, opt RenderOptions) string {
	t.Helper()
	var buf bytes.Buffer
	if err := SVG(&buf, l, opt); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func svgTexts(t *testing.T, l MapLayout, opt RenderOptions) map[string]int {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(svgString(t, l, opt)))
	texts := map[string]int{}
	inText := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return texts
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			inText = tok.Name.Local == "text"
		case xml.CharData:
			if inText {
				texts[string(tok)]++
			}
		case xml.EndElement:
			inText = false
		}
	}
}

// TestPicturesAreDeterministic renders the same pictures on several
// goroutines at once: the bytes agree, and -race sees the shared font
// state.
func TestPicturesAreDeterministic(t *testing.T) {
	l := Generate(Short, 77)
	opt := RenderOptions{Scale: MinScale, Placements: []Placement{{Tower, l.BuildZones[0].Cells[0]}}}
	outs := make([][2][]byte, 4)
	var wg sync.WaitGroup
	for i := range outs {
		wg.Go(func() {
			var p, s bytes.Buffer
			if err := PNG(&p, l, opt); err != nil {
				t.Error(err)
			}
			if err := SVG(&s, l, opt); err != nil {
				t.Error(err)
			}
			outs[i] = [2][]byte{p.Bytes(), s.Bytes()}
		})
	}
	wg.Wait()
	for i := 1; i < len(outs); i++ {
		if !bytes.Equal(outs[i][0], outs[0][0]) || !bytes.Equal(outs[i][1], outs[0][1]) {
			t.Fatalf("render %d differs from render 0", i)
		}
	}
}
