package cli

import (
	"bufio"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/towerdefence/platformctl/internal/config"
	"github.com/towerdefence/platformctl/internal/store"
)

func newMigrateCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply, roll back, check or inspect database migrations",
		Long: "Migrations are goose SQL files per dialect, embedded in the binary. Only `migrate up`\n" +
			"creates a database; the other verbs refuse to work on one that does not exist.\n" +
			"Concurrent jobs serialise on a lock that ends with the process holding it (a PostgreSQL\n" +
			"advisory lock, an OS lock on the SQLite file); a waiting job names the holder.\n" +
			"Every verb takes --output json for pipelines. Exit codes: 0 done, 1 a migration failed\n" +
			"or validation found problems, 2 bad usage or configuration, 4 a rollback was refused\n" +
			"(no --yes), 5 the database is unreachable or the lock was not free in --lock-timeout.",
	}
	cmd.AddCommand(
		newMigrateUpCmd(e),
		newMigrateDownCmd(e),
		newMigrateRedoCmd(e),
		newMigrateStatusCmd(e),
		newMigrateValidateCmd(e),
		newMigrateCreateCmd(e),
	)
	return cmd
}

// migrateOpts are the flags every migrate verb that opens the database shares.
type migrateOpts struct {
	output      *string
	lockTimeout time.Duration
}

func addMigrateFlags(cmd *cobra.Command, locks bool) *migrateOpts {
	// The migrate verbs open the database with the default pool, so the
	// pool settings would change nothing here.
	bindFlags(cmd, []config.Group{config.GroupDatabase}, func(s config.Setting) bool { return !strings.HasPrefix(s.Flag, "db-") })
	o := &migrateOpts{}
	o.output = addOutputFlag(cmd)
	if locks {
		cmd.Flags().DurationVar(&o.lockTimeout, "lock-timeout", 2*time.Minute,
			"how long to wait for another job's migration lock before giving up (exit 5)")
	}
	return o
}

// openMigrator opens the configured database (creating it only for
// `migrate up`) and its migrator. The caller closes the database.
func openMigrator(cmd *cobra.Command, e *env, o *migrateOpts, create bool) (*store.Migrator, *store.DB, error) {
	if err := checkOutput(*o.output, outputTable, outputJSON); err != nil {
		return nil, nil, err
	}
	cfg, err := loadConfig(cmd, e)
	if err != nil {
		return nil, nil, err
	}
	db, err := openDatabase(cmd, e, cfg, create)
	if err != nil {
		return nil, nil, err
	}
	m, err := db.Migrator()
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	m.LockTimeout = o.lockTimeout
	m.OnWait = func(holder string) {
		fmt.Fprintf(e.stderr, "waiting for the migration lock held by %s (giving up after %s; see --lock-timeout)\n", holder, o.lockTimeout)
	}
	return m, db, nil
}

// migrateReport is what a changing verb did, printed as JSON with --output
// json even when a step failed.
type migrateReport struct {
	Applied       []store.Migration `json:"applied"`
	RolledBack    []store.Migration `json:"rolledBack"`
	NotRolledBack []store.Migration `json:"notRolledBack,omitempty"`
	Failed        *store.Migration  `json:"failed,omitempty"`
	Error         string            `json:"error,omitempty"`
}

// finish prints the report as JSON or as lines for people and returns err.
func (r *migrateReport) finish(e *env, output string, err error) error {
	var step *store.StepError
	if errors.As(err, &step) {
		r.Failed = &step.Failed
	}
	if err != nil {
		r.Error = errorMessage(err)
	}
	if output == outputJSON {
		r.Applied, r.RolledBack = nonNil(r.Applied), nonNil(r.RolledBack)
		if werr := writeJSON(e.stdout, r); werr != nil {
			return werr
		}
		return err
	}
	printMigrations(e, "applied", r.Applied)
	printMigrations(e, "rolled back", r.RolledBack)
	if r.Failed != nil {
		fmt.Fprintf(e.stderr, "FAILED      %d %s: %v\n", r.Failed.Version, r.Failed.Name, step.Err)
	}
	printMigrations(e, "not rolled back", r.NotRolledBack)
	if err != nil && r.Failed != nil {
		return withExit(ExitFailure, fmt.Errorf("migration %d failed; the lines above say what was and was not done", r.Failed.Version))
	}
	return err
}

func nonNil(ms []store.Migration) []store.Migration {
	if ms == nil {
		return []store.Migration{}
	}
	return ms
}

