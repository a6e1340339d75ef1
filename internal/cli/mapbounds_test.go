package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/towerdefence/platformctl/internal/gamemap"
)

// wantUsageLine fails t unless r is a usage error with a one-line message
// holding want.
func wantUsageLine(t *testing.T, r result, want string) {
	t.Helper()
	msg := strings.TrimSpace(r.stderr)
	if r.code != ExitUsage || strings.Contains(msg, "\n") || !strings.Contains(msg, want) {
		t.Fatalf("exit %d stderr %q; want exit %d and one line saying %q", r.code, r.stderr, ExitUsage, want)
	}
}

// Input past the bound is refused with a clear error, whatever it is: an
// endless device, an oversized document on stdin.
func TestMapInputIsBounded(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err == nil {
		wantUsageLine(t, runMap(t, "", "map", "analyze", "--in", "/dev/zero"), "larger than 16 MiB")
	}
	wantUsageLine(t, runMap(t, strings.Repeat(" ", maxInputBytes+1), "map", "analyze", "--in", "-"), "larger than 16 MiB")
}

// A placement list longer than gamemap.MaxPlacements is refused before
// any drawing.
func TestMapPlacementListIsBounded(t *testing.T) {
	ps := make([]gamemap.Placement, gamemap.MaxPlacements+1)
	for i := range ps {
		ps[i] = gamemap.Placement{Kind: gamemap.Tower, Cell: gamemap.GridPoint{X: i % 32, Y: i % 18}}
	}
	raw, err := json.Marshal(ps)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "many.json")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "map.svg")
	wantUsageLine(t, runMap(t, "", "map", "render", "--size", "short", "--seed", "1", "--placements", path, "--file", out), "more than the 10000")
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("a refused render wrote %s: %v", out, err)
	}
}

// --file replaces only a regular file: a symbolic link, a device, a
// directory or a named pipe at the path is refused and left as it was.
func TestMapFileRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target.svg")
	if err := os.WriteFile(target, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.svg")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.svg")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "dir.svg")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	paths := map[string]string{link: "symbolic link", fifo: "named pipe", sub: "directory"}
	if fi, err := os.Lstat("/dev/null"); err == nil && fi.Mode()&os.ModeDevice != 0 {
		paths["/dev/null"] = "device"
	}
	for path, kind := range paths {
		before, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		r := runMap(t, "", "map", "render", "--size", "short", "--seed", "1", "--file", path, "--picture-format", "svg")
		wantUsageLine(t, r, "not a regular file (a "+kind+")")
		after, err := os.Lstat(path)
		if err != nil || after.Mode() != before.Mode() {
			t.Fatalf("%s (%s) was replaced: %v %v", path, kind, after.Mode(), err)
		}
	}
	if got, err := os.ReadFile(target); err != nil || string(got) != "keep" {
		t.Fatalf("the link's target now holds %q, %v", got, err)
	}
	// A regular file is still replaced.
	r := runMap(t, "", "map", "render", "--size", "short", "--seed", "1", "--file", target)
	if got, err := os.ReadFile(target); r.code != 0 || err != nil || !strings.HasPrefix(string(got), "<svg") {
		t.Fatalf("render onto a regular file: exit %d stderr %q, file %.20q %v", r.code, r.stderr, got, err)
	}
}
