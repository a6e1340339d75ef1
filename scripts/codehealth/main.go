// Command codehealth prints the figures the code-health reviews track, so a
// later run can be compared with an earlier one by the same rules:
//
//   - the length distribution of functions in internal/ and cmd/ (lines from
//     `func` to the closing brace, test files and scripts excluded), with the
//     longest ones named;
//   - time.Sleep calls and hand-written `deadline := time.Now().Add(` poll loops
//     in test files (helper packages included);
//   - the ways a query leaves bun's builder inside internal/store, counted by
//     call shape, and the uses of the bun handle (`.Bun()`) outside
//     internal/store and internal/storetest.
//
// Usage, from the repository root:
//
//	go run ./scripts/codehealth [-top N]
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

type function struct {
	name  string
	pos   string
	lines int
}

func main() {
	top := flag.Int("top", 15, "how many of the longest functions to name")
	flag.Parse()
	if err := run(*top); err != nil {
		fmt.Fprintln(os.Stderr, "codehealth:", err)
		os.Exit(1)
	}
}

func run(top int) error {
	funcs, err := functions("internal", "cmd")
	if err != nil {
		return err
	}
	printFunctions(funcs, top)
	sleeps, polls, err := testTiming("internal", "cmd")
	if err != nil {
		return err
	}
	fmt.Printf("\ntests: %d time.Sleep calls, %d hand-written deadline poll loops\n", sleeps, polls)
	return printQueryRoads()
}

// goFiles calls fn for every .go file under the roots, skipping testdata.
func goFiles(roots []string, fn func(path string) error) error {
	for _, root := range roots {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "testdata" {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") {
				return nil
			}
			return fn(path)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func functions(roots ...string) ([]function, error) {
	var out []function
	fset := token.NewFileSet()
	err := goFiles(roots, func(path string) error {
		if strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			start, end := fset.Position(fd.Pos()), fset.Position(fd.End())
			name := fd.Name.Name
			if fd.Recv != nil && len(fd.Recv.List) > 0 {
				name = receiver(fd.Recv.List[0].Type) + "." + name
			}
			out = append(out, function{name: name, pos: fmt.Sprintf("%s:%d", path, start.Line), lines: end.Line - start.Line + 1})
		}
		return nil
	})
	return out, err
}

func receiver(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return receiver(t.X)
	case *ast.IndexExpr:
		return receiver(t.X)
	case *ast.IndexListExpr:
		return receiver(t.X)
	case *ast.Ident:
		return t.Name
	}
	return "?"
}

func printFunctions(funcs []function, top int) {
	slices.SortFunc(funcs, func(a, b function) int { return b.lines - a.lines })
	total := 0
	over := map[int]int{}
	for _, f := range funcs {
		total += f.lines
		for _, limit := range []int{60, 80, 100, 150} {
			if f.lines > limit {
				over[limit]++
			}
		}
	}
	n := len(funcs)
	if n == 0 {
		fmt.Println("functions in internal/ and cmd/: none")
		return
	}
	median := funcs[n/2].lines
	fmt.Printf("functions in internal/ and cmd/ (test files excluded): %d, median %d lines, mean %.1f\n",
		n, median, float64(total)/float64(n))
	fmt.Printf("over 60 lines: %d, over 80: %d, over 100: %d, over 150: %d\n", over[60], over[80], over[100], over[150])
	fmt.Printf("the %d longest:\n", min(top, n))
	for _, f := range funcs[:min(top, n)] {
		fmt.Printf("  %4d  %-40s %s\n", f.lines, f.name, f.pos)
	}
}

var pollLoop = regexp.MustCompile(`deadline\s*:?=\s*time\.Now\(\)\.Add\(`)

func testTiming(roots ...string) (sleeps, polls int, err error) {
	fset := token.NewFileSet()
	err = goFiles(roots, func(path string) error {
		if !strings.HasSuffix(path, "_test.go") && !isTestHelper(path) {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		polls += len(pollLoop.FindAll(src, -1))
		f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok && isSelector(call.Fun, "time", "Sleep") {
				sleeps++
			}
			return true
		})
		return nil
	})
	return sleeps, polls, err
}

// isTestHelper reports whether a non-test file belongs to a package that exists
// only to serve tests.
func isTestHelper(path string) bool {
	dir := filepath.Base(filepath.Dir(path))
	return strings.HasSuffix(dir, "test") || dir == "resilience"
}

func isSelector(e ast.Expr, pkg, name string) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != name {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == pkg
}

// queryShapes are the call shapes by which a query is built or run in
// internal/store, by road.
var queryShapes = []struct {
	road string
	re   *regexp.Regexp
}{
	{"bun query builder (NewSelect/NewInsert/NewUpdate/NewDelete)", regexp.MustCompile(`\.New(Select|Insert|Update|Delete)\(\)`)},
	{"bun raw (NewRaw)", regexp.MustCompile(`\.NewRaw\(`)},
	{"hand-written row helpers (each/rows/exec on the Tx query type)", regexp.MustCompile(`\.(each|rows|exec)\(ctx,`)},
	{"database/sql directly (QueryContext/QueryRowContext/ExecContext)", regexp.MustCompile(`\.(QueryContext|QueryRowContext|ExecContext)\(`)},
	{"pgx directly (pgx.Connect / conn.Query)", regexp.MustCompile(`pgx\.Connect\(|pgxConn\(|\.Conn\(\)\.Query`)},
}

var placeholderShapes = []struct {
	style string
	re    *regexp.Regexp
}{
	{"?", regexp.MustCompile(`\?[,)\s]`)},
	{"$n", regexp.MustCompile(`\$[0-9]+`)},
	{"fmt-built $%d", regexp.MustCompile(`\$%d`)},
}

func printQueryRoads() error {
	counts := make([]int, len(queryShapes))
	places := make([]int, len(placeholderShapes))
	err := goFiles([]string{"internal/store"}, func(path string) error {
		if strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, s := range queryShapes {
			counts[i] += len(s.re.FindAll(src, -1))
		}
		for i, s := range placeholderShapes {
			if s.re.Match(src) {
				places[i]++
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Println("\nquery call sites in internal/store (non-test files), by road:")
	roads := 0
	for i, s := range queryShapes {
		fmt.Printf("  %4d  %s\n", counts[i], s.road)
		if counts[i] > 0 {
			roads++
		}
	}
	fmt.Printf("roads in use: %d\n", roads)
	fmt.Println("files of internal/store using each placeholder style:")
	for i, s := range placeholderShapes {
		fmt.Printf("  %4d  %s\n", places[i], s.style)
	}
	var outside []string
	err = goFiles([]string{"internal", "cmd", "scripts"}, func(path string) error {
		if strings.HasPrefix(path, filepath.Join("internal", "store")+string(filepath.Separator)) ||
			strings.HasPrefix(path, filepath.Join("internal", "storetest")+string(filepath.Separator)) ||
			strings.HasPrefix(path, filepath.Join("scripts", "codehealth")) {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(src), "\n") {
			if strings.Contains(line, ".Bun()") {
				outside = append(outside, fmt.Sprintf("%s:%d", path, i+1))
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Printf("uses of the bun handle (.Bun()) outside internal/store and internal/storetest: %d\n", len(outside))
	for _, p := range outside {
		fmt.Println("  " + p)
	}
	return nil
}
