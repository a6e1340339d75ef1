package cli

import (
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/towerdefence/platformctl/internal/config"
	"github.com/towerdefence/platformctl/internal/store"
)

// settingsAnnotation records on a command which setting groups it takes.
const settingsAnnotation = "platformctl/settings"

// settingValue is a typed flag of one setting: it checks its value as it
// is parsed (so --friend-limit=x is a usage error) and names its type in
// --help.
type settingValue struct {
	s     config.Setting
	value string
}

func (v *settingValue) String() string { return v.value }
func (v *settingValue) Type() string   { return v.s.TypeName() }
func (v *settingValue) Set(s string) error {
	if err := v.s.Parse(s); err != nil {
		return err
	}
	v.value = s
	return nil
}

// bindSettings registers a typed flag for each setting of groups on cmd,
// each naming its environment variable in the help text. Without groups it
// binds the database and services settings.
func bindSettings(cmd *cobra.Command, groups ...config.Group) {
	if len(groups) == 0 {
		groups = []config.Group{config.GroupDatabase, config.GroupServices}
	}
	bindFlags(cmd, groups, func(config.Setting) bool { return true })
}

// supportSettings are the settings every support command reads: where the
// database is, the environment, the secret its tokens are keyed with, and
// how it logs.
var supportSettings = []string{"env", "database-url", "data-dir", "secret", "log-level", "log-format"}

// bindSupportSettings gives a support command flags for supportSettings
// and for the settings named in extra, the ones its own work reads. The
// command still takes every database and services setting from the
// environment, as before; it only shows no flag that would change nothing.
func bindSupportSettings(cmd *cobra.Command, extra ...string) {
	bindFlags(cmd, []config.Group{config.GroupDatabase, config.GroupServices}, func(s config.Setting) bool {
		return slices.Contains(supportSettings, s.Flag) || slices.Contains(extra, s.Flag)
	})
}

// bindFlags registers the flags of the settings of groups that show
// accepts, and records the groups the command loads.
func bindFlags(cmd *cobra.Command, groups []config.Group, show func(config.Setting) bool) {
	for _, s := range config.Settings() {
		if !s.In(groups) || !show(s) {
			continue
		}
		usage := s.Usage + " [$" + s.Env + "]"
		if s.Bool {
			cmd.Flags().Bool(s.Flag, false, usage)
		} else {
			cmd.Flags().Var(&settingValue{s: s}, s.Flag, usage)
			cmd.Flags().Lookup(s.Flag).DefValue = s.Default
		}
		cmd.Flags().SetAnnotation(s.Flag, flagSection, []string{sectionOf(s.Flag)})
	}
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	names := make([]string, len(groups))
	for i, g := range groups {
		names[i] = g.String()
	}
	cmd.Annotations[settingsAnnotation] = strings.Join(names, ",")
	cmd.Flags().BoolP("verbose", "v", false, "say which database and settings sources the command uses")
}

func boundGroups(cmd *cobra.Command) []config.Group {
	var groups []config.Group
	for _, g := range config.GroupsAll {
		for _, name := range strings.Split(cmd.Annotations[settingsAnnotation], ",") {
			if name == g.String() {
				groups = append(groups, g)
			}
		}
	}
	return groups
}

// loadConfig builds the Config from defaults, environment and the flags the
// user set on cmd, for the setting groups cmd takes; it warns about
// PLATFORM_* variables that are no setting at all.
func loadConfig(cmd *cobra.Command, e *env) (*config.Config, error) {
	flags := map[string]string{}
	for _, s := range config.Settings() {
		f := cmd.Flags().Lookup(s.Flag)
		if f != nil && f.Changed {
			flags[s.Flag] = f.Value.String()
		}
	}
	for _, w := range config.UnknownVariables(os.Environ(), e.getenv) {
		fmt.Fprintln(e.stderr, "platformctl: warning: "+w)
	}
	return config.LoadGroups(e.getenv, flags, boundGroups(cmd))
}

// openDatabase opens the configured database. Only commands that create
// one (migrate up, serve) pass create; the others refuse a database that
// does not exist, naming where its URL came from. With --verbose, or on a
// terminal, it says which database it opened.
func openDatabase(cmd *cobra.Command, e *env, cfg *config.Config, create bool) (*store.DB, error) {
	open := store.OpenExisting
	if create {
		open = store.Open
	}
	db, err := open(cmd.Context(), cfg.DatabaseURL)
	if err != nil {
		return nil, explainMissing(err, cfg)
	}
	if verbose, _ := cmd.Flags().GetBool("verbose"); verbose || isTerminal(e.stderr) {
		fmt.Fprintf(e.stderr, "using database %s (from %s)\n", redactURL(cfg.DatabaseURL), cfg.DatabaseSource())
	}
	return db, nil
}

// explainMissing turns a missing database into a usage error that says
// where the URL came from and how to create the database.
func explainMissing(err error, cfg *config.Config) error {
	missing, ok := err.(*store.MissingDatabaseError)
	if !ok {
		return err
	}
	create := "create it with `platformctl migrate up`"
	if missing.Dialect == store.Postgres {
		create = "create it (CREATE DATABASE) and run `platformctl migrate up`"
	}
	return withExit(ExitUsage, fmt.Errorf("%w (database URL from %s); point PLATFORM_DATABASE_URL or --database-url at an existing database, or %s",
		missing, cfg.DatabaseSource(), create))
}

// redactURL hides a password in a database URL.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	return u.Redacted()
}

// jsonLogs reports whether the log is in JSON rather than text.
func jsonLogs(cfg *config.Config) bool { return strings.EqualFold(cfg.LogFormat, "json") }

// newLogger writes structured logs to stderr in the configured format.
func newLogger(cfg *config.Config, e *env) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if jsonLogs(cfg) {
		return slog.New(slog.NewJSONHandler(e.stderr, opts))
	}
	return slog.New(slog.NewTextHandler(e.stderr, opts))
}
