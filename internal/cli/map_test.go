package cli

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/towerdefence/platformctl/internal/gamemap"
	"github.com/towerdefence/platformctl/internal/platform"
)

// The -update flag may be defined by another test file of this package;
// share it rather than defining it twice.
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite the golden files under testdata")
	}
}

func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// goldenFile compares got with testdata/map/name, or rewrites it with -update.
func goldenFile(t *testing.T, name, got string) {
	t.Helper()
	goldenIn(t, "map", name, got)
}

// goldenIn compares got with testdata/dir/name, or rewrites it with -update.
func goldenIn(t *testing.T, dir, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", dir, name)
	if updating() {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (go test -update rewrites it):\n%s", path, got)
	}
}

// runMap runs the CLI with stdin and no environment.
func runMap(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Run(t.Context(), platform.Build{Version: "v1.2.3", Commit: "abc123", Date: "2026-11-21"}, args,
		func(string) string { return "" }, strings.NewReader(stdin), &out, &errOut)
	return result{code, out.String(), errOut.String()}
}

func TestMapGoldenOutputs(t *testing.T) {
	for _, tc := range []struct {
		golden string
		args   []string
		code   int
	}{
		{"generate-short-42.txt", []string{"map", "generate", "--size", "short", "--seed", "42"}, 0},
		{"generate-long-7.json", []string{"map", "generate", "--size", "long", "--seed", "7", "--format", "json"}, 0},
		{"generate-short-42.svg", []string{"map", "generate", "--size", "short", "--seed", "42", "--format", "svg"}, 0},
		{"analyze-long-42.txt", []string{"map", "analyze", "--size", "long", "--seed", "42"}, 0},
		{"analyze-short-42.json", []string{"map", "analyze", "--size", "short", "--seed", "42", "--output", "json"}, 0},
		{"analyze-short-42.csv", []string{"map", "analyze", "--size", "short", "--seed", "42", "--output", "csv"}, 0},
		{"sweep-short-1-300.txt", []string{"map", "analyze", "--size", "short", "--seeds", "1-300"}, 0},
		{"sweep-long-5-25.json", []string{"map", "analyze", "--size", "long", "--seeds", "5-25", "--output", "json"}, 0},
		{"sweep-short-1-40.csv", []string{"map", "analyze", "--size", "short", "--seeds", "1-40", "--output", "csv"}, 0},
		{"place-accepted.txt", []string{"map", "place", "--size", "short", "--seed", "42", "--kind", "tower", "--x", "18", "--y", "0"}, 0},
		{"place-refused.json", []string{"map", "place", "--size", "short", "--seed", "42", "--kind", "trap", "--x", "20", "--y", "1", "--output", "json"}, ExitFailure},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			r := runMap(t, "", tc.args...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %q", r.code, tc.code, r.stderr)
			}
			goldenFile(t, tc.golden, r.stdout)
		})
	}
}