func printMigrations(e *env, what string, ms []store.Migration) {
	for _, m := range ms {
		fmt.Fprintf(e.stderr, "%-11s %d %s\n", what, m.Version, m.Name)
	}
}

func newMigrateUpCmd(e *env) *cobra.Command {
	var o *migrateOpts
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Apply every pending migration (creates the database if needed)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, db, err := openMigrator(cmd, e, o, true)
			if err != nil {
				return err
			}
			defer db.Close()
			applied, err := m.Up(cmd.Context())
			r := &migrateReport{Applied: applied}
			if err == nil && len(applied) == 0 && *o.output != outputJSON {
				fmt.Fprintln(e.stderr, "database is up to date")
			}
			return r.finish(e, *o.output, err)
		},
	}
	o = addMigrateFlags(cmd, true)
	return cmd
}

func newMigrateDownCmd(e *env) *cobra.Command {
	var o *migrateOpts
	var steps int
	var to int64
	var yes bool
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Roll back the newest migration, or --steps N, or down --to VERSION",
		Long: "Rolls back ONE migration unless --steps or --to says more. It first prints what it\n" +
			"will undo, newest first, in the order it runs. On a terminal it asks before going on;\n" +
			"without a terminal, and whenever PLATFORM_ENV=production, it refuses (exit 4) unless\n" +
			"--yes is given. If a step fails it stops and lists what was and was not rolled back.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if steps < 1 {
				return withExit(ExitUsage, fmt.Errorf("--steps must be at least 1"))
			}
			if cmd.Flags().Changed("to") && cmd.Flags().Changed("steps") {
				return withExit(ExitUsage, fmt.Errorf("give --steps or --to, not both"))
			}
			if !cmd.Flags().Changed("to") {
				to = -1
			}
			plan := func(m *store.Migrator) ([]store.Migration, error) { return m.DownPlan(cmd.Context(), steps, to) }
			return runRollback(cmd, e, o, yes, "roll back", plan, func(m *store.Migrator, plan []store.Migration) (*migrateReport, error) {
				done, err := m.Down(cmd.Context(), plan)
				rest := plan[len(done):]
				if err != nil && len(rest) > 0 {
					rest = rest[1:] // the failed one is reported as failed
				}
				return &migrateReport{RolledBack: done, NotRolledBack: rest}, err
			})
		},
	}
	o = addMigrateFlags(cmd, true)
	cmd.Flags().IntVar(&steps, "steps", 1, "how many migrations to roll back, newest first")
	cmd.Flags().Int64Var(&to, "to", 0, "roll back every migration newer than VERSION (0: all of them)")
	cmd.Flags().BoolVar(&yes, "yes", false, "do not ask; required without a terminal and in production")
	return cmd
}

func newMigrateRedoCmd(e *env) *cobra.Command {
	var o *migrateOpts
	var yes bool
	cmd := &cobra.Command{
		Use:   "redo",
		Short: "Roll back the newest migration and apply it again",
		Long: "Runs the newest applied migration's down section, then its up section: for testing a\n" +
			"migration while writing it. It asks and refuses like `migrate down`.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			plan := func(m *store.Migrator) ([]store.Migration, error) { return m.DownPlan(cmd.Context(), 1, -1) }
			return runRollback(cmd, e, o, yes, "roll back and re-apply", plan, func(m *store.Migrator, plan []store.Migration) (*migrateReport, error) {
				undone, err := m.Redo(cmd.Context(), plan[0])
				switch {
				case err == nil:
					return &migrateReport{RolledBack: plan, Applied: plan}, nil
				case undone: // rolled back, not applied again: the schema is one migration behind
					return &migrateReport{RolledBack: plan}, err
				}
				return &migrateReport{NotRolledBack: plan}, err
			})
		},
	}
	o = addMigrateFlags(cmd, true)
	cmd.Flags().BoolVar(&yes, "yes", false, "do not ask; required without a terminal and in production")
	return cmd
}

