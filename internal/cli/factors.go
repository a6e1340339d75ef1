package cli

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/towerdefence/platformctl/internal/app"
)

func newFactorsCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "factors",
		Short: "Second factors of a user (support)",
	}
	cmd.AddCommand(newFactorsResetCmd(e))
	addActorFlag(cmd, e)
	return cmd
}

func newFactorsResetCmd(e *env) *cobra.Command {
	var user, reason string
	var realm, output *string
	cmd := &cobra.Command{
		Use:   "reset --user EMAIL|ID --reason TEXT [--realm player|admin]",
		Short: "Remove a user's second factors and passkeys after verifying who asks",
		Long: "For a user who lost their authenticator and backup codes. Never silent: --reason is required\n" +
			"and written to the audit log under your name, the user is mailed, and every session of theirs\n" +
			"ends, so they sign in again with the password and enrol afresh.",
		Args: cobra.NoArgs,
		RunE: supportRunE(e, func(cmd *cobra.Command, a *app.App, _ []string) error {
			r, err := parseRealmFlag(*realm)
			if err != nil {
				return err
			}
			res, err := a.Auth.SupportResetFactors(cmd.Context(), supportActor(e), r, user, reason)
			if err != nil {
				return flagNames(err)
			}
			fmt.Fprintf(e.stderr, "reset the second factors of %s (%s); %d session(s) ended; the user was mailed\n",
				res.User.Email, res.User.ID, res.SessionsEnded)
			if ok, err := writeData(e.stdout, *output, res); ok {
				return err
			}
			v := e.newView(*output)
			return v.print(e, []string{"USER", "TOTP REMOVED", "PASSKEYS REMOVED", "SESSIONS ENDED"},
				[][]string{{res.User.Email, strconv.FormatBool(res.TOTPRemoved), strconv.Itoa(res.PasskeysRemoved), strconv.Itoa(res.SessionsEnded)}})
		}),
	}
	cmd.Flags().StringVar(&user, "user", "", "the user's email address or id")
	cmd.Flags().StringVar(&reason, "reason", "", "why, e.g. the ticket and how the owner was verified (required)")
	cmd.MarkFlagRequired("user")   //nolint:errcheck // the flag exists
	cmd.MarkFlagRequired("reason") //nolint:errcheck // the flag exists
	realm = addRealmFlag(cmd)
	output = addOutputFlag(cmd)
	bindSettings(cmd)
	return cmd
}
