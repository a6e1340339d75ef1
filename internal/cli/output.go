package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/lipgloss/table"
	ansiw "github.com/charmbracelet/x/ansi"
	"github.com/google/uuid"
	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

// Output formats of data commands. -o/--output means the format on every
// command of the CLI; commands that write a file take -f/--file.
const (
	outputTable = "table" // fits the terminal: long cells cut with "…", times as ages
	outputWide  = "wide"  // every cell whole, times in RFC 3339
	outputJSON  = "json"
	outputYAML  = "yaml"
)

// outputFormats are the values of --output, in the order help lists them.
var outputFormats = []string{outputTable, outputWide, outputJSON, outputYAML}

// addOutputFlag registers -o/--output on a data command, with completion
// of its values, and returns where its value lands. formats default to
// outputFormats; the first is the default.
func addOutputFlag(cmd *cobra.Command, formats ...string) *string {
	if len(formats) == 0 {
		formats = outputFormats
	}
	p := cmd.Flags().StringP("output", "o", formats[0], "output format: "+strings.Join(formats, ", "))
	completeValues(cmd, "output", formats...)
	return p
}

// checkOutput validates an --output value against formats (default
// outputFormats).
func checkOutput(got string, formats ...string) error {
	if len(formats) == 0 {
		formats = outputFormats
	}
	if slices.Contains(formats, got) {
		return nil
	}
	return withExit(ExitUsage, fmt.Errorf("--output must be one of %s; got %q", strings.Join(formats, ", "), got))
}

// completeValues offers values as the completions of flag on cmd.
func completeValues(cmd *cobra.Command, flag string, values ...string) {
	cmd.RegisterFlagCompletionFunc(flag, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp)) //nolint:errcheck // the flag exists
}

// writeJSON writes v as indented JSON for scripts, with control and
// format characters escaped (escapeJSONText) so that a person paging it
// on a terminal is as safe as one reading a table.
func writeJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(escapeJSONText(buf.Bytes()))
	return err
}

// writeData writes v as JSON or YAML (with the JSON field names) and
// reports whether format was one of them.
func writeData(w io.Writer, format string, v any) (bool, error) {
	switch format {
	case outputJSON:
		return true, writeJSON(w, v)
	case outputYAML:
		safe, err := safeYAMLValue(v)
		if err != nil {
			return true, err
		}
		raw, err := yaml.Marshal(safe)
		if err != nil {
			return true, err
		}
		_, err = w.Write(raw)
		return true, err
	}
	return false, nil
}

// view is how a command renders tables for one run: the format, the width
// to fit (0: no limit) and the clock relative ages count from.
type view struct {
	format string
	width  int
	now    time.Time
}

// newView picks the width for format: the terminal's for a table on a
// terminal, else $COLUMNS when set, else no limit; wide never cuts.
func (e *env) newView(format string) view {
	v := view{format: format, now: time.Now()}
	if format == outputWide {
		return v
	}
	if w := terminalWidth(e.stdout); w > 0 {
		v.width = w
	} else if n, err := strconv.Atoi(e.getenv("COLUMNS")); err == nil && n > 0 {
		v.width = n
	}
	return v
}

// table writes a table in format to stdout.
func (e *env) table(format string, headers []string, rows [][]string) error {
	return e.newView(format).print(e, headers, rows)
}

// writeTable writes a plain table to w, bordered when w is a terminal,
// for writers that are not a command's stdout.
func writeTable(w io.Writer, headers []string, rows [][]string) error {
	return view{format: outputTable}.write(w, isTerminal(w), headers, rows)
}

// print writes a table in this view to stdout.
func (v view) print(e *env, headers []string, rows [][]string) error {
	return v.write(e.stdout, e.styled(e.stdout), headers, rows)
}

// when renders a time: an age ("3h ago", "in 2d") in a table, RFC 3339 in
// wide output; "-" for none.
func (v view) when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	if v.format == outputWide {
		return t.UTC().Format(time.RFC3339)
	}
	return relativeAge(t, v.now)
}

// whenPtr is when for an optional time.
func (v view) whenPtr(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return v.when(*t)
}

