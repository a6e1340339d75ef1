package cli

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/spf13/cobra"

	"github.com/towerdefence/platformctl/internal/gamemap"
	"github.com/towerdefence/platformctl/internal/platform"
)

func newMapCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "map",
		Short: "Generate, analyse and check placements on seeded maps (no database needed)",
		Long: "Maps are generated from a size (short: 32×18 with 2 lanes, long: 48×27 with 3) and a\n" +
			"64-bit seed; the same size, seed and generator version always give the same map.",
	}
	cmd.AddCommand(newMapGenerateCmd(e), newMapAnalyzeCmd(e), newMapPlaceCmd(e), newMapRenderCmd(e))
	return cmd
}

// usagef is a usage error (exit 2).
func usagef(format string, args ...any) error {
	return withExit(ExitUsage, fmt.Errorf(format, args...))
}

func parseSizeFlag(s string) (gamemap.Size, error) {
	size, err := gamemap.ParseSize(s)
	if err != nil {
		return "", usagef("--size must be short or long, got %q", s)
	}
	return size, nil
}

func newMapGenerateCmd(e *env) *cobra.Command {
	var (
		size, format, out string
		seed              uint64
		scale             int
	)
	cmd := &cobra.Command{
		Use:   "generate --size short|long --seed N",
		Short: "Generate a map and print it as text, JSON, SVG or PNG",
		Long: "Generate the map of a size and seed. --format ascii (the default) draws it with one\n" +
			"character per cell, coloured on a terminal unless NO_COLOR is set:\n\n" +
			"  .  empty      #  lane      X  lanes overlap   +  build cell\n" +
			"  A  spawn of lane 0 (B lane 1, C lane 2)         G  goal\n\n" +
			"--format json prints the layout as served by GET /api/matchmaking/queues; svg and png\n" +
			"draw the designers' picture described under `map render`, --scale pixels per cell.",
		Example: "  platformctl map generate --size short --seed 42\n" +
			"  platformctl map generate --size long --seed 7 --format png -f long-7.png",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sz, err := parseSizeFlag(size)
			if err != nil {
				return err
			}
			var w io.Writer = e.stdout
			var buf bytes.Buffer
			if out != "" {
				w = &buf
			}
			if scale < gamemap.MinScale || scale > gamemap.MaxScale {
				return usagef("--scale must be between %d and %d, got %d", gamemap.MinScale, gamemap.MaxScale, scale)
			}
			l := gamemap.Generate(sz, seed)
			switch format {
			case "ascii":
				text, err := gamemap.ASCII(l)
				if err != nil {
					return err
				}
				if out == "" && e.styled(e.stdout) {
					text = colourMap(e.renderer(e.stdout), text)
				}
				_, err = io.WriteString(w, text)
				if err != nil {
					return err
				}
			case "json":
				if err := writeJSON(w, l); err != nil {
					return err
				}
			case "svg":
				if err := gamemap.SVG(w, l, gamemap.RenderOptions{Scale: scale}); err != nil {
					return usagef("%v", err)
				}
			case "png":
				if out == "" && isTerminal(e.stdout) {
					return usagef("refusing to write PNG to a terminal; use -f FILE or redirect stdout")
				}
				if err := gamemap.PNG(w, l, gamemap.RenderOptions{Scale: scale}); err != nil {
					return usagef("%v", err)
				}
			default:
				return usagef("--format must be one of ascii, json, svg, png; got %q", format)
			}
			if out != "" {
				return writeOutput(e, out, buf.Bytes(), fmt.Sprintf("%s map %d (%s)", sz, seed, format))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&size, "size", "", "map size: short or long")
	completeValues(cmd, "size", sizeNames...)
	cmd.Flags().Uint64Var(&seed, "seed", 0, "map seed, 0 to 18446744073709551615")
	cmd.Flags().StringVar(&format, "format", "ascii", "output format: ascii, json, svg or png")
	// -o is the output format on every command; a file is -f.
	cmd.Flags().StringVarP(&out, "out", "f", "", "write to FILE instead of stdout")
	completeValues(cmd, "format", "ascii", "json", "svg", "png")
	cmd.Flags().IntVar(&scale, "scale", gamemap.DefaultScale,
		fmt.Sprintf("pixels per cell of a PNG or SVG, %d to %d", gamemap.MinScale, gamemap.MaxScale))
	cmd.MarkFlagRequired("size") //nolint:errcheck // the flag exists
	cmd.MarkFlagRequired("seed") //nolint:errcheck // the flag exists
	return cmd
}

// colourMap colours each run of equal glyphs of an ASCII map.
func colourMap(r *lipgloss.Renderer, text string) string {
	styles := map[byte]lipgloss.Style{}
	var b strings.Builder
	for _, line := range strings.SplitAfter(text, "\n") {
		row := strings.TrimSuffix(line, "\n")
		for i := 0; i < len(row); {
			j := i + 1
			for j < len(row) && row[j] == row[i] {
				j++
			}
			st, ok := styles[row[i]]
			if !ok {
				st = r.NewStyle().Foreground(lipgloss.Color(gamemap.GlyphColor(row[i])))
				if row[i] != gamemap.GlyphEmpty {
					st = st.Bold(true)
				}
				styles[row[i]] = st
			}
			b.WriteString(st.Render(row[i:j]))
			i = j
		}
		if len(line) > len(row) {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func newMapAnalyzeCmd(e *env) *cobra.Command {
	var (
		size, in, seeds string
		seed            uint64
		workers         int
		output          *string
		pic             pictureFlags
	)
	cmd := &cobra.Command{
		Use:   "analyze (--size S --seed N | --in layout.json | --size S --seeds A-B)",
		Short: "Analyse one map, a layout file, or a whole range of seeds",
		Long: "With --seed or --in, print the counts, the route length of every lane for small (1×1)\n" +
			"and large (2×2) units, and every problem; the exit status is 1 when the layout has\n" +
			"problems. --in - reads the layout from stdin.\n\n" +
			"With --seeds A-B, analyse every seed from A to B on all cores and print a summary of path\n" +
			"and build cells, route lengths and the imbalance between lanes (longest minus shortest\n" +
			"route); --output json or csv lists every seed instead, in seed order, for spreadsheets.\n" +
			"A progress bar is drawn on stderr when it is a terminal.\n\n" +
			"--render FILE also draws the map (with --seed or --in) as a PNG or SVG picture, as\n" +
			"`map render` does, whether or not it has problems.",
		Example: "  platformctl map analyze --size short --seed 42\n" +
			"  platformctl map analyze --in my-layout.json --output json\n" +
			"  platformctl map analyze --in my-layout.json --render my-layout.png\n" +
			"  platformctl map analyze --size short --seeds 1-100000 --output csv > short.csv",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(*output, analyzeFormats...); err != nil {
				return err
			}
			set := 0
			for _, f := range []string{"seed", "in", "seeds"} {
				if cmd.Flags().Changed(f) {
					set++
				}
			}
			if set != 1 {
				return usagef("give exactly one of --seed, --in and --seeds")
			}
			if err := pic.check("render"); err != nil {
				return err
			}
			if in != "" {
				if cmd.Flags().Changed("size") {
					return usagef("--size does not apply to --in; the layout names its size")
				}
				l, err := readLayout(e, in)
				if err != nil {
					return err
				}
				return analyzeAndDraw(e, l, *output, &pic)
			}
			sz, err := parseSizeFlag(size)
			if err != nil {
				return err
			}
			if seeds != "" {
				if pic.path != "" {
					return usagef("--render draws one map; use it with --seed or --in, not --seeds")
				}
				from, to, err := parseSeedRange(seeds)
				if err != nil {
					return err
				}
				if workers < 1 {
					return usagef("--workers must be at least 1")
				}
				return sweep(cmd.Context(), e, sweepSpec{size: sz, from: from, to: to, workers: workers, output: *output})
			}
			return analyzeAndDraw(e, gamemap.Generate(sz, seed), *output, &pic)
		},
	}
	cmd.Flags().StringVar(&size, "size", "", "map size: short or long (with --seed or --seeds)")
	completeValues(cmd, "size", sizeNames...)
	cmd.Flags().Uint64Var(&seed, "seed", 0, "analyse the map of this seed")
	cmd.Flags().StringVar(&in, "in", "", "analyse the layout in this JSON file (- for stdin)")
	cmd.Flags().StringVar(&seeds, "seeds", "", "analyse every seed of the inclusive range A-B")
	cmd.Flags().IntVar(&workers, "workers", defaultWorkers(), "goroutines analysing a range")
	output = addOutputFlag(cmd, analyzeFormats...)
	pic.add(cmd, "render", "also draw the map to FILE, a .png or .svg")
	return cmd
}

// analyzeAndDraw draws the picture, if asked, before the analysis, whose
// problems fail the command.
func analyzeAndDraw(e *env, l gamemap.MapLayout, output string, pic *pictureFlags) error {
	if err := pic.draw(e, l, nil); err != nil {
		return err
	}
	return analyzeOne(e, l, output)
}

const outputCSV = "csv"

// analyzeFormats are the --output formats of map analyze.
var analyzeFormats = []string{outputTable, outputJSON, outputCSV}

// sizeNames are the values of --size, for completion.
var sizeNames = []string{string(gamemap.Short), string(gamemap.Long)}

// readLayout reads a layout strictly: any mistake in the JSON is a usage
// error naming the file and where in it.
func readLayout(e *env, path string) (gamemap.MapLayout, error) {
	data, err := readInput(e, path)
	if err != nil {
		return gamemap.MapLayout{}, usagef("read layout: %v", err)
	}
	l, err := gamemap.ParseLayout(data)
	if err != nil {
		return gamemap.MapLayout{}, usagef("layout %s: %v", displayName(path), err)
	}
	return l, nil
}

func displayName(path string) string {
	if path == "-" {
		return "on stdin"
	}
	return path
}

func parseSeedRange(s string) (uint64, uint64, error) {
	a, b, ok := strings.Cut(s, "-")
	from, err1 := strconv.ParseUint(a, 10, 64)
	to, err2 := strconv.ParseUint(b, 10, 64)
	if !ok || err1 != nil || err2 != nil || from > to {
		return 0, 0, usagef("--seeds must be FROM-TO with FROM <= TO, got %q", s)
	}
	return from, to, nil
}

// analyzeOne prints the analysis of one layout; a layout with problems
// makes the command fail after printing them.
func analyzeOne(e *env, l gamemap.MapLayout, output string) error {
	a := gamemap.Analyze(l)
	switch output {
	case outputJSON:
		if err := writeJSON(e.stdout, a); err != nil {
			return err
		}
	case outputCSV:
		w := newCSVWriter(e.stdout, len(a.Routes))
		w.row(rowOf(l.Seed, a))
		if err := w.flush(); err != nil {
			return err
		}
	default:
		state := "valid"
		if !a.Valid {
			state = fmt.Sprintf("%d problems", len(a.Problems))
		}
		fmt.Fprintf(e.stdout, "%s map, seed %d, version %d, %d×%d: %s\n", safeText(string(l.Size)), l.Seed, l.Version, l.Width, l.Height, state)
		fmt.Fprintf(e.stdout, "path cells %d, build cells %d, overlap cells %d\n", a.PathCellCount, a.BuildCellCount, a.OverlapCellCount)
		rows := make([][]string, 0, len(a.Routes))
		for _, r := range a.Routes {
			rows = append(rows, []string{strconv.Itoa(r.LaneID), optLen(r.SmallUnitLength), optLen(r.LargeUnitLength)})
		}
		if err := e.table(outputTable, []string{"LANE", "SMALL UNIT ROUTE", "LARGE UNIT ROUTE"}, rows); err != nil {
			return err
		}
		if len(a.Problems) > 0 {
			rows = rows[:0]
			for _, p := range a.Problems {
				cell := ""
				if p.Cell != nil {
					cell = fmt.Sprintf("(%d,%d)", p.Cell.X, p.Cell.Y)
				}
				rows = append(rows, []string{p.Code, cell, p.Message})
			}
			if err := e.table(outputTable, []string{"PROBLEM", "CELL", "MESSAGE"}, rows); err != nil {
				return err
			}
		}
	}
	if !a.Valid {
		return withExit(ExitFailure, fmt.Errorf("the layout has %d problems, first %s", len(a.Problems), a.Problems[0].Code))
	}
	return nil
}

func optLen(n *int) string {
	if n == nil {
		return "none"
	}
	return strconv.Itoa(*n)
}

func newMapPlaceCmd(e *env) *cobra.Command {
	var (
		src            layoutSource
		kind, existing string
		x, y           int
		output         *string
		pic            pictureFlags
	)
	cmd := &cobra.Command{
		Use:   "place --size S --seed N --kind tower|trap --x X --y Y",
		Short: "Check whether a tower or trap may stand on a cell",
		Long: "Towers stand on build cells, traps on lane cells outside spawn and goal footprints,\n" +
			"never two on one cell, and no trap may leave a lane without a route for small or large\n" +
			"units. --existing names a JSON list of placements already standing, like\n" +
			"[{\"kind\":\"trap\",\"cell\":{\"x\":5,\"y\":7}}]. --render FILE draws the map with the standing\n" +
			"placements and, when accepted, the new one, as `map render` does.\n\n" +
			"Exit status: 0 accepted, 1 refused, 2 usage error (including an invalid layout).",
		Example: "  platformctl map place --size short --seed 42 --kind trap --x 10 --y 6\n" +
			"  platformctl map place --in my-layout.json --existing placed.json --kind tower --x 3 --y 4 --render check.png",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(*output); err != nil {
				return err
			}
			if err := pic.check("render"); err != nil {
				return err
			}
			l, err := src.layout(cmd, e)
			if err != nil {
				return err
			}
			if kind != string(gamemap.Tower) && kind != string(gamemap.Trap) {
				return usagef("--kind must be tower or trap, got %q", kind)
			}
			standing, err := readPlacements(e, "--existing", existing)
			if err != nil {
				return err
			}
			p := gamemap.Placement{Kind: gamemap.StructureKind(kind), Cell: gamemap.GridPoint{X: x, Y: y}}
			err = gamemap.ValidatePlacement(l, standing, p)
			pe, refused := platform.As(err)
			if err != nil && (!refused || pe.Kind != platform.KindUnprocessable) {
				return err // an invalid layout or placements file: exit 2
			}
			drawn := standing
			if err == nil {
				drawn = append(slices.Clip(standing), p)
			}
			if derr := pic.draw(e, l, drawn); derr != nil {
				return derr
			}
			return reportPlacement(e, *output, p, err, pe)
		},
	}
	src.add(cmd)
	cmd.Flags().StringVar(&kind, "kind", "", "tower or trap")
	cmd.Flags().IntVar(&x, "x", 0, "column, from 0 at the left")
	cmd.Flags().IntVar(&y, "y", 0, "row, from 0 at the top")
	cmd.Flags().StringVar(&existing, "existing", "", "JSON file listing the placements already standing")
	cmd.MarkFlagRequired("kind") //nolint:errcheck // the flag exists
	cmd.MarkFlagRequired("x")    //nolint:errcheck // the flag exists
	cmd.MarkFlagRequired("y")    //nolint:errcheck // the flag exists
	output = addOutputFlag(cmd)
	pic.add(cmd, "render", "also draw the map with the placements to FILE, a .png or .svg")
	return cmd
}

// reportPlacement prints the verdict; a refusal (err, as pe) fails the
// command with exit 1.
func reportPlacement(e *env, output string, p gamemap.Placement, err error, pe *platform.Error) error {
	if output == outputJSON {
		v := struct {
			Accepted bool   `json:"accepted"`
			Code     string `json:"code,omitempty"`
			Message  string `json:"message,omitempty"`
		}{Accepted: err == nil}
		if err != nil {
			v.Code, v.Message = pe.Code, pe.Message
		}
		if werr := writeJSON(e.stdout, v); werr != nil {
			return werr
		}
	} else if err == nil {
		fmt.Fprintf(e.stdout, "accepted: %s at (%d,%d)\n", p.Kind, p.Cell.X, p.Cell.Y)
	}
	if err != nil {
		return withExit(ExitFailure, err) // the refusal is the stderr line
	}
	return nil
}
