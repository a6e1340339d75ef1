// Package cli is the command line of platformctl: cobra commands that parse
// flags, call one service and render the result, people-friendly on a
// terminal and machine-friendly with --output json.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/towerdefence/platformctl/internal/app"
	"github.com/towerdefence/platformctl/internal/config"
	"github.com/towerdefence/platformctl/internal/platform"
)

// Exit codes.
const (
	ExitOK          = 0
	ExitFailure     = 1 // the command ran and failed
	ExitUsage       = 2 // bad flags, arguments, configuration or input
	ExitNotFound    = 3 // the thing named does not exist
	ExitRefused     = 4 // a rule refused the action (forbidden, conflict)
	ExitUnavailable = 5 // a dependency (the database, SMTP) is down
)

// exitError carries a specific exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// withExit makes err end the process with code.
func withExit(code int, err error) error { return &exitError{code: code, err: err} }

// env is what a command needs from its surroundings; tests supply their own.
type env struct {
	build  platform.Build
	getenv func(string) string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	actor  actorName // --actor of the support commands
}

// Run executes the command line args and returns the process exit code.
func Run(ctx context.Context, build platform.Build, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{build: build, getenv: getenv, stdin: stdin, stdout: stdout, stderr: stderr}
	root := newRootCmd(e)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	code := exitCode(err)
	var problems config.Errors
	if errors.As(err, &problems) {
		for _, p := range problems { // every configuration problem, one per line
			fmt.Fprintln(stderr, "platformctl: configuration: "+oneLine(p.Error()))
		}
		return code
	}
	fmt.Fprintln(stderr, "platformctl: "+oneLine(errorMessage(err)))
	return code
}

func newRootCmd(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:   "platformctl",
		Short: "Account and player platform service of the tower-defence game",
		Long: "platformctl serves the platform's HTTP API (serve), migrates its database (migrate),\n" +
			"generates and analyses maps for level designers (map), and gives operators and support\n" +
			"staff their tools.",
		Version:       fmt.Sprintf("%s (commit %s, built %s)", e.build.Version, e.build.Commit, e.build.Date),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("platformctl {{.Version}}\n")
	root.SetUsageTemplate(usageTemplate)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return withExit(ExitUsage, err)
	})
	root.AddCommand(
		newServeCmd(e),
		newMigrateCmd(e),
		newVersionCmd(e),
		newSeedCmd(e),
		newTokenCmd(e),
		newMailCmd(e),
		newAdminCmd(e),
		newSessionsCmd(e),
		newUsersCmd(e),
		newAuditCmd(e),
		newLiveOpsCmd(e),
		newLoginCmd(e),
		newLogoutCmd(e),
		newWhoamiCmd(e),
		newMapCmd(e),
		newPruneCmd(e),
		newBackupCmd(e),
		newRestoreCmd(e),
		newSecretsCmd(e),
		newFactorsCmd(e),
	)
	root.InitDefaultCompletionCmd() // added now, not at Execute, so that strictArgs covers it
	strictArgs(root)
	return root
}

// strictArgs makes every command refuse what it does not know: a parent
// command given an unknown subcommand, and a command that declares no
// positional arguments given some, fail with a usage error (exit 2)
// instead of printing help and succeeding.
func strictArgs(cmd *cobra.Command) {
	for _, c := range cmd.Commands() {
		strictArgs(c)
	}
	cmd.SuggestionsMinimumDistance = 2
	if cmd.HasSubCommands() && cmd.RunE == nil && cmd.Run == nil {
		cmd.Args = unknownSubcommand
		cmd.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
		return
	}
	if cmd.Args == nil {
		cmd.Args = cobra.NoArgs
	}
}

// unknownSubcommand rejects any argument of a parent command, naming the
// closest subcommands.
func unknownSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "; did you mean " + strings.Join(quoteAll(s), " or ") + "?"
	} else {
		msg += "; run '" + cmd.CommandPath() + " --help' for its commands"
	}
	return withExit(ExitUsage, errors.New(msg))
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}

func exitCode(err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	var ce *config.Error
	if errors.As(err, &ce) {
		return ExitUsage
	}
	var pm *app.PendingMigrationsError
	if errors.As(err, &pm) {
		return ExitFailure
	}
	if pe, ok := platform.As(err); ok {
		switch pe.Kind {
		case platform.KindInvalid:
			return ExitUsage
		case platform.KindNotFound:
			return ExitNotFound
		case platform.KindForbidden, platform.KindUnauthenticated, platform.KindConflict,
			platform.KindUnprocessable, platform.KindRateLimited:
			return ExitRefused
		case platform.KindUnavailable:
			return ExitUnavailable
		}
	}
	if isCobraUsageError(err) {
		return ExitUsage
	}
	return ExitFailure
}

// isCobraUsageError recognises cobra's argument and command errors, which
// it returns as plain errors.
func isCobraUsageError(err error) bool {
	msg := err.Error()
	for _, prefix := range []string{"unknown command", "accepts ", "requires at least", "requires at most", "invalid argument", "unknown flag", "unknown shorthand flag", "required flag", "flag needs an argument", "if any flags in the group", "at least one of the flags in the group"} {
		if strings.HasPrefix(msg, prefix) {
			return true
		}
	}
	return false
}

func errorMessage(err error) string {
	if pe, ok := platform.As(err); ok && pe.Kind != platform.KindInternal {
		msg := pe.Message + " (" + pe.Code + ")"
		if pe.Kind == platform.KindUnavailable && pe.Err != nil {
			msg += ": " + pe.Err.Error() // operators need to know which dependency and why
		}
		return msg
	}
	var ce *config.Error
	if errors.As(err, &ce) {
		return "configuration: " + ce.Error()
	}
	return err.Error()
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
