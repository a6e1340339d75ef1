package cli

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/x/term"
	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/audit"
)

func newAdminCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "admin",
		Short: "Manage administrator accounts",
	}
	cmd.AddCommand(newAdminCreateCmd(e), newAdminSetRoleCmd(e))
	return cmd
}

func newAdminCreateCmd(e *env) *cobra.Command {
	var email, name, role string
	var output *string
	cmd := &cobra.Command{
		Use:   "create --email EMAIL --name NAME [--role ROLE]",
		Short: "Create an administrator account (the only way one comes to exist)",
		Long: "Create an administrator who signs in on /api/auth/admin. The password is asked for twice\n" +
			"on a terminal, or read from the first line of stdin otherwise (8 to 128 characters).\n" +
			"The creation is written to the audit log under your operating-system user.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(*output); err != nil {
				return err
			}
			password, err := readNewPassword(e)
			if err != nil {
				return withExit(ExitUsage, err)
			}
			a, err := openSupportApp(cmd, e)
			if err != nil {
				return err
			}
			defer a.Close()
			u, err := a.Auth.CreateAdmin(cmd.Context(), supportActor(e), account.NewUser{Email: email, Name: name, Role: role, Password: password})
			if err != nil {
				return flagNames(err)
			}
			fmt.Fprintf(e.stderr, "created administrator %s (%s)\n", u.Email, u.ID)
			if ok, err := writeData(e.stdout, *output, u); ok {
				return err
			}
			v := e.newView(*output)
			return v.print(e, []string{"ID", "EMAIL", "NAME", "ROLE", "CREATED"},
				[][]string{{u.ID.String(), u.Email, u.Name, u.Role, v.when(u.CreatedAt)}})
		},
	}
	cmd.Flags().StringVar(&email, "email", "", "email address the administrator signs in with")
	cmd.Flags().StringVar(&name, "name", "", "display name")
	cmd.Flags().StringVar(&role, "role", account.DefaultAdminRole, "role")
	cmd.MarkFlagRequired("email") //nolint:errcheck // the flag exists
	cmd.MarkFlagRequired("name")  //nolint:errcheck // the flag exists
	output = addOutputFlag(cmd)
	bindSettings(cmd)
	return cmd
}

// readNewPassword asks twice on a terminal, with echo off; otherwise it
// reads the first line of stdin, so scripts can pipe a password in without
// it showing up in the process list.
func readNewPassword(e *env) (string, error) {
	f, ok := e.stdin.(*os.File)
	if !ok || !term.IsTerminal(f.Fd()) {
		line, err := readLine(e.stdin)
		if err != nil {
			return "", fmt.Errorf("read the password from stdin: %w", err)
		}
		return line, nil
	}
	fmt.Fprint(e.stderr, "Password: ")
	first, err := term.ReadPassword(f.Fd())
	fmt.Fprintln(e.stderr)
	if err != nil {
		return "", fmt.Errorf("read the password: %w", err)
	}
	fmt.Fprint(e.stderr, "Password again: ")
	second, err := term.ReadPassword(f.Fd())
	fmt.Fprintln(e.stderr)
	if err != nil {
		return "", fmt.Errorf("read the password: %w", err)
	}
	if string(first) != string(second) {
		return "", errors.New("the passwords differ")
	}
	return string(first), nil
}

func newSessionsCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "List and revoke a user's sessions (support)",
		Long: "Sessions of players (default) or administrators (--realm admin). A revoked session stops\n" +
			"working on its very next request. Every action is written to the audit log under your\n" +
			"operating-system user.",
	}
	cmd.AddCommand(newSessionsListCmd(e), newSessionsRevokeCmd(e))
	return cmd
}

