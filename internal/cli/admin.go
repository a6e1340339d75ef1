package cli

import "github.com/spf13/cobra"

func newAdminCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "admin",
		Short: "Manage administrator accounts and their roles",
		Long: "Administrators sign in to the admin console (the admin realm). Each has one role:\n" +
			"admin, liveops, support or viewer; `platformctl admin set-role --help` lists what each may do.",
	}
	cmd.AddCommand(newAdminSetRoleCmd(e))
	return cmd
}
