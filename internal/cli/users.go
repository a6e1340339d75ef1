package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/admin"
	"github.com/towerdefence/platformctl/internal/lifecycle"
)

func newUsersCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "users",
		Short: "Look up, export, suspend and delete accounts (support)",
		Long: "Accounts of players (default) or administrators (--realm admin). A suspension ends every\n" +
			"session at once, on every replica, and refuses sign-in with ACCOUNT_SUSPENDED until it is\n" +
			"lifted or its --until passes. A deletion is final: the account's rows go in one transaction,\n" +
			"a tombstone keeps its id, and its email and nickname stay reserved for\n" +
			"PLATFORM_DELETION_QUARANTINE. Every change is written to the audit log: under your\n" +
			"administrator account after platformctl login (players only), else as break-glass on the\n" +
			"database.",
	}
	cmd.AddCommand(newUsersShowCmd(e), newUsersFindCmd(e), newUsersSearchCmd(e), newUsersDetailCmd(e),
		newUsersExportCmd(e), newUsersDeleteCmd(e), newUsersSuspendCmd(e), newUsersUnsuspendCmd(e))
	addActorFlag(cmd, e)
	return cmd
}

// userFlags are the flags every users subcommand takes.
type userFlags struct {
	user, reason  string
	realm, output *string
}

func addUserFlags(cmd *cobra.Command, f *userFlags, reason bool) {
	cmd.Flags().StringVar(&f.user, "user", "", "the account's email address or id")
	cmd.MarkFlagRequired("user") //nolint:errcheck // the flag exists
	if reason {
		cmd.Flags().StringVar(&f.reason, "reason", "", "why, for the audit log (required)")
		cmd.MarkFlagRequired("reason") //nolint:errcheck // the flag exists
	}
	f.realm = addRealmFlag(cmd)
	f.output = addOutputFlag(cmd)
	bindSettings(cmd)
}

func newUsersShowCmd(e *env) *cobra.Command {
	var f userFlags
	cmd := &cobra.Command{
		Use:   "show --user EMAIL|ID",
		Short: "Show an account: active, suspended (until when, why) or deleted (when, why)",
		Long:  "A deleted account is found by its id only: its email is no longer held.",
		RunE: planeRunE(e, func(cmd *cobra.Command, p plane, _ []string) error {
			r, err := parseRealmFlag(*f.realm)
			if err != nil {
				return err
			}
			st, err := p.AccountStatus(cmd.Context(), r, f.user)
			if err != nil {
				return err
			}
			if ok, err := writeData(e.stdout, *f.output, st); ok {
				return err
			}
			return e.table(*f.output, []string{"FIELD", "VALUE"}, statusRows(e.newView(*f.output), st))
		}),
	}
	addUserFlags(cmd, &f, false)
	return cmd
}

func statusRows(v view, st *lifecycle.AccountStatus) [][]string {
	rows := [][]string{{"status", st.Status}}
	if t := st.Tombstone; t != nil {
		return append(rows, []string{"id", t.ID.String()}, []string{"deleted", v.when(t.DeletedAt)},
			[]string{"reason", oneLine(t.Reason)}, []string{"by", t.Actor})
	}
	u := st.User
	rows = append(rows, []string{"id", u.ID.String()}, []string{"email", u.Email}, []string{"name", oneLine(u.Name)},
		[]string{"nickname", u.Nickname}, []string{"verified", strconv.FormatBool(u.EmailVerified)},
		[]string{"created", v.when(u.CreatedAt)})
	if s := st.Suspension; s != nil {
		until := "until lifted"
		if s.Until != nil {
			until = v.when(*s.Until)
		}
		rows = append(rows, []string{"suspended", v.when(s.CreatedAt)}, []string{"until", until},
			[]string{"reason", oneLine(s.Reason)}, []string{"by", s.Actor})
	}
	return rows
}

func newUsersFindCmd(e *env) *cobra.Command {
	var query string
	var limit int
	var realm, output *string
	cmd := &cobra.Command{
		Use:   "find --query PREFIX [--limit N]",
		Short: "Find accounts by email prefix (with @ or email:) or nickname prefix; the first page of users search",
		Long: "Players are found by the same search as users search QUERY (which also pages); administrators\n" +
			"(--realm admin) by email or nickname prefix on the database only.",
		RunE: planeRunE(e, func(cmd *cobra.Command, p plane, _ []string) error {
			r, err := parseRealmFlag(*realm)
			if err != nil {
				return err
			}
			users, err := findUsers(cmd.Context(), p, r, query, limit)
			if err != nil {
				return err
			}
			if ok, err := writeData(e.stdout, *output, users); ok {
				return err
			}
			v := e.newView(*output)
			rows := make([][]string, len(users))
			for i, u := range users {
				rows[i] = []string{u.ID.String(), u.Email, u.Nickname, oneLine(u.Name), v.when(u.CreatedAt)}
			}
			return v.print(e, []string{"ID", "EMAIL", "NICKNAME", "NAME", "CREATED"}, rows)
		}),
	}
	cmd.Flags().StringVar(&query, "query", "", "the start of an email address or nickname")
	cmd.MarkFlagRequired("query") //nolint:errcheck // the flag exists
	cmd.Flags().IntVar(&limit, "limit", 20, "at most this many accounts (1-100)")
	realm = addRealmFlag(cmd)
	output = addOutputFlag(cmd)
	bindSettings(cmd)
	return cmd
}

