package gamemap

import (
	"bufio"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"
	"golang.org/x/image/vector"
)

// capHeight is the height of the Go fonts' digits and capitals as a
// fraction of the font size; text is centred on it.
const capHeight = 0.7

// fonts parses the embedded Go fonts once. PNG draws with them; SVG names
// them first and measures with them, so both pictures lay out alike.
var fonts = sync.OnceValues(func() ([2]*opentype.Font, error) {
	var fs [2]*opentype.Font
	for i, ttf := range [][]byte{goregular.TTF, gobold.TTF} {
		f, err := opentype.Parse(ttf)
		if err != nil {
			return fs, fmt.Errorf("render: parse the Go font: %w", err)
		}
		fs[i] = f
	}
	return fs, nil
})

// faceCache keeps one face per (boldness, pixel size); a face is not safe
// for concurrent use, so each PNG call has its own cache.
type faceCache map[[2]int]font.Face

func (fc faceCache) face(bold bool, px float64) (font.Face, error) {
	key := [2]int{0, int(math.Round(px * 64))}
	if bold {
		key[0] = 1
	}
	if f, ok := fc[key]; ok {
		return f, nil
	}
	fs, err := fonts()
	if err != nil {
		return nil, err
	}
	f, err := opentype.NewFace(fs[key[0]], &opentype.FaceOptions{Size: float64(key[1]) / 64, DPI: 72, Hinting: font.HintingNone})
	if err != nil {
		return nil, fmt.Errorf("render: font face: %w", err)
	}
	fc[key] = f
	return f, nil
}

// measure is the cache textWidth measures with, at 64 pixels per cell.
var measure = struct {
	sync.Mutex
	faces faceCache
}{faces: faceCache{}}

// textWidth is the advance of str in cells at size (in cells).
func textWidth(str string, size float64, bold bool) float64 {
	measure.Lock()
	defer measure.Unlock()
	f, err := measure.faces.face(bold, size*64)
	if err != nil {
		return float64(len(str)) * size * 0.6 // the embedded fonts always parse; a fair guess otherwise
	}
	return float64(font.MeasureString(f, str)) / 64 / 64
}

// PNG writes the picture of the layout (title, coordinates, lanes, spawns,
// goals, build zones, placements and a legend) as a PNG image with
// opt.Scale pixels per cell. The same input gives the same bytes.
func PNG(w io.Writer, l MapLayout, opt RenderOptions) error {
	scale, err := opt.scale()
	if err != nil {
		return err
	}
	s, err := picture(l, opt.Placements)
	if err != nil {
		return err
	}
	k := float64(scale)
	img := image.NewRGBA(image.Rect(0, 0, int(math.Ceil(s.w*k)), int(math.Ceil(s.h*k))))
	faces := faceCache{}
	for i := range s.ops {
		if err := rasterise(img, &s.ops[i], k, faces); err != nil {
			return err
		}
	}
	return png.Encode(w, img)
}

func rasterise(img *image.RGBA, o *op, k float64, faces faceCache) error {
	px := func(v float64) int { return int(math.Round(v * k)) }
	switch o.kind {
	case opRect:
		r := image.Rect(px(o.x), px(o.y), px(o.x+o.w), px(o.y+o.h))
		if r.Dx() == 0 && o.w > 0 { // a hairline keeps at least one pixel
			r.Max.X++
		}
		if r.Dy() == 0 && o.h > 0 {
			r.Max.Y++
		}
		draw.Draw(img, r, image.NewUniform(o.fill), image.Point{}, draw.Over)
	case opStripes:
		stripes(img, o, k)
	case opCircle:
		r := o.w * k
		fillPath(img, o.fill, o.x*k-r, o.y*k-r, o.x*k+r, o.y*k+r, func(z *vector.Rasterizer, dx, dy float64) {
			circlePath(z, float32(o.x*k-dx), float32(o.y*k-dy), float32(r))
		})
	case opPoly:
		x0, y0, x1, y1 := bounds(o.pts)
		fillPath(img, o.fill, x0*k, y0*k, x1*k, y1*k, func(z *vector.Rasterizer, dx, dy float64) {
			z.MoveTo(float32(o.pts[0]*k-dx), float32(o.pts[1]*k-dy))
			for i := 2; i < len(o.pts); i += 2 {
				z.LineTo(float32(o.pts[i]*k-dx), float32(o.pts[i+1]*k-dy))
			}
			z.ClosePath()
		})
	case opText:
		f, err := faces.face(o.bold, o.size*k)
		if err != nil {
			return err
		}
		d := font.Drawer{Dst: img, Src: image.NewUniform(o.fill), Face: f}
		x := o.x * k
		if o.anchor >= 0 {
			x -= float64(d.MeasureString(o.text)) / 64 * (1 + float64(o.anchor)) / 2
		}
		d.Dot = fixed.Point26_6{X: fixed.Int26_6(math.Round(x * 64)), Y: fixed.Int26_6(math.Round(o.y * k * 64))}
		d.DrawString(o.text)
	}
	return nil
}

