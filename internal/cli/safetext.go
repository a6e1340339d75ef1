package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// safeText makes user-controlled text (a User-Agent, a display name, a
// layout's fields) safe to show on a terminal: control characters (C0,
// DEL and C1, whose U+009B starts a terminal command like ESC [ does) and
// format characters (bidirectional overrides such as U+202E, zero-width
// ones) are written as Go escapes, \x1b or \u202e, and invalid UTF-8 as
// U+FFFD. A support person then sees exactly what was sent, and nothing
// sent can move the cursor, recolour the screen or reorder a line.
func safeText(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			b.WriteRune(utf8.RuneError)
		case unsafeRune(r) && r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r) && r <= 0xFFFF:
			fmt.Fprintf(&b, `\u%04x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\U%08x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// unsafeRune reports whether r may act on a terminal or on the order of
// the text around it rather than show as a glyph.
func unsafeRune(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029'
}

func needsEscape(s string) bool {
	if !utf8.ValidString(s) {
		return true
	}
	for _, r := range s {
		if unsafeRune(r) {
			return true
		}
	}
	return false
}

// safeRows is rows with every cell made safe.
func safeRows(rows [][]string) [][]string {
	out := make([][]string, len(rows))
	for i, r := range rows {
		out[i] = make([]string, len(r))
		for j, c := range r {
			out[i][j] = safeText(c)
		}
	}
	return out
}

// escapeJSONText rewrites the JSON document doc so that no control or
// format character is left raw in it (encoding/json escapes C0 but leaves
// C1 and bidirectional controls as they are): each becomes a \uXXXX
// escape, which decodes to the same string. Any such rune in JSON is
// inside a string, where an escape is always valid.
func escapeJSONText(doc []byte) []byte {
	if !needsEscape(string(doc)) {
		return doc
	}
	var b bytes.Buffer
	for len(doc) > 0 {
		r, n := utf8.DecodeRune(doc)
		switch {
		case r == utf8.RuneError && n <= 1:
			b.WriteString(`\ufffd`)
		case unsafeRune(r) && r > 0xFFFF:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
		case unsafeRune(r) && r >= 0x7f:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.Write(doc[:n])
		}
		doc = doc[n:]
	}
	return b.Bytes()
}

// safeYAMLValue is v as its JSON form decodes, with every string made safe
// by safeText: YAML refuses control characters outright, and shows
// bidirectional ones raw.
func safeYAMLValue(v any) (any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	return safeStrings(doc), nil
}

func safeStrings(v any) any {
	switch t := v.(type) {
	case string:
		return safeText(t)
	case []any:
		for i := range t {
			t[i] = safeStrings(t[i])
		}
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[safeText(k)] = safeStrings(e)
		}
		return out
	}
	return v
}
