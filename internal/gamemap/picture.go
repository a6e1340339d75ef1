package gamemap

import (
	"fmt"
	"image/color"
	"slices"
	"strconv"
)

// RenderOptions says how PNG and SVG draw a layout.
type RenderOptions struct {
	// Scale is the size of one cell in pixels: the PNG's resolution and the
	// SVG's width and height. 0 means DefaultScale.
	Scale int
	// Placements are drawn on top: towers as white discs, traps as violet
	// diamonds. Those outside the grid are skipped.
	Placements []Placement
}

// Picture scales: below MinScale the labels cannot be read.
const (
	DefaultScale = 24
	MinScale     = 8
	MaxScale     = 64
)

func (o RenderOptions) scale() (int, error) {
	if o.Scale == 0 {
		return DefaultScale, nil
	}
	if o.Scale < MinScale || o.Scale > MaxScale {
		return 0, fmt.Errorf("render: scale must be between %d and %d pixels per cell, got %d", MinScale, MaxScale, o.Scale)
	}
	return o.Scale, nil
}

// The picture's palette. Lanes take LaneColors in order (cycling past the
// end); everything else has one colour.
var (
	LaneColors = []color.NRGBA{
		{0xf2, 0xa5, 0x3a, 0xff}, // amber
		{0x4e, 0xa8, 0xde, 0xff}, // sky blue
		{0xe2, 0x6f, 0xb5, 0xff}, // pink
		{0x9c, 0xd3, 0x4a, 0xff}, // lime
		{0x2e, 0xc4, 0xb6, 0xff}, // teal
		{0xf0, 0x6a, 0x4f, 0xff}, // coral
		{0xd8, 0xc8, 0x5a, 0xff}, // straw
		{0xa7, 0x8b, 0xfa, 0xff}, // lavender
	}
	colorPaper     = color.NRGBA{0x14, 0x18, 0x21, 0xff}
	colorBoard     = color.NRGBA{0x22, 0x28, 0x34, 0xff}
	colorGrid      = color.NRGBA{0xff, 0xff, 0xff, 0x12}
	colorGrid5     = color.NRGBA{0xff, 0xff, 0xff, 0x30}
	colorBuild     = color.NRGBA{0x3a, 0x6b, 0x47, 0xff}
	colorZoneID    = color.NRGBA{0xe8, 0xf5, 0xe9, 0xff}
	colorGoal      = color.NRGBA{0xd9, 0x3f, 0x4b, 0xff}
	colorInk       = color.NRGBA{0x14, 0x18, 0x21, 0xff}
	colorWhite     = color.NRGBA{0xf7, 0xf7, 0xf2, 0xff}
	colorTitle     = color.NRGBA{0xf2, 0xf2, 0xee, 0xff}
	colorMuted     = color.NRGBA{0x8a, 0x93, 0xa6, 0xff}
	colorCoord5    = color.NRGBA{0xd0, 0xd6, 0xe2, 0xff}
	colorTrap      = color.NRGBA{0x8f, 0x5c, 0xf7, 0xff}
	colorFootprint = color.NRGBA{0x00, 0x00, 0x00, 0x59}
)

func laneColor(i int) color.NRGBA { return LaneColors[i%len(LaneColors)] }

// The picture's geometry, in cells.
const (
	marginLeft   = 1.6
	titleBand    = 1.7
	coordBand    = 0.9
	marginRight  = 0.8
	legendGap    = 0.9
	legendRow    = 1.35
	marginBottom = 0.5
	stripeWidth  = 0.3
	swatch       = 0.9
	// legendSpacing separates legend items, with room for an SVG viewer's
	// fallback font, which may run wider than the Go font.
	legendSpacing = 1.4
)

// Font sizes, in cells.
const (
	sizeTitle  = 0.8
	sizeCoord  = 0.46
	sizeLabel  = 0.55
	sizeLegend = 0.6
)

type opKind uint8

const (
	opRect    opKind = iota // x, y, w, h, fill
	opStripes               // x, y, w, h, stripes: diagonal bands of the colours
	opCircle                // x, y centre, w radius, fill
	opPoly                  // pts, fill
	opText                  // x, y (baseline), text, size, anchor, bold, fill
)

// op is one drawing instruction in cell units, which both PNG and SVG
// follow, so the two pictures agree.
type op struct {
	kind       opKind
	x, y, w, h float64
	fill       color.NRGBA
	stripes    []color.NRGBA
	pts        []float64 // x0, y0, x1, y1, …
	text       string
	size       float64
	anchor     int8 // -1 start, 0 middle, 1 end
	bold       bool
}