// findUsers is users find: players through the plane's search, so one
// search serves find, search and the console; administrators on the
// database, as the plane serves players only.
func findUsers(ctx context.Context, p plane, realm account.Realm, query string, limit int) ([]admin.UserSummary, error) {
	if realm != account.RealmAdmin {
		page, err := p.SearchUsers(ctx, admin.UserQuery{Query: query, Limit: limit})
		if err != nil {
			return nil, err
		}
		return page.Users, nil
	}
	l, err := onDatabase(p)
	if err != nil {
		return nil, err
	}
	found, err := l.app.Lifecycle.Find(ctx, realm, query, limit)
	if err != nil {
		return nil, err
	}
	users := make([]admin.UserSummary, len(found))
	for i, u := range found {
		users[i] = admin.SummaryOf(u)
	}
	return users, nil
}

func newUsersExportCmd(e *env) *cobra.Command {
	var f userFlags
	cmd := &cobra.Command{
		Use:   "export --user EMAIL|ID",
		Short: "Write everything held about an account as one JSON document (the player's own export)",
		RunE: planeRunE(e, func(cmd *cobra.Command, p plane, _ []string) error {
			r, err := parseRealmFlag(*f.realm)
			if err != nil {
				return err
			}
			doc, err := p.ExportUser(cmd.Context(), r, f.user)
			if err != nil {
				return err
			}
			return writeJSON(e.stdout, doc)
		}),
	}
	addUserFlags(cmd, &f, false)
	return cmd
}

func newUsersDeleteCmd(e *env) *cobra.Command {
	var f userFlags
	cmd := &cobra.Command{
		Use:   "delete --user EMAIL|ID --reason TEXT",
		Short: "Delete an account for good (administrators only this way, never the last admin)",
		RunE: planeRunE(e, func(cmd *cobra.Command, p plane, _ []string) error {
			r, err := parseRealmFlag(*f.realm)
			if err != nil {
				return err
			}
			ts, err := p.DeleteUser(cmd.Context(), r, f.user, strings.TrimSpace(f.reason))
			if err != nil {
				return flagNames(err)
			}
			fmt.Fprintf(e.stderr, "deleted %s\n", ts.ID)
			if ok, err := writeData(e.stdout, *f.output, ts); ok {
				return err
			}
			return e.table(*f.output, []string{"ID", "DELETED", "REASON"}, [][]string{{ts.ID.String(), ts.DeletedAt.Format(time.RFC3339), oneLine(ts.Reason)}})
		}),
	}
	addUserFlags(cmd, &f, true)
	return cmd
}

func newUsersSuspendCmd(e *env) *cobra.Command {
	var f userFlags
	var until string
	cmd := &cobra.Command{
		Use:   "suspend --user EMAIL|ID --reason TEXT [--until RFC3339|7d|24h]",
		Short: "Suspend an account: end its sessions and refuse sign-in until lifted or --until",
		RunE: planeRunE(e, func(cmd *cobra.Command, p plane, _ []string) error {
			r, err := parseRealmFlag(*f.realm)
			if err != nil {
				return err
			}
			end, err := parseUntil(until, time.Now())
			if err != nil {
				return withExit(ExitUsage, err)
			}
			s, err := p.Suspend(cmd.Context(), r, f.user, strings.TrimSpace(f.reason), end)
			if err != nil {
				return flagNames(err)
			}
			fmt.Fprintf(e.stderr, "suspended %s\n", s.UserID)
			if ok, err := writeData(e.stdout, *f.output, s); ok {
				return err
			}
			shown := "until lifted"
			if s.Until != nil {
				shown = s.Until.Format(time.RFC3339)
			}
			return e.table(*f.output, []string{"USER", "UNTIL", "REASON"}, [][]string{{s.UserID.String(), shown, oneLine(s.Reason)}})
		}),
	}
	cmd.Flags().StringVar(&until, "until", "", "when it lifts itself: an RFC 3339 time or a span from now (7d, 24h); default never")
	addUserFlags(cmd, &f, true)
	return cmd
}

// parseUntil reads an RFC 3339 time or a span forward from now: a Go
// duration (24h) or whole days (7d). Empty is no end.
func parseUntil(s string, now time.Time) (time.Time, error) {
	t, ok := parseTimeOrSpan(s, now, +1)
	if !ok {
		return time.Time{}, errors.New("--until must be an RFC 3339 time or a span such as 7d or 24h")
	}
	return t, nil
}

func newUsersUnsuspendCmd(e *env) *cobra.Command {
	var f userFlags
	cmd := &cobra.Command{
		Use:   "unsuspend --user EMAIL|ID --reason TEXT",
		Short: "Lift an account's suspension",
		RunE: planeRunE(e, func(cmd *cobra.Command, p plane, _ []string) error {
			r, err := parseRealmFlag(*f.realm)
			if err != nil {
				return err
			}
			had, err := p.Unsuspend(cmd.Context(), r, f.user, strings.TrimSpace(f.reason))
			if err != nil {
				return flagNames(err)
			}
			if !had {
				fmt.Fprintln(e.stderr, "the account was not suspended")
			}
			if ok, err := writeData(e.stdout, *f.output, map[string]bool{"lifted": had}); ok {
				return err
			}
			return e.table(*f.output, []string{"LIFTED"}, [][]string{{strconv.FormatBool(had)}})
		}),
	}
	addUserFlags(cmd, &f, true)
	return cmd
}
