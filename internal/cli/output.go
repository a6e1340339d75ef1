package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/lipgloss/table"
	"github.com/spf13/cobra"
)

// Output formats of data commands.
const (
	outputTable = "table"
	outputJSON  = "json"
)

// addOutputFlag registers --output on a data command and returns where
// its value lands.
func addOutputFlag(cmd *cobra.Command, extra ...string) *string {
	formats := append([]string{outputTable, outputJSON}, extra...)
	return cmd.Flags().StringP("output", "o", outputTable, fmt.Sprintf("output format: %v", formats))
}

// checkOutput validates an --output value against the allowed formats.
func checkOutput(got string, extra ...string) error {
	for _, f := range append([]string{outputTable, outputJSON}, extra...) {
		if got == f {
			return nil
		}
	}
	return withExit(ExitUsage, fmt.Errorf("--output must be one of table, json%s; got %q", joinExtra(extra), got))
}

func joinExtra(extra []string) string {
	s := ""
	for _, x := range extra {
		s += ", " + x
	}
	return s
}

// writeJSON writes v as indented JSON for scripts.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

var headerStyle = lipgloss.NewStyle().Bold(true).Padding(0, 1)
var cellStyle = lipgloss.NewStyle().Padding(0, 1)

// writeTable renders rows for people: a bordered lipgloss table on a
// terminal, plain aligned columns when piped.
func writeTable(w io.Writer, headers []string, rows [][]string) error {
	if !isTerminal(w) {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for i, h := range headers {
			if i > 0 {
				fmt.Fprint(tw, "\t")
			}
			fmt.Fprint(tw, h)
		}
		fmt.Fprintln(tw)
		for _, r := range rows {
			for i, c := range r {
				if i > 0 {
					fmt.Fprint(tw, "\t")
				}
				fmt.Fprint(tw, c)
			}
			fmt.Fprintln(tw)
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