// stripes fills the rectangle with diagonal bands, stripeWidth cells wide,
// of each colour in turn. Bands are placed by absolute position, so
// neighbouring cells continue each other's stripes.
func stripes(img *image.RGBA, o *op, k float64) {
	x0, y0 := int(math.Round(o.x*k)), int(math.Round(o.y*k))
	x1, y1 := int(math.Round((o.x+o.w)*k)), int(math.Round((o.y+o.h)*k))
	n := len(o.stripes)
	cols := make([]color.RGBA, n)
	for i, c := range o.stripes {
		cols[i] = color.RGBAModel.Convert(c).(color.RGBA)
	}
	for py := y0; py < y1; py++ {
		for px := x0; px < x1; px++ {
			u := (float64(px) + 0.5 + float64(py) + 0.5) / k / math.Sqrt2
			img.SetRGBA(px, py, cols[int(math.Floor(u/stripeWidth))%n])
		}
	}
}

// fillPath fills the path that path adds, in pixels relative to (dx, dy),
// within the box (x0, y0)-(x1, y1): the rasteriser spans only the box, not
// the whole image.
func fillPath(img *image.RGBA, c color.NRGBA, x0, y0, x1, y1 float64, path func(z *vector.Rasterizer, dx, dy float64)) {
	box := image.Rect(int(math.Floor(x0))-1, int(math.Floor(y0))-1, int(math.Ceil(x1))+1, int(math.Ceil(y1))+1)
	if !box.In(img.Bounds()) {
		return // shapes are laid out inside the picture; never draw past it
	}
	z := vector.NewRasterizer(box.Dx(), box.Dy())
	path(z, float64(box.Min.X), float64(box.Min.Y))
	z.Draw(img, box, image.NewUniform(c), image.Point{})
}

func bounds(pts []float64) (x0, y0, x1, y1 float64) {
	x0, y0, x1, y1 = pts[0], pts[1], pts[0], pts[1]
	for i := 2; i < len(pts); i += 2 {
		x0, x1 = min(x0, pts[i]), max(x1, pts[i])
		y0, y1 = min(y0, pts[i+1]), max(y1, pts[i+1])
	}
	return x0, y0, x1, y1
}

// circlePath adds a circle of four cubic Béziers.
func circlePath(z *vector.Rasterizer, cx, cy, r float32) {
	const kappa = 0.5522848
	c := r * kappa
	z.MoveTo(cx+r, cy)
	z.CubeTo(cx+r, cy+c, cx+c, cy+r, cx, cy+r)
	z.CubeTo(cx-c, cy+r, cx-r, cy+c, cx-r, cy)
	z.CubeTo(cx-r, cy-c, cx-c, cy-r, cx, cy-r)
	z.CubeTo(cx+c, cy-r, cx+r, cy-c, cx+r, cy)
	z.ClosePath()
}

// SVGCellSize is the side of one cell in SVG user units.
const SVGCellSize = 16

