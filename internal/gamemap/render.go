package gamemap

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Glyphs used by ASCII, one per cell, coloured on a terminal with
// GlyphColor. PNG and SVG draw a fuller picture (see PNG).
const (
	GlyphEmpty   = '.'
	GlyphPath    = '#'
	GlyphOverlap = 'X'
	GlyphBuild   = '+'
	GlyphGoal    = 'G'
	GlyphTower   = 'T'
	GlyphTrap    = '^'
	// A spawn footprint shows its lane's letter: 'A' for lane 0, 'B' for 1…
	GlyphSpawn = 'A'
)

// GlyphColor returns the colour, as #rrggbb, in which renderers draw a glyph.
func GlyphColor(g byte) string {
	switch {
	case g == GlyphPath:
		return "#c8a165"
	case g == GlyphOverlap:
		return "#e07a2f"
	case g == GlyphBuild:
		return "#5a9e4b"
	case g == GlyphGoal:
		return "#d64545"
	case g == GlyphTower:
		return "#3b6fd6"
	case g == GlyphTrap:
		return "#8e44ad"
	case g >= GlyphSpawn && g < GlyphSpawn+MaxLanes:
		return "#f2d04b"
	}
	return "#2b2b2b"
}

// glyphs rasterises a layout (and placements on it) into one glyph per cell,
// row-major. Points outside the grid are ignored, so hand-edited layouts
// render as far as they make sense.
func glyphs(l MapLayout, placements []Placement) ([]byte, error) {
	W, H := l.Width, l.Height
	if W < 1 || H < 1 || W > MaxDimension || H > MaxDimension {
		return nil, fmt.Errorf("render: width and height must be between 1 and %d, got %d×%d", MaxDimension, W, H)
	}
	g := make([]byte, W*H)
	for i := range g {
		g[i] = GlyphEmpty
	}
	set := func(p GridPoint, b byte) {
		if p.X >= 0 && p.Y >= 0 && p.X < W && p.Y < H {
			g[p.Y*W+p.X] = b
		}
	}
	for _, z := range l.BuildZones {
		for _, c := range z.Cells {
			set(c, GlyphBuild)
		}
	}
	for _, ln := range l.Lanes {
		for _, c := range ln.Cells {
			set(c, GlyphPath)
		}
	}
	for _, c := range l.OverlapCells {
		set(c, GlyphOverlap)
	}
	square := func(p GridPoint, w int, b byte) {
		w = min(max(w, 1), MaxDimension)
		for dy := range w {
			for dx := range w {
				set(GridPoint{p.X + dx, p.Y + dy}, b)
			}
		}
	}
	for i, ln := range l.Lanes {
		if i < MaxLanes {
			square(ln.Spawn, ln.Width, byte(GlyphSpawn+i))
		}
	}
	for _, ln := range l.Lanes {
		square(ln.Goal, ln.Width, GlyphGoal)
	}
	for _, p := range placements {
		switch p.Kind {
		case Tower:
			set(p.Cell, GlyphTower)
		case Trap:
			set(p.Cell, GlyphTrap)
		}
	}
	return g, nil
}

// ASCII draws the layout as text, one line per row, with the Glyph* legend.
// Placements, if any, are drawn on top. An impossible grid yields an error.
func ASCII(l MapLayout, placements ...Placement) (string, error) {
	g, err := glyphs(l, placements)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.Grow(len(g) + l.Height)
	for y := range l.Height {
		b.Write(g[y*l.Width : (y+1)*l.Width])
		b.WriteByte('\n')
	}
	return b.String(), nil
}

// escapeXML makes s safe as XML text or an attribute value, whatever it
// holds: markup characters are escaped, and what XML 1.0 forbids (most
// C0 controls, such as ESC, and invalid UTF-8) or what would act on the
// reader rather than show (C1 controls, bidirectional overrides and other
// format characters) becomes U+FFFD, so the SVG is always well-formed.
func escapeXML(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			b.WriteRune(utf8.RuneError)
		case !xmlShowable(r):
			b.WriteRune(utf8.RuneError)
		case r == '&':
			b.WriteString("&amp;")
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '"':
			b.WriteString("&quot;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// xmlShowable reports whether r is an XML 1.0 character that shows as
// text: not a control (but tab), not a format character, not a surrogate
// or non-character.
func xmlShowable(r rune) bool {
	switch {
	case r == '\t':
		return true
	case unicode.IsControl(r), unicode.Is(unicode.Cf, r), r == '\u2028', r == '\u2029':
		return false
	}
	return r >= 0x20 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF
}