// relativeAge renders t against now in its largest whole unit.
func relativeAge(t, now time.Time) string {
	d := now.Sub(t)
	suffix, prefix := " ago", ""
	if d < 0 {
		d, suffix, prefix = -d, "", "in "
	}
	var s string
	switch {
	case d < time.Minute:
		return map[bool]string{true: "just now", false: "in <1m"}[prefix == ""]
	case d < time.Hour:
		s = strconv.Itoa(int(d/time.Minute)) + "m"
	case d < 48*time.Hour:
		s = strconv.Itoa(int(d/time.Hour)) + "h"
	case d < 365*24*time.Hour:
		s = strconv.Itoa(int(d/(24*time.Hour))) + "d"
	default:
		s = strconv.Itoa(int(d/(365*24*time.Hour))) + "y"
	}
	return prefix + s + suffix
}

var headerStyle = lipgloss.NewStyle().Bold(true).Padding(0, 1)
var cellStyle = lipgloss.NewStyle().Padding(0, 1)

// Column overheads: plain columns are separated by two spaces; a bordered
// table adds a border and a space of padding on each side of every cell.
const (
	plainGap     = 2
	borderedCell = 3
)

// write renders rows for people: a bordered lipgloss table when styled
// (colour on a terminal), plain aligned columns otherwise; cut to fit the
// view's width.
func (v view) write(w io.Writer, styled bool, headers []string, rows [][]string) error {
	headers, rows = safeRows([][]string{headers})[0], safeRows(rows)
	overhead := plainGap*(len(headers)-1) + 0
	if styled {
		overhead = borderedCell*len(headers) + 1
	}
	if v.width > 0 {
		rows = fitColumns(headers, rows, v.width-overhead)
	}
	if !styled {
		tw := tabwriter.NewWriter(w, 0, 4, plainGap, ' ', 0)
		fmt.Fprintln(tw, strings.Join(headers, "\t"))
		for _, r := range rows {
			fmt.Fprintln(tw, strings.Join(r, "\t"))
		}
		return tw.Flush()
	}
	t := table.New().
		Border(lipgloss.RoundedBorder()).
		Headers(headers...).
		Rows(rows...).
		StyleFunc(func(row, col int) lipgloss.Style {
			if row == table.HeaderRow {
				return headerStyle
			}
			return cellStyle
		})
	_, err := fmt.Fprintln(w, t.Render())
	return err
}

// minColumn is the narrowest a column is cut to (a header may be cut
// too); "just now" and "in 23h" fit.
const minColumn = 8

// fitColumns cuts the cells of the widest columns, with an ellipsis, until
// the columns' widths add up to at most avail. Narrow columns (ids,
// statuses) stay whole while wide free text gives way.
func fitColumns(headers []string, rows [][]string, avail int) [][]string {
	widths := make([]int, len(headers))
	for i, h := range headers {
		widths[i] = ansiw.StringWidth(h)
	}
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], ansiw.StringWidth(c))
		}
	}
	total := 0
	for _, w := range widths {
		total += w
	}
	// Free text gives way first, down to minColumn; ids only when
	// nothing else can.
	whole := idColumns(rows, len(headers))
	for _, keepIDs := range []bool{true, false} {
		for total > avail {
			widest := -1
			for i := range widths {
				if !(keepIDs && whole[i]) && (widest < 0 || widths[i] > widths[widest]) {
					widest = i
				}
			}
			if widest < 0 || widths[widest] <= minColumn {
				break
			}
			widths[widest]--
			total--
		}
	}
	out := make([][]string, len(rows))
	for i, r := range rows {
		out[i] = make([]string, len(r))
		for j, c := range r {
			out[i][j] = ansiw.Truncate(c, widths[j], "…")
		}
	}
	for j, h := range headers {
		headers[j] = ansiw.Truncate(h, widths[j], "…")
	}
	return out
}

// idColumns marks the columns that hold ids (UUIDs), which stay whole: an
// id is what a reader copies into the next command.
func idColumns(rows [][]string, n int) []bool {
	whole := make([]bool, n)
	for i := range whole {
		whole[i] = len(rows) > 0
		for _, r := range rows {
			if _, err := uuid.Parse(r[i]); err != nil {
				whole[i] = false
				break
			}
		}
	}
	return whole
}

// fitLine cuts a free-text line to the view's width.
func fitLine(v view, s string) string {
	s = safeText(s)
	if v.width <= 0 {
		return s
	}
	return ansiw.Truncate(s, v.width, "…")
}
