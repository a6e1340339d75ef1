package config

import (
	"flag"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/configuration.md from the settings registry")

const referencePath = "../../docs/configuration.md"

// docs/configuration.md is generated from the settings registry; this test
// fails when it is stale. Regenerate it with
// `go test ./internal/config -run TestConfigurationReference -update`.
func TestConfigurationReference(t *testing.T) {
	want := reference()
	if *update {
		if err := os.WriteFile(referencePath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(referencePath)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatal("docs/configuration.md is stale: run go test ./internal/config -run TestConfigurationReference -update")
	}
}

func reference() string {
	var b strings.Builder
	b.WriteString(referenceIntro)
	for _, g := range []Group{GroupDatabase, GroupServices, GroupServer} {
		b.WriteString("\n## " + groupTitles[g] + "\n\n" + groupNotes[g] + "\n\n")
		b.WriteString("| Variable | Flag | Type | Default | Meaning |\n|---|---|---|---|---|\n")
		for _, s := range Settings() {
			if s.Group != g {
				continue
			}
			def := s.Default
			if def == "" {
				def = "—"
			} else {
				def = "`" + def + "`"
			}
			b.WriteString("| `" + s.Env + "` | `--" + s.Flag + "` | " + s.TypeName() + " | " + def + " | " +
				strings.ReplaceAll(s.Usage, "|", `\|`) + " |\n")
		}
	}
	return b.String()
}

var groupTitles = map[Group]string{
	GroupDatabase: "Database settings",
	GroupServices: "Service settings",
	GroupServer:   "Server settings",
}

var groupNotes = map[Group]string{
	GroupDatabase: "Taken by every command that opens the database: `serve`, `migrate`, `seed` and the support commands.",
	GroupServices: "Taken by `serve`, `seed` and the support commands (`sessions`, `token`, `audit`, `admin`, `mail`, `liveops`): what their services need to sign links, hash passwords and write mail.",
	GroupServer:   "Taken by `serve` only. A migration or support job ignores these variables, so a bad value here never stops a deploy's `migrate up`.",
}

const referenceIntro = `# Configuration reference

<!-- Generated from internal/config/settings.go by
     go test ./internal/config -run TestConfigurationReference -update
     Do not edit by hand. -->

Every setting has a ` + "`PLATFORM_*`" + ` environment variable and a flag. Flags win over the
environment, which wins over the defaults. Each command takes only the settings it uses
(the groups below); ` + "`--help`" + ` of a command lists exactly its flags, each with its type.

- **Errors come together.** Every problem in the settings a command takes is reported at once,
  one line each (` + "`platformctl: configuration: PLATFORM_X: …`" + `), with exit code 2.
- **Misspelt variables are reported.** A ` + "`PLATFORM_*`" + ` variable that names no setting gets a warning
  on stderr with the closest setting's name; it is otherwise ignored.
- **Typed flags.** A flag of type duration takes Go durations (` + "`30s`" + `, ` + "`1h`" + `), int/uint whole
  numbers, list a comma-separated list, rate ` + "`N/DURATION`" + ` or ` + "`off`" + `. A bad value is a usage error.
- **Databases are not created by accident.** Only ` + "`serve`" + ` and ` + "`migrate up`" + ` create a missing SQLite
  database file (and its directory). No command creates a PostgreSQL database: ` + "`serve`" + ` and
  ` + "`migrate up`" + ` too refuse one that does not exist (create it with ` + "`CREATE DATABASE`" + `, then run
  ` + "`migrate up`" + `). A refused database is exit 2 with an error naming where the URL came from (a flag,
  ` + "`PLATFORM_DATABASE_URL`" + `, or the default in ` + "`PLATFORM_DATA_DIR`" + `). With ` + "`--verbose`" + ` (or on a terminal) they say which database they opened.
- **The development secret.** Without ` + "`PLATFORM_SECRET`" + ` (development only), the secret is generated once
  and kept in a file named ` + "`secret`" + ` next to the SQLite database file, or in ` + "`PLATFORM_DATA_DIR`" + ` when that is
  set explicitly or the database is PostgreSQL. So a support command pointed at the database ` + "`serve`" + `
  uses finds the same secret from any working directory, and its links are valid on that server.
  Production requires ` + "`PLATFORM_SECRET`" + `.
`
