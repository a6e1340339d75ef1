package cli

import (
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/towerdefence/platformctl/internal/config"
)

// bindSettings registers a flag for every configuration setting on cmd,
// each naming its environment variable in the help text.
func bindSettings(cmd *cobra.Command) {
	for _, s := range config.Settings() {
		usage := s.Usage + " [$" + s.Env + "]"
		if s.Default != "" && !s.Bool {
			usage += " (default " + s.Default + ")"
		}
		if s.Bool {
			cmd.Flags().Bool(s.Flag, false, usage)
			continue
		}
		cmd.Flags().String(s.Flag, "", usage)
	}
}

// loadConfig builds the Config from defaults, environment and the flags the
// user set on cmd.
func loadConfig(cmd *cobra.Command, e *env) (*config.Config, error) {
	flags := map[string]string{}
	for _, s := range config.Settings() {
		f := cmd.Flags().Lookup(s.Flag)
		if f != nil && f.Changed {
			flags[s.Flag] = f.Value.String()
		}
	}
	return config.Load(e.getenv, flags)
}

// newLogger writes structured logs to stderr in the configured format.
func newLogger(cfg *config.Config, e *env) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if strings.EqualFold(cfg.LogFormat, "json") {
		return slog.New(slog.NewJSONHandler(e.stderr, opts))
	}
	return slog.New(slog.NewTextHandler(e.stderr, opts))
}
