package cli

import (
	"fmt"
	"regexp"

	"github.com/spf13/cobra"

	"github.com/towerdefence/platformctl/internal/admin"
	"github.com/towerdefence/platformctl/internal/app"
)

// openSupportApp is the preamble of every support command: it loads the
// command's settings, refuses a database that does not exist (a support
// command never creates one, nor a secret beside it) or has pending
// migrations (it never migrates), says which database it opened, and
// builds the services. The caller closes the App.
func openSupportApp(cmd *cobra.Command, e *env) (*app.App, error) {
	cfg, err := loadConfig(cmd, e)
	if err != nil {
		return nil, err
	}
	db, err := openDatabase(cmd, e, cfg, false)
	if err != nil {
		return nil, err
	}
	a, err := app.NewSupport(cmd.Context(), cfg, newLogger(cfg, e), e.build, db)
	if err != nil {
		db.Close()
		return nil, err
	}
	return a, nil
}

// actorPattern is what an operator may call themselves in the audit log.
var actorPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}$`)

// actorName is the value of --actor: checked as it is parsed, so a bad
// name is a usage error before anything runs.
type actorName string

func (a *actorName) String() string { return string(*a) }
func (a *actorName) Type() string   { return "NAME" }
func (a *actorName) Set(v string) error {
	if !actorPattern.MatchString(v) {
		return fmt.Errorf("must be 1-64 letters, digits and . _ @ + - (e.g. alice or alice@example.com), got %q", v)
	}
	*a = actorName(v)
	return nil
}

// addActorFlag gives a support command group --actor, the name the audit
// log records for the person at the keyboard.
func addActorFlag(cmd *cobra.Command, e *env) {
	cmd.PersistentFlags().Var(&e.actor, "actor", "no longer recorded: the audit log names break-glass:<operating-system user>, or your administrator account after platformctl login")
	cmd.PersistentFlags().MarkHidden("actor") //nolint:errcheck // the flag exists
}

// supportActor names the person at the keyboard of a command that works
// on the database directly: break-glass and the operating-system user. A
// name given with --actor or PLATFORM_ACTOR is not recorded — the audit
// trail names administrators by their account (platformctl login).
func supportActor(e *env) string {
	if e.actor != "" || e.getenv("PLATFORM_ACTOR") != "" {
		fmt.Fprintln(e.stderr, "warning: --actor and PLATFORM_ACTOR are not recorded; sign in with platformctl login to act under your administrator account")
	}
	return admin.BreakGlassActor(osUser(e))
}

// supportRunE is the preamble every support command shares: it checks
// --output (when the command has one), opens the services with
// openSupportApp, runs the command's own part and closes them.
func supportRunE(e *env, run func(cmd *cobra.Command, a *app.App, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if f := cmd.Flags().Lookup("output"); f != nil {
			if err := checkOutput(f.Value.String()); err != nil {
				return err
			}
		}
		a, err := openSupportApp(cmd, e)
		if err != nil {
			return err
		}
		defer a.Close()
		return run(cmd, a, args)
	}
}