// SVG writes the same picture as PNG as SVG text, opt.Scale pixels per
// cell wide and high (the viewBox keeps SVGCellSize units per cell). The
// same input gives the same bytes.
func SVG(w io.Writer, l MapLayout, opt RenderOptions) error {
	scale, err := opt.scale()
	if err != nil {
		return err
	}
	s, err := picture(l, opt.Placements)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" font-family="Go, 'Helvetica Neue', Arial, sans-serif">`+"\n",
		num(s.w*float64(scale)/SVGCellSize), num(s.h*float64(scale)/SVGCellSize), num(s.w), num(s.h))
	fmt.Fprintf(bw, "<title>%s map, seed %d, version %d</title>\n", escapeXML(string(l.Size)), l.Seed, l.Version)
	patterns := map[string]bool{}
	for i := range s.ops {
		writeSVGOp(bw, &s.ops[i], patterns)
	}
	bw.WriteString("</svg>\n")
	return bw.Flush()
}

// num formats a length in cells as SVG user units, to 1/100 of a unit.
func num(cells float64) string {
	return strconv.FormatFloat(math.Round(cells*SVGCellSize*100)/100, 'f', -1, 64)
}

func writeSVGOp(w *bufio.Writer, o *op, patterns map[string]bool) {
	switch o.kind {
	case opRect:
		fmt.Fprintf(w, `<rect x="%s" y="%s" width="%s" height="%s"%s/>`+"\n", num(o.x), num(o.y), num(o.w), num(o.h), fill(o.fill))
	case opStripes:
		id := stripePattern(w, o.stripes, patterns)
		fmt.Fprintf(w, `<rect x="%s" y="%s" width="%s" height="%s" fill="url(#%s)"/>`+"\n", num(o.x), num(o.y), num(o.w), num(o.h), id)
	case opCircle:
		fmt.Fprintf(w, `<circle cx="%s" cy="%s" r="%s"%s/>`+"\n", num(o.x), num(o.y), num(o.w), fill(o.fill))
	case opPoly:
		pts := make([]string, 0, len(o.pts)/2)
		for i := 0; i < len(o.pts); i += 2 {
			pts = append(pts, num(o.pts[i])+","+num(o.pts[i+1]))
		}
		fmt.Fprintf(w, `<polygon points="%s"%s/>`+"\n", strings.Join(pts, " "), fill(o.fill))
	case opText:
		anchor := [...]string{"start", "middle", "end"}[o.anchor+1]
		weight := ""
		if o.bold {
			weight = ` font-weight="bold"`
		}
		fmt.Fprintf(w, `<text x="%s" y="%s" font-size="%s" text-anchor="%s"%s%s>%s</text>`+"\n",
			num(o.x), num(o.y), num(o.size), anchor, weight, fill(o.fill), escapeXML(o.text))
	}
}

// stripePattern defines, once per combination of colours, a pattern of
// diagonal bands matching the PNG's, and returns its id.
func stripePattern(w *bufio.Writer, cols []color.NRGBA, patterns map[string]bool) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = fmt.Sprintf("%02x%02x%02x", c.R, c.G, c.B)
	}
	id := "stripes-" + strings.Join(parts, "-")
	if patterns[id] {
		return id
	}
	patterns[id] = true
	n := float64(len(cols))
	fmt.Fprintf(w, `<defs><pattern id="%s" patternUnits="userSpaceOnUse" width="%s" height="%s" patternTransform="rotate(45)">`,
		id, num(stripeWidth*n), num(stripeWidth*n))
	for i, c := range cols {
		fmt.Fprintf(w, `<rect x="%s" width="%s" height="%s"%s/>`, num(stripeWidth*float64(i)), num(stripeWidth), num(stripeWidth*n), fill(c))
	}
	w.WriteString("</pattern></defs>\n")
	return id
}

// fill is the fill attribute of a colour, with its opacity when not opaque.
func fill(c color.NRGBA) string {
	s := fmt.Sprintf(` fill="#%02x%02x%02x"`, c.R, c.G, c.B)
	if c.A != 0xff {
		s += fmt.Sprintf(` fill-opacity="%s"`, strconv.FormatFloat(math.Round(float64(c.A)/255*1000)/1000, 'f', -1, 64))
	}
	return s
}
