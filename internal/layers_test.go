package internal_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/towerdefence/platformctl/"

// floors is the import rule of the repository, lowest floor first: a package
// imports only packages on its own floor or a lower one. README.md's layout
// list shows the same floors; keep the two in step. A new package gets a place
// here, or this test fails.
var floors = [][]string{
	{"internal/platform", "internal/ratelimit", "internal/jobs", "internal/secretbox", "internal/sessioncache", "fixtures", "migrations"},
	{"internal/config", "internal/role", "internal/audit", "internal/system", "internal/gamemap"},
	{"internal/account", "internal/mail", "internal/matchmaking", "internal/social"},
	{"internal/auth", "internal/profile", "internal/liveops"},
	{"internal/player", "internal/admin"},
	{"internal/seed", "internal/events", "internal/lifecycle", "internal/adminui"},
	{"internal/store", "internal/eventspg", "internal/httpapi", "internal/qa"},
	{"internal/app"},
	{"internal/cli"},
	{"cmd/platformctl"},
}

// testHelpers exist only for tests: they may import anything, and no
// production package imports them.
var testHelpers = []string{
	"internal/storetest", "internal/playertest", "internal/apitest", "internal/mailtest",
	"internal/benchcpu", "internal/netfault", "internal/resilience", "internal/testwait", "internal/oidctest",
}

// scripts are the load, benchmark and data tools: they may import anything
// but the test helpers, and any technology package.
const scripts = "scripts/"

// adapters names, for each third-party package that ties code to one
// technology, the only packages of ours that may import it.
var adapters = map[string][]string{
	"github.com/uptrace/bun":              {"internal/store"},
	"github.com/jackc/pgx":                {"internal/store", "internal/eventspg", "internal/storetest"},
	"modernc.org/sqlite":                  {"internal/store"},
	"github.com/pressly/goose":            {"internal/store"},
	"github.com/spf13/cobra":              {"internal/cli"},
	"github.com/spf13/pflag":              {"internal/cli"},
	"github.com/charmbracelet":            {"internal/cli"},
	"github.com/muesli/termenv":           {"internal/cli"},
	"github.com/urfave/negroni":           {"internal/httpapi"},
	"github.com/getkin/kin-openapi":       {"internal/httpapi", "internal/apitest"},
	"github.com/prometheus/client_golang": {"internal/app", "internal/httpapi", "internal/events", "internal/mail", "internal/jobs"},
}

type pkg struct {
	path    string
	imports []string
}

// modulePackages lists the packages of the module with their production
// (non-test) imports.
func modulePackages(t *testing.T) []pkg {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		p := pkg{path: strings.TrimPrefix(fields[0], module)}
		for _, imp := range fields[1:] {
			p.imports = append(p.imports, strings.TrimPrefix(imp, module))
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages; want the whole module:\n%s", len(pkgs), out)
	}
	return pkgs
}

func floorOf(path string) int {
	for i, floor := range floors {
		if slices.Contains(floor, path) {
			return i
		}
	}
	return -1
}

func ours(imp string) bool {
	return strings.HasPrefix(imp, "internal/") || strings.HasPrefix(imp, "cmd/") ||
		imp == "fixtures" || imp == "migrations"
}

// TestImportsPointDown fails when a package imports one on a higher floor,
// when a production package imports a test helper, when a package is on no
// floor at all, or when a technology package is imported outside its adapter.
func TestImportsPointDown(t *testing.T) {
	for _, v := range violations(modulePackages(t)) {
		t.Error(v)
	}
}

// TestViolationsAreFound shows the rule catches each kind of wrong import.
func TestViolationsAreFound(t *testing.T) {
	pkgs := []pkg{
		{path: "internal/system", imports: []string{"internal/player", "internal/platform"}},
		{path: "internal/auth", imports: []string{"internal/storetest", "github.com/uptrace/bun"}},
		{path: "internal/newthing"},
		{path: "internal/storetest", imports: []string{"internal/store", "github.com/jackc/pgx/v5/stdlib"}},
		{path: "internal/cli", imports: []string{"internal/app", "github.com/spf13/cobra"}},
	}
	want := []string{
		"internal/system (floor 2) imports internal/player (floor 5), which is above it",
		"internal/auth imports the test helper internal/storetest",
		"internal/auth imports github.com/uptrace/bun; only internal/store may",
		"internal/newthing is on no floor: add it to floors in internal/layers_test.go and to the layout in README.md",
	}
	if got := violations(pkgs); !slices.Equal(got, want) {
		t.Errorf("violations:\n got %q\nwant %q", got, want)
	}
}

func violations(pkgs []pkg) []string {
	var out []string
	for _, p := range pkgs {
		helper := slices.Contains(testHelpers, p.path)
		script := strings.HasPrefix(p.path, scripts)
		floor := floorOf(p.path)
		if floor < 0 && !helper && !script && p.path != "internal" {
			out = append(out, p.path+" is on no floor: add it to floors in internal/layers_test.go and to the layout in README.md")
			continue
		}
		for _, imp := range p.imports {
			if !ours(imp) {
				if allowed, ok := adapterOf(imp); ok && !script && !slices.Contains(allowed, p.path) {
					out = append(out, fmt.Sprintf("%s imports %s; only %s may", p.path, imp, strings.Join(allowed, ", ")))
				}
				continue
			}
			if slices.Contains(testHelpers, imp) {
				if !helper {
					out = append(out, fmt.Sprintf("%s imports the test helper %s", p.path, imp))
				}
				continue
			}
			if helper || script {
				continue
			}
			if f := floorOf(imp); f > floor {
				out = append(out, fmt.Sprintf("%s (floor %d) imports %s (floor %d), which is above it", p.path, floor+1, imp, f+1))
			}
		}
	}
	return out
}

func adapterOf(imp string) ([]string, bool) {
	for prefix, allowed := range adapters {
		if imp == prefix || strings.HasPrefix(imp, prefix+"/") {
			return allowed, true
		}
	}
	return nil, false
}

// TestGamemapStandsAlone keeps the map tools free of the database: gamemap
// imports nothing of ours but platform.
func TestGamemapStandsAlone(t *testing.T) {
	for _, p := range modulePackages(t) {
		if p.path != "internal/gamemap" {
			continue
		}
		for _, imp := range p.imports {
			if ours(imp) && imp != "internal/platform" {
				t.Errorf("internal/gamemap imports %s; it may import only internal/platform of ours", imp)
			}
		}
		return
	}
	t.Fatal("go list did not list internal/gamemap")
}
