package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/towerdefence/platformctl/internal/config"
	"github.com/towerdefence/platformctl/internal/store"
)

func newBackupCmd(e *env) *cobra.Command {
	var to string
	cmd := &cobra.Command{
		Use:   "backup --to FILE",
		Short: "Copy the embedded SQLite database to FILE while serve keeps running",
		Long: "backup writes a consistent copy of the embedded SQLite database (SQLite's online backup): the database\n" +
			"as of the moment the copy began, with every write committed before it, while serve goes on\n" +
			"reading and writing. The copy is written beside FILE and renamed into place, so FILE is never\n" +
			"half written; an existing regular FILE is replaced, anything else (a directory, a device, a\n" +
			"symbolic link) is refused. PostgreSQL is backed up with its own tools (pg_dump, pg_basebackup).\n" +
			"Exit codes: 0 done, 2 bad usage or a PostgreSQL URL, 5 the database is unreachable.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, output, err := loadSQLiteConfig(cmd, e, "backup", "--to", to)
			if err != nil {
				return err
			}
			db, err := openDatabase(cmd, e, cfg, false)
			if err != nil {
				return err
			}
			defer db.Close()
			start := time.Now()
			info, err := db.Backup(cmd.Context(), to)
			if err != nil {
				return err
			}
			return reportBackup(e, output, "backed up to", info, time.Since(start))
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "the backup file to write")
	addOutputFlag(cmd, outputTable, outputJSON)
	bindSettings(cmd, config.GroupDatabase)
	return cmd
}

func newRestoreCmd(e *env) *cobra.Command {
	var from string
	cmd := &cobra.Command{
		Use:   "restore --from FILE",
		Short: "Replace the embedded SQLite database with a backup (serve stopped)",
		Long: "restore replaces the embedded SQLite database with the backup FILE. It refuses while any\n" +
			"process holds the database open (stop every serve first), and refuses a backup that fails\n" +
			"PRAGMA integrity_check or was written by a newer release (one with migrations this binary\n" +
			"does not know); an older backup is fine, serve migrates it on start. The backup is copied and\n" +
			"checked beside the database and then renamed over it, so the database is never half written.\n" +
			"Exit codes: 0 done, 2 bad usage or a PostgreSQL URL, 3 no such FILE, 4 refused (in use,\n" +
			"corrupt, too new).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, output, err := loadSQLiteConfig(cmd, e, "restore", "--from", from)
			if err != nil {
				return err
			}
			path, err := store.SQLitePath(cfg.DatabaseURL)
			if err != nil {
				return withExit(ExitUsage, err)
			}
			start := time.Now()
			info, err := store.Restore(cmd.Context(), from, path)
			if err != nil {
				return err
			}
			return reportBackup(e, output, "restored", info, time.Since(start))
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "the backup file to restore")
	addOutputFlag(cmd, outputTable, outputJSON)
	bindSettings(cmd, config.GroupDatabase)
	return cmd
}

// loadSQLiteConfig checks the flags of backup and restore (--output and
// the required file flag) and loads the configuration, which must name
// the embedded SQLite database.
func loadSQLiteConfig(cmd *cobra.Command, e *env, verb, fileFlag, file string) (*config.Config, string, error) {
	output := cmd.Flags().Lookup("output").Value.String()
	if err := checkOutput(output, outputTable, outputJSON); err != nil {
		return nil, "", err
	}
	if file == "" {
		return nil, "", withExit(ExitUsage, fmt.Errorf("%s FILE is required", fileFlag))
	}
	cfg, err := loadConfig(cmd, e)
	if err != nil {
		return nil, "", err
	}
	if cfg.DatabaseDialect() != store.SQLite {
		return nil, "", withExit(ExitUsage, fmt.Errorf("%s works on the embedded SQLite database; PostgreSQL has pg_dump, pg_restore and pg_basebackup", verb))
	}
	return cfg, output, nil
}

func reportBackup(e *env, output, verb string, info store.BackupInfo, took time.Duration) error {
	if output == outputJSON {
		return writeJSON(e.stdout, struct {
			store.BackupInfo
			Seconds float64 `json:"seconds"`
		}{info, took.Seconds()})
	}
	fmt.Fprintf(e.stderr, "%s %s (%d bytes, migration %d) in %s\n", verb, info.Path, info.Bytes, info.Version, took.Round(time.Millisecond))
	return nil
}
