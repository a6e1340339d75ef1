package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/towerdefence/platformctl/internal/admin"
	"github.com/towerdefence/platformctl/internal/config"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/profile"
)

func newTokenCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Inspect and issue the confirmation tokens of profile changes (support)",
		Long: "Confirmation tokens confirm profile, email and password changes. Support staff can look at\n" +
			"a token without using it, and start a change on a player's behalf. Every action is audited.",
	}
	cmd.AddCommand(newTokenInspectCmd(e), newTokenIssueCmd(e))
	addActorFlag(cmd, e)
	return cmd
}

func newTokenInspectCmd(e *env) *cobra.Command {
	var output *string
	cmd := &cobra.Command{
		Use:   "inspect TOKEN",
		Short: "Show what a token is for and whether it is pending, used, expired or superseded; never uses it",
		Long: "Show a token's change type, user, step, status (pending, used, expired, superseded), creation\n" +
			"and expiry. The token is not consumed. Pass - to read it from stdin, keeping it out of the\n" +
			"shell history.",
		Args: cobra.ExactArgs(1),
		RunE: planeRunE(e, func(cmd *cobra.Command, p plane, args []string) error {
			token := args[0]
			if token == "-" {
				line, err := readLine(e.stdin)
				if err != nil {
					return withExit(ExitUsage, fmt.Errorf("read the token from stdin: %w", err))
				}
				token = line
			}
			info, err := p.InspectToken(cmd.Context(), strings.TrimSpace(token))
			if err != nil {
				return err
			}
			if ok, err := writeData(e.stdout, *output, info); ok {
				return err
			}
			v := e.newView(*output)
			return v.print(e, []string{"FIELD", "VALUE"}, [][]string{
				{"type", string(info.Type)},
				{"step", string(info.Step)},
				{"status", info.Status},
				{"user", info.UserID.String()},
				{"email", info.Email},
				{"nickname", info.Nickname},
				{"change", info.ChangeID.String() + " (" + string(info.ChangeStatus) + ")"},
				{"requested by", info.RequestedBy},
				{"created", v.when(info.CreatedAt)},
				{"expires", v.when(info.ExpiresAt)},
				{"used", v.whenPtr(info.UsedAt)},
			})
		}),
	}
	output = addOutputFlag(cmd)
	bindSupportSettings(cmd)
	return cmd
}

