package cli

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/admin"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/lifecycle"
	"github.com/towerdefence/platformctl/internal/liveops"
	"github.com/towerdefence/platformctl/internal/role"
)

func newAdminCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "admin",
		Short: "Manage administrator accounts",
	}
	cmd.AddCommand(newAdminCreateCmd(e), newAdminSetRoleCmd(e))
	addActorFlag(cmd, e)
	return cmd
}

// adminSecondFactorHint tells a new administrator how to enrol the second
// factor production demands before any admin route answers.
const adminSecondFactorHint = "in production every admin route answers 403 SECOND_FACTOR_REQUIRED until a second factor\n" +
	"is enrolled: sign in on /api/auth/admin, POST /api/auth/admin/two-factor/enable {password},\n" +
	"add the otpauth:// URI to an authenticator app, then POST /api/auth/admin/two-factor/verify-totp {code}\n"

func newAdminCreateCmd(e *env) *cobra.Command {
	var email, name, role string
	var output *string
	cmd := &cobra.Command{
		Use:   "create --email EMAIL --name NAME [--role ROLE]",
		Short: "Create an administrator account (the only way one comes to exist)",
		Long: "Create an administrator who signs in on /api/auth/admin. The password is asked for twice\n" +
			"on a terminal, or read from the first line of stdin otherwise (8 to 128 characters).\n" +
			"Signed in (platformctl login) it needs the admins:write permission and is audited under your\n" +
			"administrator account; on a database URL it is audited as break-glass:<operating-system user>.",
		Args: cobra.NoArgs,
		RunE: planeRunE(e, func(cmd *cobra.Command, p plane, _ []string) error {
			password, err := readNewPassword(e)
			if err != nil {
				return withExit(ExitUsage, err)
			}
			u, err := p.CreateAdmin(cmd.Context(), admin.NewAdminInput{Email: email, Name: name, Role: role, Password: password})
			if err != nil {
				return flagNames(err)
			}
			fmt.Fprintf(e.stderr, "created administrator %s (%s)\n", u.Email, u.ID)
			fmt.Fprint(e.stderr, adminSecondFactorHint)
			if ok, err := writeData(e.stdout, *output, u); ok {
				return err
			}
			v := e.newView(*output)
			return v.print(e, []string{"ID", "EMAIL", "NAME", "ROLE", "CREATED"},
				[][]string{{u.ID.String(), u.Email, u.Name, u.Role, v.when(u.CreatedAt)}})
		}),
	}
	cmd.Flags().StringVar(&email, "email", "", "email address the administrator signs in with")
	cmd.Flags().StringVar(&name, "name", "", "display name")
	cmd.Flags().StringVar(&role, "role", account.DefaultAdminRole, "role: "+strings.Join(roleNames(), ", "))
	completeValues(cmd, "role", roleNames()...)
	cmd.MarkFlagRequired("email") //nolint:errcheck // the flag exists
	cmd.MarkFlagRequired("name")  //nolint:errcheck // the flag exists
	output = addOutputFlag(cmd)
	bindSupportSettings(cmd, "argon2-memory-kib", "argon2-iterations", "argon2-parallelism")
	return cmd
}

