package gamemap

import (
	"encoding/json"
	"math"
	"strconv"
)

// ParseLayout decodes a layout from JSON exactly as json.Unmarshal does,
// only faster for the shape json.Marshal writes (keys in declaration order,
// plain strings, any whitespace between tokens): that shape is read by hand
// in one pass, and any other input is handed to json.Unmarshal, so the
// accepted input, the result and the errors are always the standard ones.
func ParseLayout(data []byte) (MapLayout, error) {
	p := parser{b: data}
	if l, ok := p.layout(); ok {
		return l, nil
	}
	var l MapLayout
	err := json.Unmarshal(data, &l)
	return l, err
}

// parser reads the canonical shape; any surprise makes ok false and the
// caller falls back to encoding/json.
type parser struct {
	b []byte
	i int
}

func (p *parser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// tok consumes s after optional whitespace.
func (p *parser) tok(s string) bool {
	p.ws()
	if len(p.b)-p.i < len(s) || string(p.b[p.i:p.i+len(s)]) != s {
		return false
	}
	p.i += len(s)
	return true
}

// key consumes "name" and the colon.
func (p *parser) key(name string) bool {
	return p.tok(`"`) && p.tok2(name) && p.tok(":")
}

// tok2 consumes s with no whitespace before it, then the closing quote.
func (p *parser) tok2(s string) bool {
	if len(p.b)-p.i < len(s)+1 || string(p.b[p.i:p.i+len(s)]) != s || p.b[p.i+len(s)] != '"' {
		return false
	}
	p.i += len(s) + 1
	return true
}

// digits consumes a JSON integer without sign: 0 or [1-9][0-9]*, at most
// max digits, not followed by a fraction or exponent.
func (p *parser) digits(max int) (uint64, bool) {
	start := p.i
	var n uint64
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		n = n*10 + uint64(p.b[p.i]-'0')
		p.i++
	}
	d := p.i - start
	if d == 0 || d > max || (d > 1 && p.b[start] == '0') {
		return 0, false
	}
	if p.i < len(p.b) && (p.b[p.i] == '.' || p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		return 0, false
	}
	return n, true
}

// int consumes an integer of at most 18 digits that fits an int.
func (p *parser) int() (int, bool) {
	p.ws()
	neg := p.i < len(p.b) && p.b[p.i] == '-'
	if neg {
		p.i++
	}
	n, ok := p.digits(18)
	if !ok || n > math.MaxInt {
		return 0, false
	}
	if neg {
		return -int(n), true
	}
	return int(n), true
}

// plain consumes a string of letters, digits, '-' and '_' (nothing to
// escape or validate).
func (p *parser) plain() (string, bool) {
	if !p.tok(`"`) {
		return "", false
	}
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		if c == '"' {
			s := string(p.b[start:p.i])
			p.i++
			return s, true
		}
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return "", false
		}
		p.i++
	}
	return "", false
}

// seed consumes the quoted decimal uint64 of the ",string" option.
func (p *parser) seed() (uint64, bool) {
	if !p.tok(`"`) {
		return 0, false
	}
	start := p.i
	if _, ok := p.digits(20); !ok || p.i >= len(p.b) || p.b[p.i] != '"' {
		return 0, false
	}
	n, err := strconv.ParseUint(string(p.b[start:p.i]), 10, 64)
	p.i++
	return n, err == nil
}

func (p *parser) point() (GridPoint, bool) {
	if g, n, ok := compactPoint(p.b[p.i:]); ok {
		p.i += n
		return g, true
	}
	var g GridPoint
	ok := p.tok("{") && p.key("x")
	if ok {
		g.X, ok = p.int()
	}
	ok = ok && p.tok(",") && p.key("y")
	if ok {
		g.Y, ok = p.int()
	}
	return g, ok && p.tok("}")
}

// compactPoint reads {"x":N,"y":M} with no spaces and numbers of at most
// 9 digits at the start of b, returning the bytes used. Anything else is
// left to the general path. It works on locals only, which keeps it fast
// (and cheap under the race detector).
func compactPoint(b []byte) (GridPoint, int, bool) {
	const px, py = `{"x":`, `,"y":`
	if len(b) < 13 || string(b[:5]) != px {
		return GridPoint{}, 0, false
	}
	x, i, ok := compactInt(b, 5)
	if !ok || len(b)-i < 7 || string(b[i:i+5]) != py {
		return GridPoint{}, 0, false
	}
	y, i, ok := compactInt(b, i+5)
	if !ok || i >= len(b) || b[i] != '}' {
		return GridPoint{}, 0, false
	}
	return GridPoint{x, y}, i + 1, true
}

