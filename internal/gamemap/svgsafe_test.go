package gamemap

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
)

// The SVG is well-formed XML whatever a layout's text fields hold: ESC and
// OSC sequences, C1 controls, bidirectional overrides, markup, invalid
// UTF-8.
func TestSVGIsWellFormedWhateverTheInput(t *testing.T) {
	for _, hostile := range []string{
		"short\x1b]0;owned\x07\x1b[2J",
		"short\u009b31m\u202etxt.exe",
		"<script>&\"'</script>",
		"bad\xff\xfeutf8\x00",
	} {
		l := Generate(Short, 42)
		l.Size = Size(hostile)
		var buf bytes.Buffer
		if err := SVG(&buf, l, RenderOptions{}); err != nil {
			t.Fatalf("SVG refused a layout sized %q: %v", hostile, err)
		}
		if strings.ContainsAny(buf.String(), "\x1b\x07\x00\u009b\u202e") {
			t.Errorf("SVG for size %q carries a control or bidi character raw", hostile)
		}
		dec := xml.NewDecoder(&buf)
		for {
			_, err := dec.Token()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("SVG for size %q is not well-formed XML: %v", hostile, err)
			}
		}
	}
}
