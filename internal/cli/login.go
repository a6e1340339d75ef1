package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/towerdefence/platformctl/internal/admin"
)

func newLoginCmd(e *env) *cobra.Command {
	var server, email string
	cmd := &cobra.Command{
		Use:   "login --server URL --email EMAIL",
		Short: "Sign in to a server as an administrator; support commands then work over its API",
		Long: "Sign in to the admin realm of a running serve. The password is asked for on a terminal, or\n" +
			"read from the first line of stdin otherwise. The session is kept in your configuration\n" +
			"directory (platformctl/session.json, readable by you only); from then on the support commands\n" +
			"(users, sessions, audit, mail, liveops, admin set-role) call the server's /api/admin as you,\n" +
			"and the audit trail records your administrator account.",
		Example: "  platformctl login --server https://play.example.com --email ada@example.com",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			u, err := url.Parse(server)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return withExit(ExitUsage, fmt.Errorf("--server %q must be an http(s) URL such as https://play.example.com", server))
			}
			lines := bufio.NewReader(io.LimitReader(e.stdin, 8192)) // the password, then a code
			password, err := readLoginPassword(e, lines)
			if err != nil {
				return withExit(ExitUsage, err)
			}
			s, secondFactor, err := signIn(cmd.Context(), u.Scheme+"://"+u.Host, strings.TrimSpace(email), password)
			if err != nil {
				return err
			}
			if secondFactor {
				code, err := readLoginCode(e, lines)
				if err != nil {
					return withExit(ExitUsage, err)
				}
				if err := newRemote(s).verifySecondFactor(cmd.Context(), code); err != nil {
					return err
				}
			}
			me, err := newRemote(s).Me(cmd.Context())
			if err != nil {
				return err
			}
			path, err := saveSession(e, s)
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stderr, "signed in to %s as %s (%s); session saved in %s\n", s.Server, me.Email, me.Role, path)
			return nil
		},
	}
	cmd.Flags().StringVar(&server, "server", "", "the server's base URL")
	cmd.Flags().StringVar(&email, "email", "", "your administrator email")
	cmd.MarkFlagRequired("server") //nolint:errcheck // the flag exists
	cmd.MarkFlagRequired("email")  //nolint:errcheck // the flag exists
	return cmd
}

// readLoginPassword asks once on a terminal, with echo off, or reads the
// first line of stdin.
func readLoginPassword(e *env, lines *bufio.Reader) (string, error) {
	if f, ok := e.stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprint(e.stderr, "Password: ")
		pw, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(e.stderr)
		if err != nil {
			return "", fmt.Errorf("read the password: %w", err)
		}
		return string(pw), nil
	}
	pw, err := nextLine(lines)
	if err != nil {
		return "", fmt.Errorf("read the password from stdin: %w", err)
	}
	return pw, nil
}

// readLoginCode asks for the second factor of an account that holds one:
// the authenticator app's code or a backup code, on the terminal or as
// the next line of stdin.
func readLoginCode(e *env, lines *bufio.Reader) (string, error) {
	fmt.Fprint(e.stderr, "Code from your authenticator app (or a backup code): ")
	code, err := nextLine(lines)
	if err != nil {
		return "", fmt.Errorf("read the second factor's code: %w", err)
	}
	return strings.TrimSpace(code), nil
}

// nextLine returns the next non-empty line of r.
func nextLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	if line = strings.TrimRight(line, "\r\n"); line == "" {
		return "", errors.New("nothing on stdin")
	}
	return line, nil
}

func newLogoutCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "logout",
		Short: "End the saved administrator session and forget it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := loadSession(e)
			if err != nil {
				return err
			}
			path, err := sessionPath(e)
			if err != nil {
				return err
			}
			if s == nil {
				fmt.Fprintln(e.stderr, "not signed in")
				return nil
			}
			if err := newRemote(s).signOut(cmd.Context()); err != nil {
				fmt.Fprintf(e.stderr, "warning: the server did not end the session: %s\n", errorMessage(err))
			}
			if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("remove the saved session: %w", err)
			}
			fmt.Fprintf(e.stderr, "signed out of %s\n", s.Server)
			return nil
		},
	}
}

