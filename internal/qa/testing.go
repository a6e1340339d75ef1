package qa

import (
	"cmp"
	"context"
	"fmt"
	"sync"

	"github.com/towerdefence/platformctl/internal/gamemap"
	"github.com/towerdefence/platformctl/internal/liveops"
	"github.com/towerdefence/platformctl/internal/platform"
)

// Tool is a testing aid QA can use, and whether this server offers it.
type Tool struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	// Kind is "route" (Method and Path are set) or "command" (Command is set).
	Kind    string `json:"kind"`
	Method  string `json:"method,omitempty"`
	Path    string `json:"path,omitempty"`
	Command string `json:"command,omitempty"`
	Enabled bool   `json:"enabled"`
	// EnabledBy names the setting or condition that switches the tool.
	EnabledBy string `json:"enabledBy"`
}

// ToolSwitches are the facts that decide which tools are enabled.
type ToolSwitches struct {
	// TestingTools is config.TestingTools (PLATFORM_TESTING_TOOLS).
	TestingTools bool
	// MailLog is true when mail goes to the server log, links included,
	// instead of SMTP (development without PLATFORM_SMTP_URL).
	MailLog bool
}

// Tools lists the testing tools of this build. Commands are always
// available to whoever can run the binary against the database; routes
// follow PLATFORM_TESTING_TOOLS.
func Tools(sw ToolSwitches) []Tool {
	return []Tool{
		{ID: "testing-metadata", Name: "Testing metadata", Kind: "route", Method: "GET", Path: "/api/testing/legacy-tools",
			Description: "This document: tools, fixture players, deck-code vectors and map seeds with known properties.",
			Enabled:     sw.TestingTools, EnabledBy: "PLATFORM_TESTING_TOOLS"},
		{ID: "mail-log", Name: "Mail in the server log", Kind: "command", Command: "platformctl serve (without PLATFORM_SMTP_URL)",
			Description: "Confirmation mails, links included, are written to the server log instead of being sent, so flows can be finished without a mailbox.",
			Enabled:     sw.MailLog, EnabledBy: "PLATFORM_SMTP_URL unset in development"},
		{ID: "liveops-set-seed", Name: "Set a map seed", Kind: "command",
			Command:     "platformctl liveops set-seed --size short|long --seed N --reason TEXT",
			Description: "Switch the map of a size for every queue at once, for example to one of the seeds below; audited.",
			Enabled:     true, EnabledBy: "database access"},
		{ID: "seed-fixtures", Name: "Seed the fixtures", Kind: "command",
			Command:     "platformctl seed fixtures [--dry-run] [--skip-world]",
			Description: "Publish the catalog and live-ops defaults and create the development players below; never undoes what players or operators changed.",
			Enabled:     true, EnabledBy: "database access"},
		{ID: "map-preview", Name: "Draw a map", Kind: "command",
			Command:     "platformctl map generate --size short|long --seed N",
			Description: "Draw the map of a seed, for example one of the seeds below, without a database.",
			Enabled:     true, EnabledBy: "always"},
		{ID: "liveops-show", Name: "Show the live-ops configuration", Kind: "command",
			Command:     "platformctl liveops show --output json",
			Description: "Print flags, events with their status, banners, messages and map seeds.",
			Enabled:     true, EnabledBy: "database access"},
	}
}

// FixturePlayer is a development player account loaded from the fixtures.
type FixturePlayer struct {
	// ID is set when the player is seeded in this database.
	ID       string `json:"id,omitempty"`
	Email    string `json:"email"`
	Nickname string `json:"nickname"`
	Name     string `json:"name"`
	// Password is the fixture's published development password.
	Password string `json:"password"`
	Notes    string `json:"notes"`
}

// DeckCodeVector is a golden deck code: a code and what decoding it must
// give, either the cards or the reason it is refused.
type DeckCodeVector struct {
	Name   string          `json:"name"`
	Code   string          `json:"code"`
	Expect string          `json:"expect"` // "valid" or the refusal reason
	Cards  []DeckCodeCards `json:"cards"`
}

// DeckCodeCards is one card of a vector's deck.
type DeckCodeCards struct {
	NumID int `json:"numId"`
	Count int `json:"count"`
}

// FixtureSource supplies the development fixture players and the deck-code
// test vectors. The player area implements it; until it is wired the lists
// are empty.
type FixtureSource interface {
	FixturePlayers(ctx context.Context) ([]FixturePlayer, error)
	DeckCodeVectors(ctx context.Context) ([]DeckCodeVector, error)
}

// KnownSeed is a map seed picked for a property QA wants to test, found by
// generating every seed in 1..KnownSeedScan with internal/gamemap.
type KnownSeed struct {
	Property    string             `json:"property"`
	Description string             `json:"description"`
	Value       int                `json:"value"`
	Map         liveops.MapSummary `json:"map"`
}

// KnownSeedScan is how many seeds (1..KnownSeedScan) are searched per size.
const KnownSeedScan = 64

