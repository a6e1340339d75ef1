package cli

import (
	"fmt"
	"io/fs"
	"os"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/towerdefence/platformctl/fixtures"
	"github.com/towerdefence/platformctl/internal/app"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/seed"
)

func newSeedCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "seed",
		Short: "Apply fixtures to the database",
	}
	cmd.AddCommand(newSeedFixturesCmd(e))
	return cmd
}

func newSeedFixturesCmd(e *env) *cobra.Command {
	var dir string
	var dryRun, skipWorld bool
	cmd := &cobra.Command{
		Use:   "fixtures",
		Short: "Validate the fixtures, then apply them idempotently",
		Long: "Validate the content catalog, starter decks, live-ops defaults and development world, and\n" +
			"list every problem (exit 2, nothing written); otherwise apply them in one transaction.\n\n" +
			"Running it twice changes nothing. The catalog and the live-ops configuration get a new\n" +
			"version only when their content changed (live-ops stays untouched once an operator\n" +
			"published). Each development-world item is applied once and never again, so what\n" +
			"players changed since is kept; the world is skipped in production.\n\n" +
			"Without --dir the fixtures built into the binary are used.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			output, _ := cmd.Flags().GetString("output")
			if err := checkOutput(output); err != nil {
				return err
			}
			fsys, source, err := fixtureSource(dir)
			if err != nil {
				return err
			}
			set, problems := seed.Load(fsys)
			if len(problems) > 0 {
				return reportProblems(e, source, problems)
			}
			cfg, err := loadConfig(cmd, e)
			if err != nil {
				return err
			}
			a, err := app.New(cmd.Context(), cfg, newLogger(cfg, e), e.build)
			if err != nil {
				return err
			}
			defer a.Close()
			world := !skipWorld && !cfg.IsProduction()
			if set.World != nil && !world {
				fmt.Fprintln(e.stderr, "skipping the development world", map[bool]string{true: "(production)", false: "(--skip-world)"}[cfg.IsProduction()])
			}
			report, err := a.Seeder.Seed(cmd.Context(), set, seed.Options{DryRun: dryRun, World: world})
			if ps := seed.Problems(err); ps != nil {
				return reportProblems(e, source, ps)
			}
			if err != nil {
				return err
			}
			return writeSeedReport(e, output, report, dryRun)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "fixture directory laid out like the built-in one (default: built-in fixtures)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "validate and report what would change, write nothing")
	cmd.Flags().BoolVar(&skipWorld, "skip-world", false, "do not apply the development world")
	addOutputFlag(cmd)
	bindSettings(cmd)
	return cmd
}

// fixtureSource is the directory --dir names, or the fixtures built into
// the binary, and how to name it in messages.
func fixtureSource(dir string) (fs.FS, string, error) {
	if dir == "" {
		return fixtures.FS(), "the built-in fixtures", nil
	}
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		return nil, "", withExit(ExitUsage, fmt.Errorf("--dir %s: not a readable directory", dir))
	}
	return os.DirFS(dir), dir, nil
}

// writeSeedReport writes what seeding did, item by item, and says on
// stderr when nothing was or would be written.
func writeSeedReport(e *env, output string, report *seed.Report, dryRun bool) error {
	if ok, err := writeData(e.stdout, output, report); ok {
		return err
	}
	rows := make([][]string, 0, len(report.Items))
	for _, it := range report.Items {
		version := ""
		if it.Version > 0 {
			version = strconv.Itoa(it.Version)
		}
		rows = append(rows, []string{it.Item, it.Action, version, it.Note})
	}
	if err := e.table(output, []string{"ITEM", "ACTION", "VERSION", "NOTE"}, rows); err != nil {
		return err
	}
	switch {
	case dryRun:
		fmt.Fprintln(e.stderr, "dry run: nothing was written")
	case !report.Changed():
		fmt.Fprintln(e.stderr, "the database already had these fixtures; nothing changed")
	}
	return nil
}

// reportProblems lists fixture problems on stderr, one per line, and ends
// the command with the usage exit code.
func reportProblems(e *env, source string, ps []platform.Problem) error {
	for _, p := range ps {
		fmt.Fprintln(e.stderr, "  "+p.String())
	}
	return withExit(ExitUsage, fmt.Errorf("%d problem(s) in %s; nothing was written", len(ps), source))
}
