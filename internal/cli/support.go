package cli

import (
	"os/user"

	"github.com/spf13/cobra"

	"github.com/towerdefence/platformctl/internal/app"
)

// openSupportApp is the preamble of every support command: it loads the
// command's settings, refuses a database that does not exist (a support
// command never creates one, nor a secret beside it), says which database
// it opened, and builds the services. The caller closes the App.
func openSupportApp(cmd *cobra.Command, e *env) (*app.App, error) {
	cfg, err := loadConfig(cmd, e)
	if err != nil {
		return nil, err
	}
	db, err := openDatabase(cmd, e, cfg, false)
	if err != nil {
		return nil, err
	}
	db.Close()
	return app.New(cmd.Context(), cfg, newLogger(cfg, e), e.build)
}

// supportActor names the person at the keyboard in the audit log:
// "os:" and the operating-system user.
func supportActor(e *env) string {
	name := e.getenv("USER")
	if name == "" {
		if u, err := user.Current(); err == nil {
			name = u.Username
		}
	}
	if name == "" {
		name = "unknown"
	}
	return "os:" + name
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
