package cli

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"
)

func newSecretsCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "secrets",
		Short: "Manage the encryption of stored secrets (operators)",
	}
	cmd.AddCommand(newSecretsRotateCmd(e))
	return cmd
}

func newSecretsRotateCmd(e *env) *cobra.Command {
	var output *string
	cmd := &cobra.Command{
		Use:   "rotate",
		Short: "Re-encrypt stored secrets under the current PLATFORM_SECRET",
		Long: "Values the service must read back (TOTP seeds) are encrypted with a key derived from\n" +
			"PLATFORM_SECRET. To change the secret: set the new one as PLATFORM_SECRET and the old one in\n" +
			"PLATFORM_PREVIOUS_SECRETS on every replica, run this command once, then drop the old one.\n" +
			"Safe to run again or beside serve.",
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
			res, err := a.Auth.ResealSecrets(cmd.Context())
			if err != nil {
				return err
			}
			if *output == outputJSON {
				return writeJSON(e.stdout, res)
			}
			fmt.Fprintf(e.stderr, "re-encrypted %d of %d stored secret(s)\n", res.Resealed, res.Checked)
			return writeTable(e.stdout, []string{"CHECKED", "RESEALED"}, [][]string{{strconv.Itoa(res.Checked), strconv.Itoa(res.Resealed)}})
		},
	}
	output = addOutputFlag(cmd)
	bindSettings(cmd)
	return cmd
}