// scene is a picture: its size in cells and the operations, in order.
type scene struct {
	w, h float64
	ops  []op
}

func (s *scene) rect(x, y, w, h float64, fill color.NRGBA) {
	s.ops = append(s.ops, op{kind: opRect, x: x, y: y, w: w, h: h, fill: fill})
}

func (s *scene) circle(cx, cy, r float64, fill color.NRGBA) {
	s.ops = append(s.ops, op{kind: opCircle, x: cx, y: cy, w: r, fill: fill})
}

func (s *scene) diamond(cx, cy, r float64, fill color.NRGBA) {
	s.ops = append(s.ops, op{kind: opPoly, pts: []float64{cx, cy - r, cx + r, cy, cx, cy + r, cx - r, cy}, fill: fill})
}

// text draws s with its vertical middle on cy.
func (s *scene) text(x, cy float64, str string, size float64, anchor int8, bold bool, fill color.NRGBA) {
	s.ops = append(s.ops, op{kind: opText, x: x, y: cy + capHeight*size/2, text: str, size: size, anchor: anchor, bold: bold, fill: fill})
}

// board is what a picture shows of a layout, cell by cell.
type board struct {
	l     MapLayout
	lanes [][]int // per cell (row-major): the lanes covering it, ascending
	build []int   // per cell: the build zone's index, or -1
}

func newBoard(l MapLayout) (*board, error) {
	W, H := l.Width, l.Height
	if W < 1 || H < 1 || W > MaxDimension || H > MaxDimension {
		return nil, fmt.Errorf("render: width and height must be between 1 and %d, got %d×%d", MaxDimension, W, H)
	}
	b := &board{l: l, lanes: make([][]int, W*H), build: make([]int, W*H)}
	for i := range b.build {
		b.build[i] = -1
	}
	for zi, z := range l.BuildZones {
		for _, c := range z.Cells {
			if i, ok := b.index(c); ok {
				b.build[i] = zi
			}
		}
	}
	for li, ln := range l.Lanes {
		for _, c := range ln.Cells {
			if i, ok := b.index(c); ok && !slices.Contains(b.lanes[i], li) {
				b.lanes[i] = append(b.lanes[i], li)
			}
		}
	}
	return b, nil
}

func (b *board) index(c GridPoint) (int, bool) {
	if c.X < 0 || c.Y < 0 || c.X >= b.l.Width || c.Y >= b.l.Height {
		return 0, false
	}
	return c.Y*b.l.Width + c.X, true
}

// picture lays out the whole image: title, coordinates, board, legend.
func picture(l MapLayout, placements []Placement) (*scene, error) {
	if len(placements) > MaxPlacements {
		return nil, errTooManyPlacements(len(placements))
	}
	b, err := newBoard(l)
	if err != nil {
		return nil, err
	}
	W, H := float64(l.Width), float64(l.Height)
	ox, oy := marginLeft, titleBand+coordBand
	title := fmt.Sprintf("%s map · seed %d · version %d · %d×%d", l.Size, l.Seed, l.Version, l.Width, l.Height)
	if len(placements) > 0 {
		title += fmt.Sprintf(" · %d placements", len(placements))
	}
	s := &scene{w: max(ox+W+marginRight, ox+textWidth(title, sizeTitle, true)+marginRight)}
	legend := legendItems(l, placements)
	rows := layoutLegend(legend, s.w-ox-marginRight)
	s.h = oy + H + legendGap + float64(rows)*legendRow + marginBottom

	s.rect(0, 0, s.w, s.h, colorPaper)
	s.text(ox, titleBand/2+0.1, title, sizeTitle, -1, true, colorTitle)
	s.coordinates(ox, oy, l.Width, l.Height)
	s.rect(ox, oy, W, H, colorBoard)
	b.drawCells(s, ox, oy)
	s.grid(ox, oy, l.Width, l.Height)
	b.drawZoneIDs(s, ox, oy, placements)
	b.drawFootprints(s, ox, oy)
	drawPlacements(s, b, ox, oy, placements)
	drawLegend(s, legend, ox, oy+H+legendGap, s.w-ox-marginRight)
	return s, nil
}

// coordinates numbers the columns above the board and the rows to its
// left; every fifth number is brighter, matching the stronger grid line.
func (s *scene) coordinates(ox, oy float64, w, h int) {
	col := func(i int) color.NRGBA {
		if i%5 == 0 {
			return colorCoord5
		}
		return colorMuted
	}
	for x := range w {
		s.text(ox+float64(x)+0.5, oy-coordBand/2, strconv.Itoa(x), sizeCoord, 0, x%5 == 0, col(x))
	}
	for y := range h {
		s.text(ox-0.25, oy+float64(y)+0.5, strconv.Itoa(y), sizeCoord, 1, y%5 == 0, col(y))
	}
}

