package cli

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/towerdefence/platformctl/internal/store"
)

func newMigrateCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply, roll back or inspect database migrations",
		Long: "Migrations are plain SQL per dialect, embedded in the binary. `migrate up` is safe to run\n" +
			"from two deploy jobs at once: they serialise on a lock and each migration runs once.",
	}
	cmd.AddCommand(
		newMigrateUpCmd(e),
		newMigrateDownCmd(e),
		newMigrateStatusCmd(e),
		newMigrateCreateCmd(e),
		newMigrateUnlockCmd(e),
	)
	return cmd
}

// openMigrator opens the configured database without building services.
func openMigrator(cmd *cobra.Command, e *env) (*store.Migrator, func(), error) {
	cfg, err := loadConfig(cmd, e)
	if err != nil {
		return nil, nil, err
	}
	db, err := store.Open(cmd.Context(), cfg.DatabaseURL)
	if err != nil {
		return nil, nil, err
	}
	m, err := db.Migrator()
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return m, func() { db.Close() }, nil
}

func newMigrateUpCmd(e *env) *cobra.Command {
	return migrateStepCmd(e, "up", "Apply every pending migration",
		"applied", "database is up to date", (*store.Migrator).Up)
}

func newMigrateDownCmd(e *env) *cobra.Command {
	return migrateStepCmd(e, "down", "Roll back the last applied group of migrations",
		"rolled back", "nothing to roll back", (*store.Migrator).Down)
}

// migrateStepCmd is `migrate up` or `migrate down`: it runs step and names
// each migration step touched, even when a later one failed.
func migrateStepCmd(e *env, use, short, done, nothing string,
	step func(*store.Migrator, context.Context) ([]string, error)) *cobra.Command {
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, closeDB, err := openMigrator(cmd, e)
			if err != nil {
				return err
			}
			defer closeDB()
			names, err := step(m, cmd.Context())
			for _, name := range names {
				fmt.Fprintln(e.stderr, done, name)
			}
			if err != nil {
				return err
			}
			if len(names) == 0 {
				fmt.Fprintln(e.stderr, nothing)
			}
			return nil
		},
	}
	bindSettings(cmd)
	return cmd
}

func newMigrateStatusCmd(e *env) *cobra.Command {
	var output *string
	cmd := &cobra.Command{
		Use:   "status",
		Short: "List migrations and whether each is applied",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(*output); err != nil {
				return err
			}
			m, done, err := openMigrator(cmd, e)
			if err != nil {
				return err
			}
			defer done()
			st, err := m.Status(cmd.Context())
			if err != nil {
				return err
			}
			if ok, err := writeData(e.stdout, *output, st); ok {
				return err
			}
			rows := make([][]string, 0, len(st))
			for _, s := range st {
				state, group, at := "pending", "", ""
				if s.Applied {
					state, group = "applied", strconv.FormatInt(s.GroupID, 10)
					at = s.AppliedAt.Format(time.RFC3339)
				}
				rows = append(rows, []string{s.Name, s.Comment, state, group, at})
			}
			return writeTable(e.stdout, []string{"MIGRATION", "NAME", "STATE", "GROUP", "APPLIED AT"}, rows)
		},
	}
	output = addOutputFlag(cmd)
	bindSettings(cmd)
	return cmd
}

func newMigrateCreateCmd(e *env) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create empty up and down migration files for both dialects",
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

func newMigrateUnlockCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "unlock",
		Short: "Release a migration lock left behind by a process that died",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, done, err := openMigrator(cmd, e)
			if err != nil {
				return err
			}
			defer done()
			if err := m.Unlock(cmd.Context()); err != nil {
				return err
			}
			fmt.Fprintln(e.stderr, "migration lock released")
			return nil
		},
	}
	bindSettings(cmd)
	return cmd
}