func TestMapAnalyzeLayoutFile(t *testing.T) {
	l := gamemap.Generate(gamemap.Short, 9)
	good, _ := json.Marshal(l)
	l.Lanes[0].Cells = l.Lanes[0].Cells[1:]
	l.BuildZones[0].ID = 4
	bad, _ := json.Marshal(l)
	dir := t.TempDir()
	path := filepath.Join(dir, "bad.json")
	os.WriteFile(path, bad, 0o644)

	r := runMap(t, "", "map", "analyze", "--in", path)
	if r.code != ExitFailure || !strings.Contains(r.stderr, "problems") {
		t.Fatalf("broken layout: exit %d stderr %q", r.code, r.stderr)
	}
	goldenFile(t, "analyze-broken.txt", r.stdout)

	r = runMap(t, string(good), "map", "analyze", "--in", "-", "--output", "json")
	var a gamemap.MapLayoutAnalysis
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &a) != nil || !a.Valid {
		t.Fatalf("layout on stdin: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if r := runMap(t, "{", "map", "analyze", "--in", "-"); r.code != ExitUsage {
		t.Errorf("not JSON: exit %d", r.code)
	}
}

// TestMapSweepIsDeterministic analyses a range in many small chunks on one
// worker and on several: rows come out in seed order either way.
func TestMapSweepIsDeterministic(t *testing.T) {
	run := func(workers int) string {
		var out, errOut bytes.Buffer
		e := &env{getenv: func(string) string { return "" }, stdout: &out, stderr: &errOut}
		spec := sweepSpec{size: gamemap.Long, from: 100, to: 399, workers: workers, output: outputCSV, chunk: 7}
		if err := sweep(t.Context(), e, spec); err != nil {
			t.Fatalf("%d workers: %v", workers, err)
		}
		return out.String()
	}
	one, many := run(1), run(5)
	if one != many {
		t.Fatal("1 and 5 workers give different output")
	}
	lines := strings.Split(strings.TrimSuffix(one, "\n"), "\n")
	if len(lines) != 301 {
		t.Fatalf("%d lines, want a header and 300 rows", len(lines))
	}
	for i, line := range lines[1:] {
		if want := fmt.Sprintf("%d,", 100+i); !strings.HasPrefix(line, want) {
			t.Fatalf("row %d is %q, want seed %d", i, line, 100+i)
		}
	}
}

func TestMapPNG(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.png")
	r := runMap(t, "", "map", "generate", "--size", "long", "--seed", "3", "--format", "png", "--scale", "8", "-f", path)
	if r.code != 0 || r.stdout != "" || !strings.Contains(r.stderr, path) {
		t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() < 48*8 || b.Dx() > 56*8 || b.Dy() < 27*8 || b.Dy() > 36*8 {
		t.Errorf("image %v, want the 384×216 board with margins and a legend", b)
	}
}

func TestMapUsageAndRefusalExitCodes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"map", "generate", "--size", "medium", "--seed", "1"}, ExitUsage, "--size"},
		{[]string{"map", "generate", "--size", "short"}, ExitUsage, "seed"},
		{[]string{"map", "generate", "--size", "short", "--seed", "-1"}, ExitUsage, "seed"},
		{[]string{"map", "generate", "--size", "short", "--seed", "1", "--format", "gif"}, ExitUsage, "--format"},
		{[]string{"map", "analyze", "--size", "short"}, ExitUsage, "exactly one"},
		{[]string{"map", "analyze", "--size", "short", "--seed", "1", "--seeds", "1-2"}, ExitUsage, "exactly one"},
		{[]string{"map", "analyze", "--size", "short", "--seeds", "9-2"}, ExitUsage, "FROM-TO"},
		{[]string{"map", "analyze", "--size", "short", "--seeds", "x"}, ExitUsage, "FROM-TO"},
		{[]string{"map", "analyze", "--in", "x.json", "--size", "short"}, ExitUsage, "--size"},
		{[]string{"map", "analyze", "--in", "/no/such/file.json"}, ExitUsage, "read layout"},
		{[]string{"map", "analyze", "--size", "short", "--seed", "1", "--output", "xml"}, ExitUsage, "--output"},
		{[]string{"map", "place", "--size", "short", "--seed", "42", "--kind", "wall", "--x", "1", "--y", "1"}, ExitUsage, "--kind"},
		{[]string{"map", "place", "--size", "short", "--kind", "trap", "--x", "1", "--y", "1"}, ExitUsage, "--seed"},
		{[]string{"map", "place", "--size", "short", "--seed", "42", "--kind", "trap", "--x", "1"}, ExitUsage, "y"},
		{[]string{"map", "place", "--size", "short", "--seed", "42", "--kind", "trap", "--x", "20", "--y", "1"}, ExitFailure, "PLACEMENT_CUTS_LARGE_ROUTE"},
		{[]string{"map", "place", "--size", "short", "--seed", "42", "--kind", "tower", "--x", "20", "--y", "1"}, ExitFailure, "PLACEMENT_NOT_BUILD_CELL"},
		{[]string{"map", "place", "--size", "short", "--seed", "42", "--kind", "trap", "--x", "99", "--y", "1"}, ExitFailure, "PLACEMENT_OUT_OF_BOUNDS"},
		{[]string{"map", "place", "--size", "short", "--seed", "42", "--kind", "trap", "--x", "0", "--y", "5"}, ExitFailure, "PLACEMENT_ON_SPAWN_OR_GOAL"},
	} {
		t.Run(strings.Join(tc.args[1:], " "), func(t *testing.T) {
			r := runMap(t, "", tc.args...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.err) {
				t.Fatalf("exit %d stderr %q; want exit %d mentioning %q", r.code, r.stderr, tc.code, tc.err)
			}
			if lines := strings.Count(strings.TrimSpace(r.stderr), "\n"); lines != 0 {
				t.Errorf("stderr has %d lines, want one", lines+1)
			}
		})
	}
}

func TestMapPlaceWithExistingPlacements(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "placed.json")
	args := []string{"map", "place", "--size", "short", "--seed", "42", "--kind", "trap", "--x", "23", "--y", "0", "--existing", path}
	os.WriteFile(path, []byte(`[]`), 0o644)
	if r := runMap(t, "", args...); r.code != 0 || !strings.Contains(r.stdout, "accepted") {
		t.Fatalf("without traps: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	// A trap on the bottom row leaves the large units only the top two rows.
	os.WriteFile(path, []byte(`[{"kind":"trap","cell":{"x":23,"y":2}}]`), 0o644)
	if r := runMap(t, "", args...); r.code != ExitFailure || !strings.Contains(r.stderr, "PLACEMENT_CUTS") {
		t.Fatalf("closing the corridor: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	os.WriteFile(path, []byte(`[{"kind":"tower","cell":{"x":23,"y":2}}]`), 0o644)
	if r := runMap(t, "", args...); r.code != ExitUsage || !strings.Contains(r.stderr, "PLACEMENT_EXISTING_INVALID") {
		t.Fatalf("an illegal existing placement: exit %d %q", r.code, r.stderr)
	}
}

var ansi = regexp.MustCompile("\x1b\\[[0-9;]*m")

func TestColourMap(t *testing.T) {
	text, _ := gamemap.ASCII(gamemap.Generate(gamemap.Short, 1))
	r := lipgloss.NewRenderer(&bytes.Buffer{})
	r.SetColorProfile(termenv.TrueColor)
	coloured := colourMap(r, text)
	if !strings.Contains(coloured, "\x1b[") {
		t.Fatal("no colour on a true-colour terminal")
	}
	if plain := ansi.ReplaceAllString(coloured, ""); plain != text {
		t.Errorf("colouring changed the map:\n%s", plain)
	}
	r.SetColorProfile(termenv.Ascii)
	if got := colourMap(r, text); got != text {
		t.Error("an Ascii profile still coloured the map")
	}
}

// A layout's text reaches the terminal escaped: its size, with an OSC
// title sequence, a screen clear and a right-to-left override, shows as
// escapes in analyze's header.
func TestMapAnalyzeEscapesTheLayoutsText(t *testing.T) {
	l := gamemap.Generate(gamemap.Short, 9)
	l.Size = gamemap.Size("short\x1b]0;owned\x07\x1b[2J\u009b31m\u202e")
	raw, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	r := runMap(t, string(raw), "map", "analyze", "--in", "-")
	if c, found := rawUnsafe(r.stdout + r.stderr); found {
		t.Fatalf("map analyze prints %U raw: %q", c, r.stdout)
	}
	goldenFile(t, "analyze-hostile.txt", r.stdout)
}
