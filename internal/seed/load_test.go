package seed_test

import (
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/towerdefence/platformctl/fixtures"
	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/matchmaking"
	"github.com/towerdefence/platformctl/internal/seed"
)

// testQueues mirror the queue presets closely enough for validation.
var testQueues = []matchmaking.Queue{
	{ID: "casual-short", Mode: "casual", MapSize: "short", PartySize: matchmaking.PartySize{Min: 1, Max: 2}, Enabled: true},
	{ID: "casual-long", Mode: "casual", MapSize: "long", PartySize: matchmaking.PartySize{Min: 1, Max: 2}, Enabled: true},
	{ID: "ranked-short", Mode: "ranked", MapSize: "short", PartySize: matchmaking.PartySize{Min: 1, Max: 2}, Rated: true, RequiresValidDeck: true, Enabled: true},
	{ID: "ranked-long", Mode: "ranked", MapSize: "long", PartySize: matchmaking.PartySize{Min: 1, Max: 2}, Rated: true, RequiresValidDeck: true, Enabled: true},
	{ID: "custom-hosted", Mode: "custom", MapSize: "short", PartySize: matchmaking.PartySize{Min: 1, Max: 8}, Enabled: true},
}

func TestEmbeddedFixturesAreValid(t *testing.T) {
	set, ps := seed.Load(fixtures.FS())
	if len(ps) > 0 {
		t.Fatalf("load: %v", ps)
	}
	if ps := set.Validate(testQueues); len(ps) > 0 {
		t.Fatalf("validate: %v", ps)
	}
	if set.World == nil || len(set.World.Players) == 0 {
		t.Fatal("the embedded fixtures have no development world")
	}
}

// TestEmbeddedWorldHashesMatchPasswords: seeding stores a fixture
// player's passwordHash as is, so it must be the hash of the password the
// README and the testing metadata publish.
func TestEmbeddedWorldHashesMatchPasswords(t *testing.T) {
	set, ps := seed.Load(fixtures.FS())
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	// The default parameters (PLATFORM_ARGON2_*): with them, the first
	// sign-in does not find the hash stale and replace it.
	h := account.NewHasher(account.Argon2Params{MemoryKiB: 19456, Iterations: 2, Parallelism: 1}, account.Admission{})
	for _, p := range set.World.Players {
		if p.PasswordHash == "" {
			t.Errorf("%s has no passwordHash, so seeding a fresh database hashes the password", p.Nickname)
			continue
		}
		ok, stale, err := h.Verify(t.Context(), p.PasswordHash, p.Password)
		if err != nil || !ok || stale {
			fresh, _ := h.Hash(t.Context(), p.Password)
			t.Errorf("%s: passwordHash is not a hash of %q with the default parameters (ok %v, stale %v, %v); this one is: %s",
				p.Nickname, p.Password, ok, stale, err, fresh)
		}
	}
}

// mapFS copies the embedded fixtures into a MapFS for editing.
func mapFS(t *testing.T) fstest.MapFS {
	t.Helper()
	m := fstest.MapFS{}
	for _, name := range []string{seed.FileCatalog, seed.FileStarterDecks, seed.FileLiveOps, seed.FileWorld} {
		raw, err := fs.ReadFile(fixtures.FS(), name)
		if err != nil {
			t.Fatal(err)
		}
		m[name] = &fstest.MapFile{Data: raw}
	}
	return m
}

func edit(t *testing.T, m fstest.MapFS, name, old, new string) {
	t.Helper()
	s := string(m[name].Data)
	if !strings.Contains(s, old) {
		t.Fatalf("%s does not contain %q", name, old)
	}
	m[name] = &fstest.MapFile{Data: []byte(strings.Replace(s, old, new, 1))}
}