func compactInt(b []byte, i int) (int, int, bool) {
	neg := i < len(b) && b[i] == '-'
	if neg {
		i++
	}
	start, n := i, 0
	for i < len(b) && i-start < 10 && b[i] >= '0' && b[i] <= '9' {
		n = n*10 + int(b[i]-'0')
		i++
	}
	d := i - start
	if d == 0 || d > 9 || (d > 1 && b[start] == '0') || (i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E')) {
		return 0, 0, false
	}
	if neg {
		n = -n
	}
	return n, i, true
}

// list consumes [a, b, ...] calling item for each element.
func (p *parser) list(item func() bool) bool {
	if !p.tok("[") {
		return false
	}
	if p.tok("]") {
		return true
	}
	for {
		if !item() {
			return false
		}
		if p.tok("]") {
			return true
		}
		if !p.tok(",") {
			return false
		}
	}
}

// points consumes a list of points without a closure per element, with a
// fast path for the compact form.
func (p *parser) points() ([]GridPoint, bool) {
	if !p.tok("[") {
		return nil, false
	}
	out := make([]GridPoint, 0, p.estimate())
	if p.tok("]") {
		return out, true
	}
	b, i := p.b, p.i
	for {
		if g, n, ok := compactPoint(b[i:]); ok {
			out = append(out, g)
			i += n
		} else {
			p.i = i
			g, ok := p.point()
			if !ok {
				return nil, false
			}
			out = append(out, g)
			i = p.i
		}
		if i < len(b) && b[i] == ',' {
			i++
			continue
		}
		if i < len(b) && b[i] == ']' {
			p.i = i + 1
			return out, true
		}
		p.i = i
		if p.tok("]") {
			return out, true
		}
		if !p.tok(",") {
			return nil, false
		}
		i = p.i
	}
}

// estimate guesses how many points follow from the distance to the next
// ']' (a point takes at least 13 bytes), to size the slice once.
func (p *parser) estimate() int {
	for j := p.i; j < len(p.b); j++ {
		if p.b[j] == ']' {
			return (j - p.i) / 13
		}
	}
	return 0
}

func (p *parser) lane() (PathLane, bool) {
	var ln PathLane
	ok := p.tok("{") && p.key("id")
	if ok {
		ln.ID, ok = p.int()
	}
	ok = ok && p.tok(",") && p.key("width")
	if ok {
		ln.Width, ok = p.int()
	}
	ok = ok && p.tok(",") && p.key("spawn")
	if ok {
		ln.Spawn, ok = p.point()
	}
	ok = ok && p.tok(",") && p.key("goal")
	if ok {
		ln.Goal, ok = p.point()
	}
	ok = ok && p.tok(",") && p.key("centerline")
	if ok {
		ln.Centerline, ok = p.points()
	}
	ok = ok && p.tok(",") && p.key("cells")
	if ok {
		ln.Cells, ok = p.points()
	}
	return ln, ok && p.tok("}")
}

func (p *parser) zone() (BuildZone, bool) {
	var z BuildZone
	ok := p.tok("{") && p.key("id")
	if ok {
		z.ID, ok = p.int()
	}
	ok = ok && p.tok(",") && p.key("laneIds")
	if ok {
		z.LaneIDs = []int{}
		ok = p.list(func() bool {
			n, ok := p.int()
			z.LaneIDs = append(z.LaneIDs, n)
			return ok
		})
	}
	ok = ok && p.tok(",") && p.key("cells")
	if ok {
		z.Cells, ok = p.points()
	}
	return z, ok && p.tok("}")
}

func (p *parser) layout() (MapLayout, bool) {
	var l MapLayout
	var size string
	ok := p.tok("{") && p.key("version")
	if ok {
		l.Version, ok = p.int()
	}
	ok = ok && p.tok(",") && p.key("size")
	if ok {
		size, ok = p.plain()
		l.Size = Size(size)
	}
	ok = ok && p.tok(",") && p.key("seed")
	if ok {
		l.Seed, ok = p.seed()
	}
	ok = ok && p.tok(",") && p.key("width")
	if ok {
		l.Width, ok = p.int()
	}
	ok = ok && p.tok(",") && p.key("height")
	if ok {
		l.Height, ok = p.int()
	}
	ok = ok && p.tok(",") && p.key("lanes")
	if ok {
		l.Lanes = []PathLane{}
		ok = p.list(func() bool {
			ln, ok := p.lane()
			l.Lanes = append(l.Lanes, ln)
			return ok
		})
	}
	ok = ok && p.tok(",") && p.key("overlapCells")
	if ok {
		l.OverlapCells, ok = p.points()
	}
	ok = ok && p.tok(",") && p.key("buildZones")
	if ok {
		l.BuildZones = []BuildZone{}
		ok = p.list(func() bool {
			z, ok := p.zone()
			l.BuildZones = append(l.BuildZones, z)
			return ok
		})
	}
	ok = ok && p.tok("}")
	p.ws()
	return l, ok && p.i == len(p.b)
}
