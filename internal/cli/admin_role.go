package cli

import (
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/towerdefence/platformctl/internal/admin"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/role"
)

func newAdminSetRoleCmd(e *env) *cobra.Command {
	var (
		output            *string
		email, id, reason string
		roleName          string
	)
	long := "Give an administrator another role (audited). The role applies from the administrator's next\n" +
		"request. The last administrator with the admin role keeps it. The roles:\n"
	for _, r := range role.All() {
		perms := make([]string, 0)
		for _, p := range role.Permissions(r) {
			perms = append(perms, string(p))
		}
		long += fmt.Sprintf("  %-8s %s\n", r, strings.Join(perms, ", "))
	}
	cmd := &cobra.Command{
		Use:   "set-role --email EMAIL|--id ID --role ROLE [--reason TEXT]",
		Short: "Change an administrator's role",
		Long:  strings.TrimRight(long, "\n"),
		Args:  cobra.NoArgs,
		RunE: planeRunE(e, func(cmd *cobra.Command, p plane, _ []string) error {
			ref := role.AdminRef{Email: email}
			if id != "" {
				u, err := uuid.Parse(id)
				if err != nil {
					return platform.Invalid("id", "must be a UUID")
				}
				ref.ID = u
			}
			ch, err := p.SetRole(cmd.Context(), ref, admin.RoleInput{Role: roleName, Reason: reason})
			if err != nil {
				return err
			}
			if ok, err := writeData(e.stdout, *output, ch); ok {
				return err
			}
			if !ch.Changed {
				fmt.Fprintf(e.stderr, "%s already has the %s role; nothing changed\n", ch.Admin.Email, ch.To)
			}
			return e.table(*output, []string{"ID", "EMAIL", "NAME", "FROM", "TO"},
				[][]string{{ch.Admin.ID.String(), ch.Admin.Email, ch.Admin.Name, string(ch.From), string(ch.To)}})
		}),
	}
	cmd.Flags().StringVar(&email, "email", "", "the administrator's email")
	cmd.Flags().StringVar(&id, "id", "", "the administrator's id")
	cmd.Flags().StringVar(&roleName, "role", "", "the new role: "+strings.Join(role.Names(), ", "))
	completeValues(cmd, "role", role.Names()...)
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the audit log")
	cmd.MarkFlagsMutuallyExclusive("email", "id")
	cmd.MarkFlagsOneRequired("email", "id")
	cmd.MarkFlagRequired("role") //nolint:errcheck // the flag exists
	output = addOutputFlag(cmd)
	bindSupportSettings(cmd)
	return cmd
}

// roleNames are the administrator roles, for help texts and completion.
func roleNames() []string { return role.Names() }