func newWhoamiCmd(e *env) *cobra.Command {
	var output *string
	cmd := &cobra.Command{
		Use:   "whoami",
		Short: "Show the administrator signed in with platformctl login",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(*output); err != nil {
				return err
			}
			s, err := loadSession(e)
			if err != nil {
				return err
			}
			if s == nil {
				return withExit(ExitRefused, fmt.Errorf("not signed in; without a login the support commands work on the database as %s", admin.BreakGlassActor(osUser(e))))
			}
			me, err := newRemote(s).Me(cmd.Context())
			if err != nil {
				return err
			}
			if ok, err := writeData(e.stdout, *output, map[string]any{"server": s.Server, "admin": me}); ok {
				return err
			}
			perms := make([]string, len(me.Permissions))
			for i, p := range me.Permissions {
				perms[i] = string(p)
			}
			return e.table(*output, []string{"SERVER", "ID", "EMAIL", "ROLE", "PERMISSIONS"},
				[][]string{{s.Server, me.ID.String(), me.Email, string(me.Role), strings.Join(perms, " ")}})
		},
	}
	output = addOutputFlag(cmd)
	return cmd
}

func newUsersSearchCmd(e *env) *cobra.Command {
	var output *string
	var limit int
	var cursor string
	cmd := &cobra.Command{
		Use:   "search QUERY",
		Short: "Find players by id, email prefix (with @ or email:) or nickname prefix",
		Args:  cobra.ExactArgs(1),
		RunE: planeRunE(e, func(cmd *cobra.Command, p plane, args []string) error {
			page, err := p.SearchUsers(cmd.Context(), admin.UserQuery{Query: args[0], Cursor: cursor, Limit: limit})
			if err != nil {
				return err
			}
			if page.NextCursor != nil {
				fmt.Fprintf(e.stderr, "more: --cursor %s\n", *page.NextCursor)
			}
			if ok, err := writeData(e.stdout, *output, page); ok {
				return err
			}
			v := e.newView(*output)
			rows := make([][]string, len(page.Users))
			for i, u := range page.Users {
				rows[i] = []string{u.ID.String(), u.Email, u.Nickname, u.Name, fmt.Sprint(u.EmailVerified), v.when(u.CreatedAt)}
			}
			return v.print(e, []string{"ID", "EMAIL", "NICKNAME", "NAME", "VERIFIED", "CREATED"}, rows)
		}),
	}
	cmd.Flags().IntVar(&limit, "limit", admin.DefaultPageSize, "at most this many players (1-100)")
	cmd.Flags().StringVar(&cursor, "cursor", "", "the next page, as the previous page printed")
	output = addOutputFlag(cmd)
	bindSettings(cmd)
	return cmd
}

func newUsersDetailCmd(e *env) *cobra.Command {
	var output *string
	cmd := &cobra.Command{
		Use:   "detail EMAIL|ID",
		Short: "Show a player's profile, live sessions and counts (audited)",
		Args:  cobra.ExactArgs(1),
		RunE: planeRunE(e, func(cmd *cobra.Command, p plane, args []string) error {
			d, err := p.User(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if ok, err := writeData(e.stdout, *output, d); ok {
				return err
			}
			v := e.newView(*output)
			u, c := d.User, d.Counts
			return v.print(e, []string{"FIELD", "VALUE"}, [][]string{
				{"id", u.ID.String()}, {"email", u.Email}, {"name", u.Name}, {"nickname", u.Nickname},
				{"verified", fmt.Sprint(u.EmailVerified)}, {"created", v.when(u.CreatedAt)},
				{"sessions", fmt.Sprint(len(d.Sessions))}, {"decks", fmt.Sprint(c.Decks)},
				{"friends", fmt.Sprint(c.Friends)}, {"requests", fmt.Sprintf("%d in, %d out", c.IncomingRequests, c.OutgoingRequests)},
				{"blocked", fmt.Sprint(c.Blocked)},
			})
		}),
	}
	output = addOutputFlag(cmd)
	bindSettings(cmd)
	return cmd
}