// seedProperty is one property KnownSeeds looks for: the seed with the
// largest (or smallest) value of measure; ties go to the lowest seed.
type seedProperty struct {
	id, description string
	largest         bool
	measure         func(liveops.MapSummary) int
}

var seedProperties = []seedProperty{
	{"most-overlap", "lanes share the most cells: exercises overlap resolution", true,
		func(m liveops.MapSummary) int { return m.OverlapCellCount }},
	{"least-overlap", "lanes share the fewest cells", false,
		func(m liveops.MapSummary) int { return m.OverlapCellCount }},
	{"longest-route", "the longest small-unit route of any lane", true,
		func(m liveops.MapSummary) int { return m.LongestRoute }},
	{"shortest-route", "the shortest small-unit route of any lane", false,
		func(m liveops.MapSummary) int { return m.ShortestRoute }},
	{"most-build-cells", "the most cells to build on", true,
		func(m liveops.MapSummary) int { return m.BuildCellCount }},
	{"fewest-build-cells", "the fewest cells to build on", false,
		func(m liveops.MapSummary) int { return m.BuildCellCount }},
	{"most-unbalanced", "the largest difference between the longest and the shortest lane", true,
		func(m liveops.MapSummary) int { return m.LongestRoute - m.ShortestRoute }},
}

// FindKnownSeeds generates seeds 1..scan of size and returns, for each
// property, the seed that has the most (or least) of it.
func FindKnownSeeds(size gamemap.Size, scan int) []KnownSeed {
	maps := make([]liveops.MapSummary, 0, scan)
	for seed := int64(1); seed <= int64(scan); seed++ {
		maps = append(maps, liveops.SummarizeSeed(size, seed))
	}
	out := make([]KnownSeed, 0, len(seedProperties))
	for _, p := range seedProperties {
		best := maps[0]
		for _, m := range maps[1:] {
			c := cmp.Compare(p.measure(m), p.measure(best))
			if (p.largest && c > 0) || (!p.largest && c < 0) {
				best = m
			}
		}
		out = append(out, KnownSeed{Property: p.id, Description: p.description, Value: p.measure(best), Map: best})
	}
	return out
}

// TestingMetadata is what GET /api/testing/legacy-tools answers.
type TestingMetadata struct {
	Environment     string                 `json:"environment"`
	Enabled         bool                   `json:"enabled"`
	Tools           []Tool                 `json:"tools"`
	FixturePlayers  []FixturePlayer        `json:"fixturePlayers"`
	DeckCodeVectors []DeckCodeVector       `json:"deckCodeVectors"`
	MapSeeds        map[string][]KnownSeed `json:"mapSeeds"`
}

// Testing serves the testing metadata when testing tools are enabled.
type Testing struct {
	enabled  bool
	env      string
	tools    []Tool
	fixtures FixtureSource
	seeds    func() map[string][]KnownSeed
}

// New returns the testing metadata service. fixtures may be nil.
func New(env string, sw ToolSwitches, fixtures FixtureSource) *Testing {
	return &Testing{
		enabled:  sw.TestingTools,
		env:      env,
		tools:    Tools(sw),
		fixtures: fixtures,
		// The scan costs tens of milliseconds and its answer depends only on
		// the map engine, so it runs once, on first use.
		seeds: sync.OnceValue(func() map[string][]KnownSeed {
			out := map[string][]KnownSeed{}
			for _, size := range gamemap.Sizes {
				out[string(size)] = FindKnownSeeds(size, KnownSeedScan)
			}
			return out
		}),
	}
}

// ErrTestingDisabled is the answer when testing tools are off. It is the
// same NOT_FOUND a path without a route gets, so a production server does
// not reveal that the route exists.
var ErrTestingDisabled = platform.Errorf(platform.KindNotFound, platform.CodeNotFound, "no such route")

// Enabled reports whether testing tools are on.
func (t *Testing) Enabled() bool { return t.enabled }

// Metadata returns the testing metadata, or ErrTestingDisabled.
func (t *Testing) Metadata(ctx context.Context) (*TestingMetadata, error) {
	if !t.enabled {
		return nil, ErrTestingDisabled
	}
	md := &TestingMetadata{Environment: t.env, Enabled: true, Tools: t.tools,
		FixturePlayers: []FixturePlayer{}, DeckCodeVectors: []DeckCodeVector{}, MapSeeds: t.seeds()}
	if t.fixtures != nil {
		players, err := t.fixtures.FixturePlayers(ctx)
		if err != nil {
			return nil, fmt.Errorf("fixture players: %w", err)
		}
		vectors, err := t.fixtures.DeckCodeVectors(ctx)
		if err != nil {
			return nil, fmt.Errorf("deck-code vectors: %w", err)
		}
		md.FixturePlayers, md.DeckCodeVectors = platform.OrEmpty(players), platform.OrEmpty(vectors)
	}
	return md, nil
}

// orEmpty returns s, or an empty slice for nil, so that lists answer []
// rather than null.