func TestValidationListsEveryProblem(t *testing.T) {
	m := mapFS(t)
	edit(t, m, seed.FileCatalog, "- id: cannon\n", "- id: arrow-tower\n")                                        // duplicate tower id
	edit(t, m, seed.FileCatalog, "numId: 2,", "numId: 1,")                                                       // duplicate numId
	edit(t, m, seed.FileCatalog, "deploys: {kind: trap, id: snare}", "deploys: {kind: trap, id: net}")           // unknown reference
	edit(t, m, seed.FileStarterDecks, "tesla-coil: 2,", "tesla-coil: 2, laser: 1,")                              // unknown card
	edit(t, m, seed.FileStarterDecks, "runner: 3,", "runner: 4,")                                                // too many copies
	edit(t, m, seed.FileLiveOps, "flags: {menu-theme: winter}", "flags: {menu-colour: winter}")                  // unknown flag
	edit(t, m, seed.FileLiveOps, "queues: [ranked-short, ranked-long]", "queues: [ranked-short, ranked-mega]")   // unknown queue
	edit(t, m, seed.FileWorld, "code: TD1082WC0830C0P60G10DJG7K1SVT2G", "code: TD1082WC0830C0P60G10DJG7K1SVT2H") // bad checksum
	edit(t, m, seed.FileWorld, "- [ada, alan]", "- [ada, alonzo]")                                               // unknown player
	edit(t, m, seed.FileWorld, "- {from: ada, to: ken}", "- {from: ada, to: grace}")                             // pair already friends
	edit(t, m, seed.FileWorld, "queue: custom-hosted", "queue: casual-medium")                                   // unknown queue
	edit(t, m, seed.FileWorld, "$m=19456,", "$m=0,")                                                             // bad password hash
	m["content/extra.yml"] = &fstest.MapFile{Data: []byte("towers: []\n")}                                       // stray file

	set, ps := seed.Load(m)
	ps = append(ps, set.Validate(testQueues)...)
	want := []string{
		`content/catalog.yaml: towers[1].id: duplicate id "arrow-tower"`,
		`content/catalog.yaml: cards[1].numId: duplicate numId 1`,
		`content/catalog.yaml: cards[10].deploys.id: unknown trap "net"`,
		`content/starter-decks.yaml: starterDecks[1]: unknown card "laser"`,
		`content/starter-decks.yaml: starterDecks[2]: 4 copies of Runner, at most 3 allowed`,
		`liveops/defaults.yaml: events[0].flags.menu-colour: unknown flag "menu-colour"`,
		`liveops/defaults.yaml: events[1].queues[1]: unknown queue "ranked-mega"`,
		`world/development.yaml: players[0].decks[0]: bad deck code`,
		`world/development.yaml: friendships[1]: unknown player "alonzo"`,
		`world/development.yaml: requests[1]: ada and grace already have a friendship`,
		`world/development.yaml: lobbies[0].queue: unknown queue "casual-medium"`,
		`world/development.yaml: players[0].passwordHash: argon2id password hash parameters out of range; expected an argon2id PHC string`,
		`content/extra.yml: is not a fixture file`,
	}
	var got []string
	for _, p := range ps {
		got = append(got, p.String())
	}
	all := strings.Join(got, "\n")
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("missing problem %q", w)
		}
	}
	if t.Failed() {
		t.Logf("got:\n%s", all)
	}
}

func TestLoadRejectsUnknownFields(t *testing.T) {
	m := mapFS(t)
	edit(t, m, seed.FileCatalog, "    footprint: 1\n", "    footprnt: 1\n")
	delete(m, seed.FileLiveOps)
	_, ps := seed.Load(m)
	var got []string
	for _, p := range ps {
		got = append(got, p.String())
	}
	all := strings.Join(got, "\n")
	for _, w := range []string{`content/catalog.yaml: json: unknown field "footprnt"`, "liveops/defaults.yaml: is missing"} {
		if !strings.Contains(all, w) {
			t.Errorf("missing problem %q in:\n%s", w, all)
		}
	}
}