// readNewPassword asks twice on a terminal, with echo off; otherwise it
// reads the first line of stdin, so scripts can pipe a password in without
// it showing up in the process list.
func readNewPassword(e *env) (string, error) {
	f, ok := e.stdin.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		line, err := readLine(e.stdin)
		if err != nil {
			return "", fmt.Errorf("read the password from stdin: %w", err)
		}
		return line, nil
	}
	fmt.Fprint(e.stderr, "Password: ")
	first, err := term.ReadPassword(int(f.Fd()))
	fmt.Fprintln(e.stderr)
	if err != nil {
		return "", fmt.Errorf("read the password: %w", err)
	}
	fmt.Fprint(e.stderr, "Password again: ")
	second, err := term.ReadPassword(int(f.Fd()))
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
			"name: --actor, $PLATFORM_ACTOR or your operating-system user.",
	}
	cmd.AddCommand(newSessionsListCmd(e), newSessionsRevokeCmd(e))
	addActorFlag(cmd, e)
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
	p := cmd.Flags().String("realm", string(account.RealmPlayer), "player or admin")
	completeValues(cmd, "realm", string(account.RealmPlayer), string(account.RealmAdmin))
	return p
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
		RunE: planeRunE(e, func(cmd *cobra.Command, p plane, _ []string) error {
			r, err := parseRealmFlag(*realm)
			if err != nil {
				return err
			}
			u, list, err := listSessions(cmd.Context(), p, r, user)
			if err != nil {
				return err
			}
			v := e.newView(*output)
			out := make([]supportSession, len(list))
			rows := make([][]string, len(list))
			for i, s := range list {
				out[i] = supportSession{ID: s.ID, UserID: u.ID, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt,
					ExpiresAt: s.ExpiresAt, IPAddress: s.IPAddress, UserAgent: s.UserAgent}
				rows[i] = []string{s.ID.String(), v.when(s.CreatedAt), v.when(s.ExpiresAt), s.IPAddress, s.UserAgent}
				if v.format == outputWide {
					rows[i] = slices.Insert(rows[i], 2, v.when(s.UpdatedAt))
				}
			}
			fmt.Fprintf(e.stderr, "%d session(s) of %s (%s)\n", len(list), u.Email, u.ID)
			if ok, err := writeData(e.stdout, *output, out); ok {
				return err
			}
			headers := []string{"SESSION", "CREATED", "EXPIRES", "IP", "USER AGENT"}
			if v.format == outputWide {
				headers = slices.Insert(headers, 2, "LAST REFRESH")
			}
			return v.print(e, headers, rows)
		}),
	}
	cmd.Flags().StringVar(&user, "user", "", "the user's email address or id")
	cmd.MarkFlagRequired("user") //nolint:errcheck // the flag exists
	realm = addRealmFlag(cmd)
	output = addOutputFlag(cmd)
	bindSupportSettings(cmd)
	return cmd
}