func newTokenIssueCmd(e *env) *cobra.Command {
	var (
		output *string
		in     profile.IssueInput
		typ    string
	)
	cmd := &cobra.Command{
		Use:   "issue --user EMAIL|ID --type profile|email|password --callback-url URL [flags]",
		Short: "Start a profile, email or password change for a player and print its token and link (or mail it with --send)",
		Long: "Create the pending change on the player's behalf, superseding their pending change of that\n" +
			"type, and print the token and the link (callback URL + token). With --send the link is mailed\n" +
			"as the player's own request would be, and not printed. A new password (--type password) is\n" +
			"read from stdin, never from a flag. The action and --reason are written to the audit log.",
		Example: "  platformctl token issue --user ada@example.com --type profile --nickname ada_l --callback-url https://play.example.com/confirm\n" +
			"  platformctl token issue --user ada@example.com --type email --new-email ada@new.example --send --callback-url https://play.example.com/confirm\n" +
			"  printf '%s\\n' \"$NEW_PASSWORD\" | platformctl token issue --user ada@example.com --type password --callback-url https://play.example.com/confirm",
		Args: cobra.NoArgs,
		RunE: planeRunE(e, func(cmd *cobra.Command, p plane, _ []string) error {
			in.Type = profile.Type(typ)
			if in.Type == profile.TypePassword {
				pw, err := readPassword(e)
				if err != nil {
					return withExit(ExitUsage, err)
				}
				in.NewPassword = pw
			}
			issued, err := p.IssueToken(cmd.Context(), in.User, admin.RequestOf(in))
			if err != nil {
				return flagNames(err)
			}
			if *output == outputJSON {
				if issued.Sent {
					// Mailed to the player: staff need not see the token.
					issued.Token, issued.Link = "", ""
				}
				return writeJSON(e.stdout, issued)
			}
			v := e.newView(*output)
			v.width = 0 // the token and the link are copied whole
			rows := [][]string{
				{"type", string(issued.Type)},
				{"step", string(issued.Step)},
				{"user", issued.UserID.String()},
				{"recipient", issued.Recipient},
				{"change", issued.ChangeID.String()},
				{"expires", v.when(issued.ExpiresAt)},
			}
			if issued.Sent {
				rows = append(rows, []string{"mailed", issued.MessageID.String()})
			} else {
				rows = append(rows, []string{"token", issued.Token}, []string{"link", issued.Link})
			}
			return v.print(e, []string{"FIELD", "VALUE"}, rows)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&in.User, "user", "", "the player's email or id (required)")
	f.StringVar(&typ, "type", "", "profile, email or password (required)")
	completeValues(cmd, "type", string(profile.TypeProfile), string(profile.TypeEmail), string(profile.TypePassword))
	f.StringVar(&in.Name, "name", "", "profile: the new name (default: unchanged)")
	f.StringVar(&in.Nickname, "nickname", "", "profile: the new nickname (default: unchanged)")
	f.StringVar(&in.NewEmail, "new-email", "", "email: the new address")
	f.BoolVar(&in.SkipOldEmail, "skip-old-email", false, "email: skip the approval by the old address (the player lost it and proved who they are)")
	f.StringVar(&in.CallbackURL, "callback-url", "", "client page the link opens, on a trusted origin (required)")
	f.BoolVar(&in.Send, "send", false, "mail the link to the player instead of printing it")
	f.StringVar(&in.Reason, "reason", "", "why, for the audit log (e.g. a ticket number)")
	cmd.MarkFlagRequired("user")
	cmd.MarkFlagRequired("type")
	cmd.MarkFlagRequired("callback-url")
	output = addOutputFlag(cmd)
	bindSupportSettings(cmd, "base-url", "trusted-origins", "token-ttl")
	return cmd
}

// readPassword reads the new password without echo from a terminal, or
// as the first line of piped stdin.
func readPassword(e *env) (string, error) {
	if f, ok := e.stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprint(e.stderr, "New password: ")
		pw, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(e.stderr)
		if err != nil {
			return "", fmt.Errorf("read the new password: %w", err)
		}
		return string(pw), nil
	}
	pw, err := readLine(e.stdin)
	if err != nil {
		return "", fmt.Errorf("read the new password from stdin: %w", err)
	}
	return pw, nil
}

// readLine returns the first line of r without its line ending.
func readLine(r io.Reader) (string, error) {
	line, err := bufio.NewReader(io.LimitReader(r, 4096)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", errors.New("nothing on stdin")
	}
	return line, nil
}

// fieldFlags names the command-line input behind each request field.
var fieldFlags = map[string]string{"newEmail": "--new-email", "callbackURL": "--callback-url",
	"newPassword": "the new password (stdin)", "user": "--user", "type": "--type", "name": "--name", "nickname": "--nickname"}

// flagNames words a validation error in the command's flags, so the field
// problem "newEmail: is required" reads "--new-email: is required".
func flagNames(err error) error {
	pe, ok := platform.As(err)
	if !ok || len(pe.Fields) == 0 {
		return err
	}
	field, problem := pe.Fields.First()
	flag, ok := fieldFlags[field]
	if !ok {
		return err
	}
	c := *pe
	c.Message = flag + ": " + problem
	return &c
}

// explainCallback adds to a refused callback URL which origins are
// trusted and where each comes from, so the fix is one look away.
func explainCallback(err error, cfg *config.Config) error {
	pe, ok := platform.As(err)
	if !ok || pe.Code != profile.CodeInvalidCallbackURL || len(cfg.TrustedOrigins) == 0 {
		return err
	}
	c := *pe
	c.Message += fmt.Sprintf("; trusted origins: %s (PLATFORM_BASE_URL / --base-url)", cfg.TrustedOrigins[0])
	if extra := cfg.TrustedOrigins[1:]; len(extra) > 0 {
		c.Message += fmt.Sprintf(", %s (PLATFORM_TRUSTED_ORIGINS / --trusted-origins)", strings.Join(extra, ", "))
	} else {
		c.Message += "; add more with PLATFORM_TRUSTED_ORIGINS or --trusted-origins"
	}
	return &c
}
