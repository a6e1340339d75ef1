// Command codehealth prints the figures the code-health reviews track, so a
// later run can be compared with an earlier one by the same rules:
//
//   - the length distribution of functions in internal/ and cmd/ (lines from
//     `func` to the closing brace, test files and scripts excluded), with the
//     longest ones named;
//   - time.Sleep calls and hand-written `deadline := time.Now().Add(` poll loops
//     in test files (helper packages included);
//   - the query call sites of internal/store by road (the bun road: builder
//     and NewRaw; the raw road: rawQ), naming every site on neither road,
//     the placeholder styles of its SQL text, and the uses of the bun
//     handle (`.Bun()`) outside internal/store and internal/storetest.
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

// A query call site in internal/store is a call whose method name says
// how the statement is built or run. Each falls in one of these classes:
// the bun road, the raw road (rawQ in raw.go), the raw road's own calls
// below it, the driver's wrappers, or a stray that is neither road.
const (
	bunBuilder = iota
	bunRaw
	rawCalls
	rawOwn
	driverWrappers
	straySQL
	strayPgx
	strayScan
	siteClasses
)

var siteNames = [siteClasses]string{
	bunBuilder:     "bun road: query builder (NewSelect/NewInsert/NewUpdate/NewDelete)",
	bunRaw:         "bun road: NewRaw, for statements the builder cannot say (bun formats and scans them as the builder's)",
	rawCalls:       "raw road: calls of rawQ.each/one/writeOne/rows/exec (hand-written SQL, hand-written Scan)",
	rawOwn:         "raw road's own calls below it (database/sql and pgx, inside rawQ's methods and eachPgx)",
	driverWrappers: "driver wrappers below database/sql (retryConn's methods)",
	straySQL:       "outside both roads: database/sql directly (QueryContext/QueryRowContext/ExecContext)",
	strayPgx:       "outside both roads: pgx directly (pgx.Connect, conn.Query/QueryRow)",
	strayScan:      "outside both roads: bun scanning database/sql rows (ScanRows)",
}

// rawRoadMethods are the raw road's entry points; rawRoadOwn the functions
// that implement it, where database/sql and pgx calls are the road itself.
var (
	rawRoadMethods = map[string]bool{"each": true, "one": true, "writeOne": true, "rows": true, "exec": true}
	rawRoadOwn     = map[string]bool{"rawQ.each": true, "rawQ.one": true, "rawQ.writeOne": true, "rawQ.rows": true,
		"rawQ.exec": true, "rawQ.bind": true, "eachPgx": true}
)

// classify returns the class of a call of method name inside function fn
// (Receiver.Name or Name), or -1 when the call builds or runs no query.
func classify(fn, name string, call *ast.CallExpr) int {
	firstIsCtx := len(call.Args) > 0 && isIdent(call.Args[0], "ctx")
	switch {
	case name == "NewSelect" || name == "NewInsert" || name == "NewUpdate" || name == "NewDelete":
		return bunBuilder
	case name == "NewRaw" && rawRoadOwn[fn]:
		return rawOwn // the raw road writes values into SQLite statements with bun's formatter
	case name == "NewRaw":
		return bunRaw
	case rawRoadMethods[name] && firstIsCtx:
		if rawRoadOwn[fn] {
			return rawOwn
		}
		return rawCalls
	case name == "QueryContext" || name == "QueryRowContext" || name == "ExecContext":
		switch {
		case rawRoadOwn[fn]:
			return rawOwn
		case strings.HasPrefix(fn, "retryConn."):
			return driverWrappers
		}
		return straySQL
	case (name == "Query" || name == "QueryRow") && firstIsCtx, name == "Connect" && isSelector(call.Fun, "pgx", "Connect"):
		if rawRoadOwn[fn] {
			return rawOwn
		}
		return strayPgx
	case name == "ScanRows":
		return strayScan
	}
	return -1
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

// querySites counts the query call sites of one file by class, and notes
// where each stray is.
func querySites(fset *token.FileSet, f *ast.File, counts *[siteClasses]int, strays *[]string) {
	for _, decl := range f.Decls {
		fd, ok := decl.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		fn := fd.Name.Name
		if fd.Recv != nil && len(fd.Recv.List) > 0 {
			fn = receiver(fd.Recv.List[0].Type) + "." + fn
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			class := classify(fn, sel.Sel.Name, call)
			if class < 0 {
				return true
			}
			counts[class]++
			if class >= straySQL {
				*strays = append(*strays, fmt.Sprintf("%s (%s)", fset.Position(call.Pos()), fn))
			}
			return true
		})
	}
}

// placeholderShapes are the placeholder styles, looked for in the string
// literals of internal/store (the SQL text, not the comments about it).
var placeholderShapes = []struct {
	style string
	re    *regexp.Regexp
}{
	{"?", regexp.MustCompile(`\?([,)\s:;]|$)`)},
	{"$n", regexp.MustCompile(`\$[0-9]+`)},
	{"fmt-built $%d", regexp.MustCompile(`\$%d`)},
}

// placeholderStyles reports which styles the string literals of f use.
func placeholderStyles(f *ast.File) []bool {
	used := make([]bool, len(placeholderShapes))
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		for i, s := range placeholderShapes {
			if s.re.MatchString(lit.Value) {
				used[i] = true
			}
		}
		return true
	})
	return used
}

func printQueryRoads() error {
	var counts [siteClasses]int
	var strays []string
	places := make([]int, len(placeholderShapes))
	fset := token.NewFileSet()
	err := goFiles([]string{"internal/store"}, func(path string) error {
		if strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		querySites(fset, f, &counts, &strays)
		for i, used := range placeholderStyles(f) {
			if used {
				places[i]++
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Println("\nquery call sites in internal/store (non-test files), by road:")
	for class, name := range siteNames {
		fmt.Printf("  %4d  %s\n", counts[class], name)
	}
	// The bun road is one road however its statements are built; every
	// kind of stray is a road of its own.
	roads := 0
	for _, n := range []int{counts[bunBuilder] + counts[bunRaw], counts[rawCalls] + counts[rawOwn],
		counts[straySQL], counts[strayPgx], counts[strayScan]} {
		if n > 0 {
			roads++
		}
	}
	fmt.Printf("roads in use: %d\n", roads)
	for _, p := range strays {
		fmt.Println("  stray: " + p)
	}
	fmt.Println("files of internal/store using each placeholder style in their SQL text:")
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
