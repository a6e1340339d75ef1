// Package playertest builds the player services over a real, migrated and
// seeded test database (SQLite, or PostgreSQL when
// PLATFORM_TEST_DATABASE_URL is set) for the tests of several packages.
package playertest

import (
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/fixtures"
	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/liveops"
	"github.com/towerdefence/platformctl/internal/matchmaking"
	"github.com/towerdefence/platformctl/internal/player"
	"github.com/towerdefence/platformctl/internal/seed"
	"github.com/towerdefence/platformctl/internal/store"
	"github.com/towerdefence/platformctl/internal/storetest"
)

// Queues are the queue presets of the tests: casual lobbies hold four,
// ranked ones two and need valid decks, and one queue is switched off.
var Queues = []matchmaking.Queue{
	{ID: "casual-short", Mode: "casual", MapSize: "short", PartySize: matchmaking.PartySize{Min: 1, Max: 4}, Enabled: true},
	{ID: "casual-long", Mode: "casual", MapSize: "long", PartySize: matchmaking.PartySize{Min: 1, Max: 4}, Enabled: true},
	{ID: "ranked-short", Mode: "ranked", MapSize: "short", PartySize: matchmaking.PartySize{Min: 1, Max: 2}, Rated: true, RequiresValidDeck: true, Enabled: true},
	{ID: "ranked-long", Mode: "ranked", MapSize: "long", PartySize: matchmaking.PartySize{Min: 1, Max: 2}, Rated: true, RequiresValidDeck: false, Enabled: false},
	{ID: "custom-hosted", Mode: "custom", MapSize: "short", PartySize: matchmaking.PartySize{Min: 1, Max: 8}, Enabled: true},
}

// Cheap keeps password hashing fast in tests.
var Cheap = account.Argon2Params{MemoryKiB: 1024, Iterations: 1, Parallelism: 1}

// Clock is a settable clock that starts at the real time.
type Clock struct {
	mu     sync.Mutex
	offset time.Duration
}

// Now returns the current time plus the advanced offset.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

// Env is the player services over one test database.
type Env struct {
	DB       *store.DB
	Clock    *Clock
	Accounts *account.Service
	LiveOps  *liveops.Service
	Players  *player.Service
	Seeder   *seed.Seeder
}

// Options adjust an Env.
type Options struct {
	Limits      player.Limits
	IdleTimeout time.Duration
	// World seeds the development world too.
	World bool
	// CatalogRefresh is player.Options.CatalogRefresh.
	CatalogRefresh time.Duration
}

// New returns an Env whose database holds the embedded content and
// live-ops fixtures.
func New(tb testing.TB, opts Options) *Env {
	tb.Helper()
	db := storetest.Open(tb)
	clock := &Clock{}
	e := &Env{DB: db, Clock: clock}
	e.Accounts = account.New(db.Accounts(), account.NewHasher(Cheap, account.Admission{}), clock.Now)
	e.LiveOps = liveops.New(db.LiveOps(), liveops.Options{}, clock.Now)
	e.Players = player.New(player.Deps{Store: db.Player(), LiveOps: e.LiveOps}, Queues,
		player.Options{Limits: opts.Limits, LobbyIdleTimeout: opts.IdleTimeout, CatalogRefresh: opts.CatalogRefresh}, clock.Now)
	e.Seeder = seed.New(seed.Deps{Store: db.Seed(), Accounts: e.Accounts, Players: e.Players}, Queues, clock.Now)
	set, ps := seed.Load(fixtures.FS())
	if len(ps) > 0 {
		tb.Fatalf("embedded fixtures: %v", ps)
	}
	if _, err := e.Seeder.Seed(tb.Context(), set, seed.Options{World: opts.World}); err != nil {
		tb.Fatalf("seed: %v", err)
	}
	return e
}

// Player creates a player account and returns its id.
func (e *Env) Player(tb testing.TB, nickname string) uuid.UUID {
	tb.Helper()
	u, err := e.Accounts.Create(tb.Context(), account.RealmPlayer, account.NewUser{
		Email: nickname + "@example.test", Name: nickname, Nickname: nickname, Password: "correct horse battery"})
	if err != nil {
		tb.Fatalf("create player %s: %v", nickname, err)
	}
	return u.ID
}