// runRollback is the guarded part of down and redo: it shows the plan in
// the order it runs, asks or refuses, then runs it.
func runRollback(cmd *cobra.Command, e *env, o *migrateOpts, yes bool, verb string,
	plan func(*store.Migrator) ([]store.Migration, error),
	run func(*store.Migrator, []store.Migration) (*migrateReport, error)) error {
	m, db, err := openMigrator(cmd, e, o, false)
	if err != nil {
		return err
	}
	defer db.Close()
	steps, err := plan(m)
	if err != nil {
		return err
	}
	if len(steps) == 0 {
		fmt.Fprintln(e.stderr, "nothing to roll back")
		return (&migrateReport{}).finish(e, *o.output, nil)
	}
	fmt.Fprintf(e.stderr, "will %s, in this order:\n", verb)
	for _, s := range steps {
		fmt.Fprintf(e.stderr, "  %d %s\n", s.Version, s.Name)
	}
	cfg, err := loadConfig(cmd, e)
	if err != nil {
		return err
	}
	if err := confirmRollback(e, cfg, yes, len(steps)); err != nil {
		return err
	}
	r, err := run(m, steps)
	return r.finish(e, *o.output, err)
}

// confirmRollback refuses a rollback without --yes in production or
// without a terminal to ask on, and otherwise asks.
func confirmRollback(e *env, cfg *config.Config, yes bool, n int) error {
	switch {
	case yes:
		return nil
	case cfg.IsProduction():
		return withExit(ExitRefused, fmt.Errorf("refusing to roll back with PLATFORM_ENV=production without --yes"))
	case !isTerminal(e.stdin) || !isTerminal(e.stderr):
		return withExit(ExitRefused, fmt.Errorf("refusing to roll back without a terminal to confirm on; pass --yes"))
	}
	fmt.Fprintf(e.stderr, "Roll back %d migration(s)? Data in what they created is lost. [y/N] ", n)
	answer, _ := bufio.NewReader(e.stdin).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return nil
	}
	return withExit(ExitRefused, fmt.Errorf("rollback cancelled"))
}

func newMigrateStatusCmd(e *env) *cobra.Command {
	var o *migrateOpts
	cmd := &cobra.Command{
		Use:   "status",
		Short: "List migrations and whether each is applied",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, db, err := openMigrator(cmd, e, o, false)
			if err != nil {
				return err
			}
			defer db.Close()
			st, err := m.Status(cmd.Context())
			if err != nil {
				return err
			}
			if *o.output == outputJSON {
				return writeJSON(e.stdout, nonNil(st))
			}
			rows := make([][]string, 0, len(st))
			for _, s := range st {
				state, at := "pending", ""
				if s.Applied {
					state, at = "applied", s.AppliedAt.Format(time.RFC3339)
				}
				rows = append(rows, []string{strconv.FormatInt(s.Version, 10), s.Name, state, at})
			}
			return writeTable(e.stdout, []string{"VERSION", "NAME", "STATE", "APPLIED AT"}, rows)
		},
	}
	o = addMigrateFlags(cmd, false)
	return cmd
}

func newMigrateValidateCmd(e *env) *cobra.Command {
	var o *migrateOpts
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Check that the database's history matches this binary's migration files",
		Long: "Fails (exit 1) when an applied migration has no file in this binary, when an applied\n" +
			"file changed since it ran (SHA-256 recorded at apply time), or when a pending file is\n" +
			"older than an applied one. It changes nothing.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, db, err := openMigrator(cmd, e, o, false)
			if err != nil {
				return err
			}
			defer db.Close()
			problems, err := m.Validate(cmd.Context())
			if err != nil {
				return err
			}
			if *o.output == outputJSON {
				if err := writeJSON(e.stdout, map[string]any{"ok": len(problems) == 0, "problems": nonNilProblems(problems)}); err != nil {
					return err
				}
			} else {
				for _, p := range problems {
					fmt.Fprintf(e.stderr, "%d %s: %s\n", p.Version, p.File, p.Reason)
				}
			}
			if len(problems) > 0 {
				return withExit(ExitFailure, fmt.Errorf("%d problem(s) between the database and the migration files", len(problems)))
			}
			if *o.output != outputJSON {
				fmt.Fprintln(e.stderr, "migrations are valid")
			}
			return nil
		},
	}
	o = addMigrateFlags(cmd, false)
	return cmd
}

func nonNilProblems(ps []store.Mismatch) []store.Mismatch {
	if ps == nil {
		return []store.Mismatch{}
	}
	return ps
}

func newMigrateCreateCmd(e *env) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create an empty goose migration file for both dialects",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			paths, err := store.CreateMigration(dir, args[0], time.Now())
			if err != nil {
				return withExit(ExitUsage, err)
			}
			for _, p := range paths {
				fmt.Fprintln(e.stdout, p)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "migrations", "the repository's migrations folder")
	return cmd
}
