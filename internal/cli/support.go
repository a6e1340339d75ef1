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
