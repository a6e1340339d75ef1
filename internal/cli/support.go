package cli

import (
	"os/user"

	"github.com/spf13/cobra"

	"github.com/towerdefence/platformctl/internal/app"
)

// openSupportApp builds the services for a support command from its
// settings. The caller closes the App.
func openSupportApp(cmd *cobra.Command, e *env) (*app.App, error) {
	cfg, err := loadConfig(cmd, e)
	if err != nil {
		return nil, err
	}
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