// grid draws a hairline between cells, stronger every five cells.
func (s *scene) grid(ox, oy float64, w, h int) {
	const hair = 1.0 / 16
	for x := 1; x < w; x++ {
		c := colorGrid
		if x%5 == 0 {
			c = colorGrid5
		}
		s.rect(ox+float64(x)-hair/2, oy, hair, float64(h), c)
	}
	for y := 1; y < h; y++ {
		c := colorGrid
		if y%5 == 0 {
			c = colorGrid5
		}
		s.rect(ox, oy+float64(y)-hair/2, float64(w), hair, c)
	}
}

// drawCells paints build cells green and lane cells in their lane's
// colour, cells of several lanes in diagonal stripes of each, merging runs
// of equal cells in a row into one rectangle.
func (b *board) drawCells(s *scene, ox, oy float64) {
	W := b.l.Width
	same := func(i, j int) bool { return b.build[i] == b.build[j] && slices.Equal(b.lanes[i], b.lanes[j]) }
	for y := range b.l.Height {
		for x := 0; x < W; {
			i := y*W + x
			end := x + 1
			for end < W && same(i, y*W+end) {
				end++
			}
			fx, fy, fw := ox+float64(x), oy+float64(y), float64(end-x)
			switch lanes := b.lanes[i]; {
			case len(lanes) == 1:
				s.rect(fx, fy, fw, 1, laneColor(lanes[0]))
			case len(lanes) > 1:
				cols := make([]color.NRGBA, len(lanes))
				for k, li := range lanes {
					cols[k] = laneColor(li)
				}
				s.ops = append(s.ops, op{kind: opStripes, x: fx, y: fy, w: fw, h: 1, stripes: cols})
			case b.build[i] >= 0:
				s.rect(fx, fy, fw, 1, colorBuild)
			}
			x = end
		}
	}
}

// drawZoneIDs writes each build zone's id on the zone cell nearest its
// centre (ties broken row-major), so the label sits inside the zone, and
// never under a placement.
func (b *board) drawZoneIDs(s *scene, ox, oy float64, placements []Placement) {
	taken := map[GridPoint]bool{}
	for _, p := range placements {
		taken[p.Cell] = true
	}
	for zi, z := range b.l.BuildZones {
		var sx, sy, n int
		for _, c := range z.Cells {
			if i, ok := b.index(c); ok && b.build[i] == zi && len(b.lanes[i]) == 0 {
				sx, sy, n = sx+c.X, sy+c.Y, n+1
			}
		}
		best, bestD := GridPoint{}, -1
		for _, c := range z.Cells {
			if i, ok := b.index(c); !ok || b.build[i] != zi || len(b.lanes[i]) > 0 || taken[c] {
				continue
			}
			dx, dy := c.X*n-sx, c.Y*n-sy
			if d := dx*dx + dy*dy; bestD < 0 || d < bestD || d == bestD && c.Less(best) {
				best, bestD = c, d
			}
		}
		if bestD >= 0 {
			s.text(ox+float64(best.X)+0.5, oy+float64(best.Y)+0.5, strconv.Itoa(z.ID), sizeLabel, 0, true, colorZoneID)
		}
	}
}

// drawFootprints marks each spawn with its lane's number in a disc and
// each goal (once, when lanes share it) with a G.
func (b *board) drawFootprints(s *scene, ox, oy float64) {
	goals := map[GridPoint]bool{}
	for li, ln := range b.l.Lanes {
		w := min(max(ln.Width, 1), MaxDimension)
		s.footprint(b, ox, oy, ln.Spawn, w, laneColor(li), strconv.Itoa(ln.ID))
		if !goals[ln.Goal] {
			goals[ln.Goal] = true
			s.footprint(b, ox, oy, ln.Goal, w, colorGoal, "G")
		}
	}
}

// footprint draws a w×w square at p, clipped to the board, with a disc
// and a label in its middle.
func (s *scene) footprint(b *board, ox, oy float64, p GridPoint, w int, fill color.NRGBA, label string) {
	x0, y0 := max(p.X, 0), max(p.Y, 0)
	x1, y1 := min(p.X+w, b.l.Width), min(p.Y+w, b.l.Height)
	if x0 >= x1 || y0 >= y1 {
		return
	}
	fx, fy, fw, fh := ox+float64(x0), oy+float64(y0), float64(x1-x0), float64(y1-y0)
	s.rect(fx, fy, fw, fh, colorFootprint)
	s.rect(fx+0.12, fy+0.12, fw-0.24, fh-0.24, fill)
	cx, cy := fx+fw/2, fy+fh/2
	r := min(fw, fh)*0.32 + 0.1
	s.circle(cx, cy, r, colorWhite)
	s.text(cx, cy, label, r*1.25, 0, true, colorInk)
}

