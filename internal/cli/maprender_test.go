package cli

import (
	"bytes"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/towerdefence/platformctl/internal/gamemap"
)

func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func decodePNG(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(bytes.NewReader(data)); err != nil {
		t.Fatalf("%s is not a PNG: %v", path, err)
	}
}

// TestMapRender draws a generated map and an edited layout with
// placements, in both formats, and checks the pictures say what was asked.
func TestMapRender(t *testing.T) {
	dir := t.TempDir()
	pngPath := filepath.Join(dir, "m.png")
	r := runMap(t, "", "map", "render", "--size", "short", "--seed", "42", "--file", pngPath)
	if r.code != 0 || !strings.Contains(r.stderr, pngPath) {
		t.Fatalf("png: exit %d stderr %q", r.code, r.stderr)
	}
	decodePNG(t, pngPath)

	l := gamemap.Generate(gamemap.Long, 9)
	layout, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	in := writeTemp(t, "layout.json", string(layout))
	placed, err := json.Marshal([]gamemap.Placement{{Kind: gamemap.Tower, Cell: l.BuildZones[0].Cells[0]}, {Kind: gamemap.Trap, Cell: l.Lanes[0].Cells[30]}})
	if err != nil {
		t.Fatal(err)
	}
	ps := writeTemp(t, "placed.json", string(placed))
	r = runMap(t, "", "map", "render", "--in", in, "--placements", ps, "--file", "-", "--picture-format", "svg", "--scale", "10")
	if r.code != 0 || !strings.Contains(r.stdout, "long map · seed 9 · version 1 · 48×27 · 2 placements") ||
		!strings.Contains(r.stdout, ">tower</text>") || !strings.Contains(r.stdout, ">trap</text>") {
		t.Fatalf("svg with placements: exit %d stderr %q", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, `width="`+svgWidth(t, r.stdout)) {
		t.Fatal("no width")
	}
	big := runMap(t, "", "map", "render", "--in", in, "--file", "-", "--picture-format", "svg", "--scale", "20")
	if w1, w2 := svgWidth(t, r.stdout), svgWidth(t, big.stdout); w1 == w2 {
		t.Errorf("--scale 10 and 20 give the same SVG width %s", w1)
	}
}

func svgWidth(t *testing.T, svg string) string {
	t.Helper()
	_, rest, ok := strings.Cut(svg, `width="`)
	w, _, ok2 := strings.Cut(rest, `"`)
	if !ok || !ok2 {
		t.Fatalf("no width in %.200s", svg)
	}
	return w
}

// TestMapRenderFromAnalyzeAndPlace: analyze --in draws even a broken
// layout (and still fails), place --render draws the accepted placement.
func TestMapRenderFromAnalyzeAndPlace(t *testing.T) {
	l := gamemap.Generate(gamemap.Short, 9)
	l.Lanes[0].Cells = l.Lanes[0].Cells[1:]
	bad, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	in := writeTemp(t, "bad.json", string(bad))
	pic := filepath.Join(t.TempDir(), "bad.png")
	r := runMap(t, "", "map", "analyze", "--in", in, "--render", pic)
	if r.code != ExitFailure || !strings.Contains(r.stdout, "problems") {
		t.Fatalf("broken layout: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	decodePNG(t, pic)

	svg := filepath.Join(t.TempDir(), "placed.svg")
	args := []string{"map", "place", "--size", "short", "--seed", "42", "--kind", "tower", "--x", "18", "--y", "0", "--render", svg}
	if r := runMap(t, "", args...); r.code != 0 {
		t.Fatalf("place: exit %d stderr %q", r.code, r.stderr)
	}
	data, err := os.ReadFile(svg)
	if err != nil || !strings.Contains(string(data), "1 placements") || !strings.Contains(string(data), ">tower</text>") {
		t.Fatalf("accepted tower not drawn: %v", err)
	}
	refused := []string{"map", "place", "--size", "short", "--seed", "42", "--kind", "tower", "--x", "20", "--y", "1", "--render", svg}
	if r := runMap(t, "", refused...); r.code != ExitFailure {
		t.Fatalf("refused place: exit %d stderr %q", r.code, r.stderr)
	}
	if data, err := os.ReadFile(svg); err != nil || strings.Contains(string(data), "placements") {
		t.Fatalf("a refused tower was drawn: %v", err)
	}
}

// TestMapStrictInput: every way a layout or placements file can be wrong
// is a one-line usage error that says where, on every command that reads
// one, and no picture is written.
func TestMapStrictInput(t *testing.T) {
	good, err := json.Marshal(gamemap.Generate(gamemap.Short, 1))
	if err != nil {
		t.Fatal(err)
	}
	misspelt := strings.Replace(string(good), `"spawn"`, `"spwan"`, 1)
	wrongType := strings.Replace(string(good), `"width":32`, `"width":"32"`, 1)
	truncated := string(good[:200])
	layouts := []struct{ content, want string }{
		{misspelt, `lanes[0]: unknown field "spwan"`},
		{wrongType, `width: want an integer, got the string "32"`},
		{"{\n  \"version\": 1,\n  \"size\" \"short\"\n}", "line 3, column 10"},
		{truncated, "line 1, column 201: the JSON ends too early"},
		{"[]", "the input holds a JSON array, not a layout"},
		{"", "the input is empty"},
		{string(good) + "{}", "unexpected data after the JSON value"},
	}
	for _, tc := range layouts {
		in := writeTemp(t, "layout.json", tc.content)
		pic := filepath.Join(filepath.Dir(in), "out.png")
		for _, args := range [][]string{
			{"map", "analyze", "--in", in, "--render", pic},
			{"map", "place", "--in", in, "--kind", "tower", "--x", "1", "--y", "1", "--render", pic},
			{"map", "render", "--in", in, "--file", pic},
		} {
			r := runMap(t, "", args...)
			if r.code != ExitUsage || !strings.Contains(r.stderr, tc.want) || !strings.Contains(r.stderr, in) ||
				strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
				t.Errorf("%s on %.40q: exit %d stderr %q, want exit 2 with %q", args[1], tc.content, r.code, r.stderr, tc.want)
			}
			if _, err := os.Stat(pic); !os.IsNotExist(err) {
				t.Errorf("%s wrote a picture for a bad layout", args[1])
			}
		}
	}
	for _, tc := range []struct{ content, want string }{
		{`{"kind":"trap"}`, "the input holds a JSON object, not a list of placements"},
		{`[{"kind":"trap","cel":{"x":1,"y":1}}]`, `[0]: unknown field "cel"`},
		{`[{"kind":"trap","cell":{"x":1.5,"y":1}}]`, `[0].cell.x: want an integer`},
		{"", "the input is empty"},
	} {
		ps := writeTemp(t, "placed.json", tc.content)
		for _, args := range [][]string{
			{"map", "place", "--size", "short", "--seed", "42", "--kind", "tower", "--x", "18", "--y", "0", "--existing", ps},
			{"map", "render", "--size", "short", "--seed", "42", "--placements", ps, "--file", "-", "--picture-format", "svg"},
		} {
			r := runMap(t, "", args...)
			if r.code != ExitUsage || !strings.Contains(r.stderr, tc.want) || r.stdout != "" {
				t.Errorf("%s with placements %q: exit %d stderr %q", args[1], tc.content, r.code, r.stderr)
			}
		}
	}
}

func TestMapRenderUsage(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"map", "render", "--size", "short", "--seed", "1"}, "--file is required"},
		{[]string{"map", "render", "--size", "short", "--seed", "1", "--file", "m.gif"}, "--picture-format is needed"},
		{[]string{"map", "render", "--size", "short", "--seed", "1", "--file", "-"}, "--picture-format is needed"},
		{[]string{"map", "render", "--size", "short", "--seed", "1", "--file", "m.png", "--picture-format", "jpeg"}, "png or svg"},
		{[]string{"map", "render", "--size", "short", "--seed", "1", "--file", "m.png", "--scale", "2"}, "--scale must be between 8 and 64"},
		{[]string{"map", "render", "--size", "short", "--file", "m.png"}, "--seed is required"},
		{[]string{"map", "render", "--in", "x.json", "--seed", "1", "--file", "m.png"}, "either --in or"},
		{[]string{"map", "render", "--size", "tiny", "--seed", "1", "--file", "m.png"}, "--size"},
		{[]string{"map", "analyze", "--size", "short", "--seeds", "1-2", "--render", "m.png"}, "--render draws one map"},
		{[]string{"map", "generate", "--size", "short", "--seed", "1", "--format", "svg", "--scale", "100"}, "--scale must be between"},
	} {
		t.Run(strings.Join(tc.args[1:], " "), func(t *testing.T) {
			r := runMap(t, "", tc.args...)
			if r.code != ExitUsage || !strings.Contains(r.stderr, tc.err) {
				t.Fatalf("exit %d stderr %q; want exit 2 mentioning %q", r.code, r.stderr, tc.err)
			}
		})
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 0 {
		t.Errorf("files left behind: %v %v", entries, err)
	}
}

// TestMapOutputIsAtomic: a picture that cannot be written leaves no file
// and no temporary behind, and an existing file is replaced whole.
func TestMapOutputIsAtomic(t *testing.T) {
	dir := t.TempDir()
	r := runMap(t, "", "map", "render", "--size", "short", "--seed", "1", "--file", filepath.Join(dir, "missing", "m.png"))
	if r.code != ExitFailure || !strings.Contains(r.stderr, "write picture") {
		t.Fatalf("unwritable path: exit %d stderr %q", r.code, r.stderr)
	}
	path := filepath.Join(dir, "m.svg")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := runMap(t, "", "map", "generate", "--size", "short", "--seed", "1", "--format", "svg", "-o", path); r.code != 0 {
		t.Fatalf("exit %d stderr %q", r.code, r.stderr)
	}
	data, err := os.ReadFile(path)
	if err != nil || !strings.HasPrefix(string(data), "<svg") {
		t.Fatalf("replaced file: %.40q %v", data, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Errorf("want only m.svg in the directory, got %v %v", entries, err)
	}
}