// supportSession is a session as support staff see it: never a token.
type supportSession struct {
	ID        uuid.UUID `json:"id"`
	UserID    uuid.UUID `json:"userId"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	ExpiresAt time.Time `json:"expiresAt"`
	IPAddress string    `json:"ipAddress"`
	UserAgent string    `json:"userAgent"`
}

func addRealmFlag(cmd *cobra.Command) *string {
	return cmd.Flags().String("realm", string(account.RealmPlayer), "player or admin")
}

func parseRealmFlag(value string) (account.Realm, error) {
	r, err := account.ParseRealm(value)
	if err != nil {
		return "", withExit(ExitUsage, errors.New("--realm must be player or admin"))
	}
	return r, nil
}

func newSessionsListCmd(e *env) *cobra.Command {
	var user string
	var realm, output *string
	cmd := &cobra.Command{
		Use:   "list --user EMAIL|ID [--realm player|admin]",
		Short: "List a user's live sessions, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(*output); err != nil {
				return err
			}
			r, err := parseRealmFlag(*realm)
			if err != nil {
				return err
			}
			a, err := openSupportApp(cmd, e)
			if err != nil {
				return err
			}
			defer a.Close()
			u, list, err := a.Auth.SupportListSessions(cmd.Context(), supportActor(e), r, user)
			if err != nil {
				return err
			}
			v := e.newView(*output)
			out := make([]supportSession, len(list))
			rows := make([][]string, len(list))
			for i, s := range list {
				out[i] = supportSession{ID: s.ID, UserID: s.UserID, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt,
					ExpiresAt: s.ExpiresAt, IPAddress: s.IPAddress, UserAgent: s.UserAgent}
				rows[i] = []string{s.ID.String(), v.when(s.CreatedAt), v.when(s.UpdatedAt), v.when(s.ExpiresAt), s.IPAddress, s.UserAgent}
			}
			fmt.Fprintf(e.stderr, "%d session(s) of %s (%s)\n", len(list), u.Email, u.ID)
			if ok, err := writeData(e.stdout, *output, out); ok {
				return err
			}
			return v.print(e, []string{"SESSION", "CREATED", "LAST REFRESH", "EXPIRES", "IP", "USER AGENT"}, rows)
		},
	}
	cmd.Flags().StringVar(&user, "user", "", "the user's email address or id")
	cmd.MarkFlagRequired("user") //nolint:errcheck // the flag exists
	realm = addRealmFlag(cmd)
	output = addOutputFlag(cmd)
	bindSettings(cmd)
	return cmd
}

func newSessionsRevokeCmd(e *env) *cobra.Command {
	var user, session, reason string
	var realm, output *string
	cmd := &cobra.Command{
		Use:   "revoke --user EMAIL|ID [--session ID] [--reason TEXT] [--realm player|admin]",
		Short: "Revoke one session of a user, or all of them",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(*output); err != nil {
				return err
			}
			r, err := parseRealmFlag(*realm)
			if err != nil {
				return err
			}
			var sessionID uuid.UUID
			if session != "" {
				if sessionID, err = uuid.Parse(session); err != nil {
					return withExit(ExitUsage, fmt.Errorf("--session %q is not a session id", session))
				}
			}
			a, err := openSupportApp(cmd, e)
			if err != nil {
				return err
			}
			defer a.Close()
			u, n, err := a.Auth.SupportRevokeSessions(cmd.Context(), supportActor(e), r, user, sessionID, strings.TrimSpace(reason))
			if err != nil {
				return flagNames(err)
			}
			fmt.Fprintf(e.stderr, "revoked %d session(s) of %s (%s)\n", n, u.Email, u.ID)
			if ok, err := writeData(e.stdout, *output, map[string]any{"userId": u.ID, "email": u.Email, "revoked": n}); ok {
				return err
			}
			return e.table(*output, []string{"USER", "EMAIL", "REVOKED"}, [][]string{{u.ID.String(), u.Email, fmt.Sprint(n)}})
		},
	}
	cmd.Flags().StringVar(&user, "user", "", "the user's email address or id")
	cmd.Flags().StringVar(&session, "session", "", "revoke only this session (an id from `sessions list`)")
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the audit log")
	cmd.MarkFlagRequired("user") //nolint:errcheck // the flag exists
	realm = addRealmFlag(cmd)
	output = addOutputFlag(cmd)
	bindSettings(cmd)
	return cmd
}

func newAuditCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Read the audit log of administrative and support actions",
	}
	cmd.AddCommand(newAuditListCmd(e))
	return cmd
}

func newAuditListCmd(e *env) *cobra.Command {
	var actor, since string
	var limit int
	var output *string
	cmd := &cobra.Command{
		Use:   "list [--actor ACTOR] [--since TIME|DURATION] [--limit N]",
		Short: "List audit entries, newest first",
		Long: "List who did what to whom, when and why. --actor takes the recorded actor (os:alice for an\n" +
			"operator, admin:ID for an administrator); --since an RFC 3339 time or a duration back from now\n" +
			"(24h, 30m).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(*output); err != nil {
				return err
			}
			from, err := parseSince(since, time.Now())
			if err != nil {
				return withExit(ExitUsage, err)
			}
			if limit < 1 || limit > 1000 {
				return withExit(ExitUsage, errors.New("--limit must be 1-1000"))
			}
			a, err := openSupportApp(cmd, e)
			if err != nil {
				return err
			}
			defer a.Close()
			entries, err := a.Audit.List(cmd.Context(), audit.Filter{Actor: actor, Since: from, Limit: limit})
			if err != nil {
				return err
			}
			if *output == outputJSON {
				if entries == nil {
					entries = []audit.Entry{}
				}
				return writeJSON(e.stdout, entries)
			}
			rows := make([][]string, len(entries))
			for i, en := range entries {
				rows[i] = []string{en.At.Format(time.RFC3339), en.Actor, en.Action, en.Target, oneLine(en.Reason), formatDetails(en.Details)}
			}
			return e.table(*output, []string{"AT", "ACTOR", "ACTION", "TARGET", "REASON", "DETAILS"}, rows)
		},
	}
	cmd.Flags().StringVar(&actor, "actor", "", "only entries by this actor")
	cmd.Flags().StringVar(&since, "since", "", "only entries at or after this RFC 3339 time, or this long ago (24h)")
	cmd.Flags().IntVar(&limit, "limit", 50, "at most this many entries (1-1000)")
	output = addOutputFlag(cmd)
	bindSettings(cmd)
	return cmd
}

// parseSince reads an RFC 3339 time or a duration back from now.
func parseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), nil
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(-d).UTC(), nil
	}
	return time.Time{}, fmt.Errorf("--since %q: use an RFC 3339 time (2026-11-21T09:00:00Z) or a duration (24h)", s)
}

func formatDetails(d map[string]string) string {
	keys := make([]string, 0, len(d))
	for k := range d {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + d[k]
	}
	return strings.Join(parts, " ")
}
