package platform

import "runtime/debug"

// Build identifies the running binary. The values are injected at link
// time (-ldflags "-X main.version=…") and passed down from main.
type Build struct {
	Version string `json:"version"`
	Commit  string `json:"commit"`
	Date    string `json:"buildTime"`
}

// WithBuildInfo returns b with the fields the linker left unset ("",
// "dev", "none", "unknown") taken from the build information Go embeds in
// every binary: the module version of a `go install …@v1.2.3`, and the
// commit and its time (vcs.revision, vcs.time) of a build in a checkout,
// marked "-dirty" when the checkout had changes.
func (b Build) WithBuildInfo(info *debug.BuildInfo) Build {
	if info == nil {
		return b
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	if unset(b.Version) && info.Main.Version != "" && info.Main.Version != "(devel)" {
		b.Version = info.Main.Version
	}
	if rev := settings["vcs.revision"]; unset(b.Commit) && rev != "" {
		if settings["vcs.modified"] == "true" {
			rev += "-dirty"
		}
		b.Commit = rev
	}
	if t := settings["vcs.time"]; unset(b.Date) && t != "" {
		b.Date = t
	}
	return b
}

func unset(s string) bool { return s == "" || s == "dev" || s == "none" || s == "unknown" }