// drawPlacements draws towers as white discs with a T and traps as violet
// diamonds, each with a dark rim so it stands out on any cell.
func drawPlacements(s *scene, b *board, ox, oy float64, placements []Placement) {
	for _, p := range placements {
		if _, ok := b.index(p.Cell); !ok {
			continue
		}
		cx, cy := ox+float64(p.Cell.X)+0.5, oy+float64(p.Cell.Y)+0.5
		drawStructure(s, p.Kind, cx, cy)
	}
}

func drawStructure(s *scene, kind StructureKind, cx, cy float64) {
	switch kind {
	case Tower:
		s.circle(cx, cy, 0.45, colorInk)
		s.circle(cx, cy, 0.37, colorWhite)
		s.text(cx, cy, "T", 0.46, 0, true, colorInk)
	case Trap:
		s.diamond(cx, cy, 0.48, colorInk)
		s.diamond(cx, cy, 0.37, colorTrap)
	}
}

// legendItem is one entry of the legend: a swatch drawn at (x, y) and a
// label.
type legendItem struct {
	label string
	draw  func(s *scene, x, y float64)
}

func legendItems(l MapLayout, placements []Placement) []legendItem {
	var items []legendItem
	for li, ln := range l.Lanes {
		items = append(items, legendItem{fmt.Sprintf("lane %d", ln.ID), func(s *scene, x, y float64) {
			s.rect(x, y, swatch, swatch, laneColor(li))
		}})
	}
	if len(l.Lanes) > 1 {
		items = append(items, legendItem{"lanes overlap", func(s *scene, x, y float64) {
			s.ops = append(s.ops, op{kind: opStripes, x: x, y: y, w: swatch, h: swatch, stripes: []color.NRGBA{laneColor(0), laneColor(1)}})
		}})
	}
	disc := func(fill color.NRGBA, label string) func(s *scene, x, y float64) {
		return func(s *scene, x, y float64) {
			s.rect(x, y, swatch, swatch, fill)
			s.circle(x+swatch/2, y+swatch/2, 0.33, colorWhite)
			s.text(x+swatch/2, y+swatch/2, label, 0.42, 0, true, colorInk)
		}
	}
	items = append(items,
		legendItem{"spawn, lane's number", disc(laneColor(0), "0")},
		legendItem{"goal", disc(colorGoal, "G")},
		legendItem{"build zone, its id", func(s *scene, x, y float64) {
			s.rect(x, y, swatch, swatch, colorBuild)
			s.text(x+swatch/2, y+swatch/2, "1", sizeLabel, 0, true, colorZoneID)
		}},
	)
	kinds := map[StructureKind]bool{}
	for _, p := range placements {
		kinds[p.Kind] = true
	}
	for _, k := range []StructureKind{Tower, Trap} {
		if kinds[k] {
			items = append(items, legendItem{string(k), func(s *scene, x, y float64) {
				s.rect(x, y, swatch, swatch, colorBoard)
				drawStructure(s, k, x+swatch/2, y+swatch/2)
			}})
		}
	}
	return append(items, legendItem{"x across, y down, from 0", nil})
}

// legendItemWidth is the room an item takes, gap included.
func legendItemWidth(it legendItem) float64 {
	w := textWidth(it.label, sizeLegend, false) + legendSpacing
	if it.draw != nil {
		w += swatch + 0.35
	}
	return w
}

// layoutLegend counts the rows the items fill in the given width.
func layoutLegend(items []legendItem, width float64) int {
	rows, x := 1, 0.0
	for _, it := range items {
		w := legendItemWidth(it)
		if x > 0 && x+w-legendSpacing > width {
			rows, x = rows+1, 0
		}
		x += w
	}
	return rows
}

func drawLegend(s *scene, items []legendItem, ox, oy, width float64) {
	x, y := 0.0, oy
	for _, it := range items {
		w := legendItemWidth(it)
		if x > 0 && x+w-legendSpacing > width {
			x, y = 0, y+legendRow
		}
		tx := ox + x
		fill := colorTitle
		if it.draw != nil {
			it.draw(s, tx, y)
			tx += swatch + 0.35
		} else {
			fill = colorMuted
		}
		s.text(tx, y+swatch/2, it.label, sizeLegend, -1, false, fill)
		x += w
	}
}
