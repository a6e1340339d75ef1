package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newVersionCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and build date",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(e.stdout, "platformctl %s\ncommit: %s\nbuilt:  %s\n", e.build.Version, e.build.Commit, e.build.Date)
			return err
		},
	}
}
