package cli

import (
	"strings"
	"unicode"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// flagSection names, on a setting's flag, the --help section that lists it;
// a command's own flags carry none.
const flagSection = "platformctl/section"

const (
	sectionDatabase = "database"
	sectionSettings = "settings"
)

// sectionOf is where --help lists the flag of a setting: where the
// database is and how its pool is kept under "Database flags", the other
// settings under "Settings".
func sectionOf(flag string) string {
	if flag == "database-url" || flag == "data-dir" || strings.HasPrefix(flag, "db-") {
		return sectionDatabase
	}
	return sectionSettings
}

func init() {
	cobra.AddTemplateFunc("sectionFlags", sectionFlags)
}

// sectionFlags renders the visible local flags of cmd that --help lists in
// section ("" for the command's own flags).
func sectionFlags(cmd *cobra.Command, section string) string {
	fs := pflag.NewFlagSet(cmd.Name(), pflag.ContinueOnError)
	cmd.LocalFlags().VisitAll(func(f *pflag.Flag) {
		var in string
		if s := f.Annotations[flagSection]; len(s) > 0 {
			in = s[0]
		}
		if !f.Hidden && in == section {
			fs.AddFlag(f)
		}
	})
	return strings.TrimRightFunc(fs.FlagUsages(), unicode.IsSpace)
}

// usageTemplate is cobra's, with the local flags in three sections: the
// command's own, the database's, and the other settings.
const usageTemplate = `Usage:{{if .Runnable}}
  {{.UseLine}}{{end}}{{if .HasAvailableSubCommands}}
  {{.CommandPath}} [command]{{end}}{{if gt (len .Aliases) 0}}

Aliases:
  {{.NameAndAliases}}{{end}}{{if .HasExample}}

Examples:
{{.Example}}{{end}}{{if .HasAvailableSubCommands}}{{$cmds := .Commands}}{{if eq (len .Groups) 0}}

Available Commands:{{range $cmds}}{{if (or .IsAvailableCommand (eq .Name "help"))}}
  {{rpad .Name .NamePadding }} {{.Short}}{{end}}{{end}}{{else}}{{range $group := .Groups}}

{{.Title}}{{range $cmds}}{{if (and (eq .GroupID $group.ID) (or .IsAvailableCommand (eq .Name "help")))}}
  {{rpad .Name .NamePadding }} {{.Short}}{{end}}{{end}}{{end}}{{if not .AllChildCommandsHaveGroup}}

Additional Commands:{{range $cmds}}{{if (and (eq .GroupID "") (or .IsAvailableCommand (eq .Name "help")))}}
  {{rpad .Name .NamePadding }} {{.Short}}{{end}}{{end}}{{end}}{{end}}{{end}}{{if .HasAvailableLocalFlags}}{{with sectionFlags $ ""}}

Flags:
{{.}}{{end}}{{with sectionFlags $ "database"}}

Database flags:
{{.}}{{end}}{{with sectionFlags $ "settings"}}

Settings (each also a PLATFORM_* variable):
{{.}}{{end}}{{end}}{{if .HasAvailableInheritedFlags}}

Global Flags:
{{.InheritedFlags.FlagUsages | trimTrailingWhitespaces}}{{end}}{{if .HasHelpSubCommands}}

Additional help topics:{{range .Commands}}{{if .IsAdditionalHelpTopicCommand}}
  {{rpad .CommandPath .CommandPathPadding}} {{.Short}}{{end}}{{end}}{{end}}{{if .HasAvailableSubCommands}}

Use "{{.CommandPath}} [command] --help" for more information about a command.{{end}}
`
