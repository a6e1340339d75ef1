package cli

import (
	"strconv"

	"github.com/spf13/cobra"
)

func newPruneCmd(e *env) *cobra.Command {
	var (
		output *string
		dryRun bool
	)
	cmd := &cobra.Command{
		Use:   "prune",
		Short: "Run every periodic sweep once and print what it removed (operators)",
		Long: "serve runs these sweeps itself, each once per period across all replicas: expired sessions,\n" +
			"mailed tokens and rate-limit counters, finished mail past PLATFORM_MAIL_RETENTION, closed lobbies,\n" +
			"old profile changes, idle lobbies, overdue mail, and audit entries past PLATFORM_AUDIT_RETENTION\n" +
			"(kept for ever by default). prune runs them all now, in batches of at most 10,000 rows per\n" +
			"transaction; running it beside serve is safe. --dry-run counts what would go and changes nothing\n" +
			"(closing idle lobbies and giving up on overdue mail are skipped then).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(*output); err != nil {
				return err
			}
			a, err := openSupportApp(cmd, e)
			if err != nil {
				return err
			}
			defer a.Close()
			results, runErr := a.Jobs.RunOnce(cmd.Context(), dryRun)
			if *output == outputJSON {
				if err := writeJSON(e.stdout, results); err != nil {
					return err
				}
				return runErr
			}
			head := "REMOVED"
			if dryRun {
				head = "WOULD REMOVE"
			}
			rows := make([][]string, 0, len(results))
			for _, r := range results {
				n := strconv.Itoa(r.Removed)
				if r.Skipped {
					n = "skipped"
				}
				rows = append(rows, []string{r.Job, n, oneLine(r.Error)})
			}
			if err := writeTable(e.stdout, []string{"JOB", head, "ERROR"}, rows); err != nil {
				return err
			}
			return runErr
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "count what would be removed; change nothing")
	output = addOutputFlag(cmd)
	bindSupportSettings(cmd, "mail-retention", "audit-retention", "token-ttl")
	return cmd
}