func newSessionsRevokeCmd(e *env) *cobra.Command {
	var user, session, reason string
	var realm, output *string
	cmd := &cobra.Command{
		Use:   "revoke --user EMAIL|ID [--session ID] [--reason TEXT] [--realm player|admin]",
		Short: "Revoke one session of a user, or all of them",
		Args:  cobra.NoArgs,
		RunE: planeRunE(e, func(cmd *cobra.Command, p plane, _ []string) error {
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
			res, err := revokeSessions(cmd.Context(), p, r, user, admin.RevokeInput{SessionID: sessionID, Reason: strings.TrimSpace(reason)})
			if err != nil {
				return flagNames(err)
			}
			u, n := res, res.Revoked
			fmt.Fprintf(e.stderr, "revoked %d session(s) of %s (%s)\n", n, u.Email, u.UserID)
			if ok, err := writeData(e.stdout, *output, map[string]any{"userId": u.UserID, "email": u.Email, "revoked": n}); ok {
				return err
			}
			return e.table(*output, []string{"USER", "EMAIL", "REVOKED"}, [][]string{{u.UserID.String(), u.Email, fmt.Sprint(n)}})
		}),
	}
	cmd.Flags().StringVar(&user, "user", "", "the user's email address or id")
	cmd.Flags().StringVar(&session, "session", "", "revoke only this session (an id from `sessions list`)")
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the audit log")
	cmd.MarkFlagRequired("user") //nolint:errcheck // the flag exists
	realm = addRealmFlag(cmd)
	output = addOutputFlag(cmd)
	bindSupportSettings(cmd)
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
	var actor, user, action, since string
	var limit int
	var output *string
	cmd := &cobra.Command{
		Use:   "list [--user EMAIL|ID] [--action ACTION] [--actor ACTOR] [--since 7d|24h|RFC3339] [--limit N]",
		Short: "List audit entries, newest first",
		Long: "List who did what to whom, when and why. --user takes a player's or administrator's email\n" +
			"or id (the entries whose target is that account); --action an action such as\n" +
			"sessions.revoke; --actor the recorded actor (admin:ID, break-glass:alice); --since an\n" +
			"RFC 3339 time or an age back from now (7d, 24h, 30m).",
		Example: "  platformctl audit list --user ada@example.com --since 7d\n" +
			"  platformctl audit list --action sessions.revoke --since 2026-11-01T00:00:00Z --output json",
		Args: cobra.NoArgs,
		RunE: planeRunE(e, func(cmd *cobra.Command, p plane, _ []string) error {
			from, err := parseSince(since, time.Now())
			if err != nil {
				return withExit(ExitUsage, err)
			}
			if limit < 1 || limit > 1000 {
				return withExit(ExitUsage, errors.New("--limit must be 1-1000"))
			}
			entries, err := auditEntries(cmd.Context(), p, admin.AuditQuery{User: user, Action: action, Actor: actor, Since: from}, limit)
			if err != nil {
				return err
			}
			if ok, err := writeData(e.stdout, *output, entries); ok {
				return err
			}
			v := e.newView(*output)
			rows := make([][]string, len(entries))
			for i, en := range entries {
				rows[i] = []string{v.when(en.At), en.Actor, en.Action, en.Target, oneLine(en.Reason), formatDetails(en.Details)}
			}
			return v.print(e, []string{"AT", "ACTOR", "ACTION", "TARGET", "REASON", "DETAILS"}, rows)
		}),
	}
	cmd.Flags().StringVar(&user, "user", "", "only entries about this account (email or id)")
	cmd.Flags().StringVar(&action, "action", "", "only entries of this action (e.g. sessions.revoke)")
	cmd.Flags().StringVar(&actor, "actor", "", "only entries by this actor (admin:ID, break-glass:alice)")
	cmd.Flags().StringVar(&since, "since", "", "only entries at or after this RFC 3339 time, or this long ago (7d, 24h)")
	cmd.Flags().IntVar(&limit, "limit", 50, "at most this many entries (1-1000)")
	completeValues(cmd, "action", auditActions...)
	output = addOutputFlag(cmd)
	bindSupportSettings(cmd)
	return cmd
}

// auditActions are the actions the support tools and services record,
// offered as completions of audit list --action.
var auditActions = []string{auth.ActionAdminCreate, auth.ActionSessionsList, auth.ActionSessionsRevoke,
	"mail.show", "mail.retry", "token.inspect", "token.issue", lifecycle.ActionSuspend, lifecycle.ActionUnsuspend,
	lifecycle.ActionExport, lifecycle.ActionDelete, liveops.ActionPublish, liveops.ActionSetSeed, role.ActionSetRole}

// parseSince reads an RFC 3339 time or an age back from now: a Go duration
// (24h, 90m) or whole days (7d).
func parseSince(s string, now time.Time) (time.Time, error) {
	t, ok := parseTimeOrSpan(s, now, -1)
	if !ok {
		return time.Time{}, fmt.Errorf("--since %q: use an RFC 3339 time (2026-11-21T09:00:00Z) or an age (7d, 24h, 30m)", s)
	}
	return t, nil
}

// parseTimeOrSpan reads an RFC 3339 time, or a span (a Go duration or
// whole days, 7d) from now in direction sign (-1 back, +1 forward). Empty
// is the zero time.
func parseTimeOrSpan(s string, now time.Time, sign int) (time.Time, bool) {
	if s == "" {
		return time.Time{}, true
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), true
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n > 0 && n <= 36500 {
			return now.AddDate(0, 0, sign*n).UTC(), true
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(time.Duration(sign) * d).UTC(), true
	}
	return time.Time{}, false
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
