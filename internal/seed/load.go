// Package seed loads the fixtures — content catalog, starter decks,
// live-ops defaults and the development world — validates all of them
// together and applies them to the database idempotently.
package seed

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/towerdefence/platformctl/internal/liveops"
	"github.com/towerdefence/platformctl/internal/matchmaking"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/player"
)

// The files of a fixture directory.
const (
	FileCatalog      = "content/catalog.yaml"
	FileStarterDecks = "content/starter-decks.yaml"
	FileLiveOps      = "liveops/defaults.yaml"
	FileWorld        = "world/development.yaml" // optional
)

var knownFiles = []string{FileCatalog, FileStarterDecks, FileLiveOps, FileWorld}

// Set is a loaded fixture directory.
type Set struct {
	Content player.Content
	LiveOps liveops.Config
	// World is nil when the directory has no development world.
	World *World
}

// catalogFile and starterFile split the content between two files.
type catalogFile struct {
	Rules  player.Rules   `json:"rules"`
	Towers []player.Tower `json:"towers"`
	Traps  []player.Trap  `json:"traps"`
	Units  []player.Unit  `json:"units"`
	Cards  []player.Card  `json:"cards"`
}

type starterFile struct {
	StarterDecks []player.StarterDeck `json:"starterDecks"`
}

// Load reads the fixtures in fsys. Unknown or misspelt fields, duplicate
// keys, missing files and stray YAML files are problems; so is anything
// that does not parse. Validate checks the content itself.
func Load(fsys fs.FS) (*Set, []platform.Problem) {
	var ps []platform.Problem
	set := &Set{}
	var cat catalogFile
	var starters starterFile
	read := func(name string, dst any, required bool) bool {
		raw, err := fs.ReadFile(fsys, name)
		if errors.Is(err, fs.ErrNotExist) {
			if required {
				ps = append(ps, platform.Problem{File: name, Message: "is missing"})
			}
			return false
		}
		if err != nil {
			ps = append(ps, platform.Problem{File: name, Message: err.Error()})
			return false
		}
		if err := yaml.UnmarshalStrict(raw, dst); err != nil {
			ps = append(ps, platform.Problem{File: name, Message: strings.TrimPrefix(err.Error(), "error unmarshaling JSON: while decoding JSON: ")})
			return false
		}
		return true
	}
	read(FileCatalog, &cat, true)
	read(FileStarterDecks, &starters, true)
	read(FileLiveOps, &set.LiveOps, true)
	var world World
	if read(FileWorld, &world, false) {
		set.World = &world
	}
	set.Content = player.Content{Rules: cat.Rules, Towers: cat.Towers, Traps: cat.Traps, Units: cat.Units,
		Cards: cat.Cards, StarterDecks: starters.StarterDecks}

	// A fixture file under another name would be silently ignored; say so.
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		ext := path.Ext(p)
		if !d.IsDir() && (ext == ".yaml" || ext == ".yml" || ext == ".json") && !slices.Contains(knownFiles, p) {
			ps = append(ps, platform.Problem{File: p, Message: fmt.Sprintf("is not a fixture file this version reads (%s)", strings.Join(knownFiles, ", "))})
		}
		return nil
	})
	if err != nil {
		ps = append(ps, platform.Problem{File: ".", Message: err.Error()})
	}
	return set, ps
}

// fileOf names the file a content problem path comes from.
func fileOf(contentPath string) string {
	if strings.HasPrefix(contentPath, "starterDecks") {
		return FileStarterDecks
	}
	return FileCatalog
}

// Validate returns every problem of the set: content, live-ops and world
// together, so one run lists everything to fix. queues are the queue
// preset ids that live-ops events and world lobbies may name.
func (s *Set) Validate(queues []matchmaking.Queue) []platform.Problem {
	var ps []platform.Problem
	for _, p := range s.Content.Validate() {
		ps = append(ps, platform.Problem{File: fileOf(p.Path), Path: p.Path, Message: p.Message})
	}
	var ids []string
	for _, q := range queues {
		ids = append(ids, q.ID)
	}
	for _, p := range s.LiveOps.Validate(ids) {
		ps = append(ps, platform.Problem{File: FileLiveOps, Path: p.Path, Message: p.Message})
	}
	if s.World != nil {
		for _, p := range s.World.validate(&s.Content, queues) {
			ps = append(ps, platform.Problem{File: FileWorld, Path: p.Path, Message: p.Message})
		}
	}
	return ps
}
