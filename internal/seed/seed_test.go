package seed_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/liveops"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/player"
	"github.com/towerdefence/platformctl/internal/playertest"
	"github.com/towerdefence/platformctl/internal/seed"
	"github.com/towerdefence/platformctl/internal/store"
	"github.com/towerdefence/platformctl/internal/storetest"
)

// snapshot counts the rows seeding can touch, table by table.
func snapshot(t *testing.T, db *store.DB) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, table := range []string{"content_catalogs", "content_card_ids", "liveops_configs", "fixture_ledger", "users",
		"player_profiles", "player_decks", "social_edges", "lobbies", "lobby_members"} {
		out[table] = storetest.Count(t, db, "SELECT COUNT(*) FROM "+table)
	}
	return out
}

func loadEmbedded(t *testing.T) *seed.Set {
	t.Helper()
	set, ps := seed.Load(mapFS(t))
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	return set
}

func actions(r *seed.Report) map[string]string {
	out := map[string]string{}
	for _, it := range r.Items {
		out[it.Item] = it.Action
	}
	return out
}

func TestSeedIsIdempotent(t *testing.T) {
	ctx := t.Context()
	env := playertest.New(t, playertest.Options{}) // content and live-ops, no world
	set := loadEmbedded(t)

	first, err := env.Seeder.Seed(ctx, set, seed.Options{World: true})
	if err != nil {
		t.Fatal(err)
	}
	got := actions(first)
	if got["catalog"] != seed.ActionUnchanged || got["liveops"] != seed.ActionUnchanged {
		t.Errorf("content seeded twice: %v", got)
	}
	if got["world/player/ada"] != seed.ActionApplied || got["world/lobby/grace-custom"] != seed.ActionApplied {
		t.Errorf("world not applied: %v", got)
	}
	before := snapshot(t, env.DB)
	if before["users"] != len(set.World.Players) || before["lobbies"] != 1 || before["content_catalogs"] != 1 {
		t.Fatalf("after the world: %v", before)
	}

	again, err := env.Seeder.Seed(ctx, set, seed.Options{World: true})
	if err != nil {
		t.Fatal(err)
	}
	if again.Changed() {
		t.Errorf("second run changed something: %+v", again.Items)
	}
	if diff := cmp.Diff(before, snapshot(t, env.DB)); diff != "" {
		t.Errorf("second run changed rows (-before +after):\n%s", diff)
	}
}

func TestSeedNeverUndoesPlayerChanges(t *testing.T) {
	ctx := t.Context()
	env := playertest.New(t, playertest.Options{World: true})
	ada := mustPlayer(t, env, "ada")
	barbara := mustPlayer(t, env, "barbara")

	// Ada drops Grace as a friend and picks another default deck;
	// Barbara leaves the fixture lobby.
	if _, err := env.Players.Act(ctx, ada, player.SocialActionInput{Action: player.ActionRemove, Target: "grace"}); err != nil {
		t.Fatal(err)
	}
	decks, err := env.Players.Decks(ctx, ada)
	if err != nil {
		t.Fatal(err)
	}
	var other *player.Deck
	for i := range decks.Decks {
		if !decks.Decks[i].IsDefault {
			other = &decks.Decks[i]
			break
		}
	}
	if _, err := env.Players.SetDefaultDeck(ctx, ada, other.ID); err != nil {
		t.Fatal(err)
	}
	current, err := env.Players.CurrentLobby(ctx, barbara)
	if err != nil || current == nil {
		t.Fatalf("barbara's fixture lobby: %v, %v", current, err)
	}
	if _, err := env.Players.LeaveLobby(ctx, barbara, current.ID); err != nil {
		t.Fatal(err)
	}

	report, err := env.Seeder.Seed(ctx, loadEmbedded(t), seed.Options{World: true})
	if err != nil {
		t.Fatal(err)
	}
	if report.Changed() {
		t.Errorf("reseeding changed something: %+v", report.Items)
	}
	social, err := env.Players.Social(ctx, ada, player.SocialQuery{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range social.Friends {
		if f.Player.Nickname == "grace" {
			t.Error("reseeding restored the friendship ada removed")
		}
	}
	decks, err = env.Players.Decks(ctx, ada)
	if err != nil {
		t.Fatal(err)
	}
	if decks.DefaultDeckID == nil || *decks.DefaultDeckID != other.ID {
		t.Errorf("reseeding changed ada's default deck to %v, want %v", decks.DefaultDeckID, other.ID)
	}
	if current, _ := env.Players.CurrentLobby(ctx, barbara); current != nil {
		t.Error("reseeding put barbara back into the lobby she left")
	}
}

func mustPlayer(t *testing.T, env *playertest.Env, nickname string) uuid.UUID {
	t.Helper()
	u, err := env.Accounts.ByEmail(t.Context(), account.RealmPlayer, nickname+"@example.test")
	if err != nil {
		t.Fatalf("fixture player %s: %v", nickname, err)
	}
	return u.ID
}

func TestSeedSkipsWorldItemsThatClash(t *testing.T) {
	ctx := t.Context()
	env := playertest.New(t, playertest.Options{})
	// Someone signed up as linus before the world was seeded, and blocked
	// ada's future request target ken... by befriending him first.
	linus, err := env.Accounts.Create(ctx, account.RealmPlayer, account.NewUser{Email: "linus@example.test", Name: "Real Linus", Nickname: "linus", Password: "correct horse"})
	if err != nil {
		t.Fatal(err)
	}
	report, err := env.Seeder.Seed(ctx, loadEmbedded(t), seed.Options{World: true})
	if err != nil {
		t.Fatal(err)
	}
	got := actions(report)
	if got["world/player/linus"] != seed.ActionSkipped {
		t.Errorf("existing account: action %q, want skipped", got["world/player/linus"])
	}
	u, err := env.Accounts.ByID(ctx, linus.ID)
	if err != nil || u.Name != "Real Linus" {
		t.Errorf("the existing account was changed: %+v, %v", u, err)
	}
	// The relationships naming linus use the existing account.
	social, err := env.Players.Social(ctx, linus.ID, player.SocialQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(social.Outgoing) != 1 || social.Outgoing[0].Player.Nickname != "ada" {
		t.Errorf("linus's fixture request: %+v", social.Outgoing)
	}
}

func TestSeedDryRunWritesNothing(t *testing.T) {
	ctx := t.Context()
	db := storetest.Open(t)
	env := seederOn(t, db)
	before := snapshot(t, db)
	report, err := env.Seed(ctx, loadEmbedded(t), seed.Options{World: true, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	got := actions(report)
	if !report.DryRun || got["catalog"] != seed.ActionPublished || got["world/lobby/grace-custom"] != seed.ActionApplied {
		t.Errorf("dry run report: %+v", report)
	}
	if diff := cmp.Diff(before, snapshot(t, db)); diff != "" {
		t.Errorf("dry run wrote rows (-before +after):\n%s", diff)
	}
}

func seederOn(t *testing.T, db *store.DB) *seed.Seeder {
	t.Helper()
	accounts := account.New(db.Accounts(), account.NewHasher(playertest.Cheap, account.Admission{}), time.Now)
	live := liveops.New(db.LiveOps(), liveops.Options{}, time.Now)
	players := player.New(player.Deps{Store: db.Player(), LiveOps: live}, playertest.Queues, player.Options{}, time.Now)
	return seed.New(seed.Deps{Store: db.Seed(), Accounts: accounts, Players: players}, playertest.Queues, time.Now)
}

func TestSeedRefusesInvalidFixturesAndWritesNothing(t *testing.T) {
	ctx := t.Context()
	db := storetest.Open(t)
	s := seederOn(t, db)
	m := mapFS(t)
	edit(t, m, seed.FileWorld, "- {by: barbara, target: linus}", "- {by: barbara, target: nobody}")
	set, ps := seed.Load(m)
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	_, err := s.Seed(ctx, set, seed.Options{World: true})
	if platform.ErrorCode(err) != seed.CodeFixturesInvalid || len(seed.Problems(err)) != 1 {
		t.Fatalf("Seed = %v (problems %v), want FIXTURES_INVALID with one problem", err, seed.Problems(err))
	}
	for table, n := range snapshot(t, db) {
		if n != 0 {
			t.Errorf("%s has %d rows after a refused seed", table, n)
		}
	}
}

// Clients are served the catalog version read at most one refresh
// interval ago; the deck rules use the newest at once.
func TestClientsGetAPublishedCatalogWithinTheRefresh(t *testing.T) {
	ctx := t.Context()
	env := playertest.New(t, playertest.Options{CatalogRefresh: time.Hour})
	served := catalogVersion(t, env.Players.CatalogForClients)
	if served.Version != 1 {
		t.Fatalf("catalog served before a change: version %d", served.Version)
	}

	m := mapFS(t)
	edit(t, m, seed.FileCatalog, "{id: mortar, numId: 5, name: Mortar, rarity: epic,", "{id: mortar, numId: 5, name: Mortar, rarity: legendary,")
	set, ps := seed.Load(m)
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	if _, err := env.Seeder.Seed(ctx, set, seed.Options{}); err != nil {
		t.Fatal(err)
	}
	if again := catalogVersion(t, env.Players.CatalogForClients); again != served {
		t.Fatalf("catalog served within the refresh: version %d, want version 1 as before", again.Version)
	}
	env.Clock.Advance(time.Hour)
	later := catalogVersion(t, env.Players.CatalogForClients)
	if later.Version != 2 {
		t.Fatalf("catalog served after the refresh: version %d, want 2", later.Version)
	}
	if rules := catalogVersion(t, env.Players.Catalog); rules != later {
		t.Fatalf("catalog for the rules: version %d, want the same version 2", rules.Version)
	}
}

func catalogVersion(t *testing.T, get func(context.Context) (*player.Catalog, error)) *player.Catalog {
	t.Helper()
	cat, err := get(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

func TestSeedPublishesCatalogChangesAndGuardsNumIDs(t *testing.T) {
	ctx := t.Context()
	env := playertest.New(t, playertest.Options{})

	m := mapFS(t)
	edit(t, m, seed.FileCatalog, "{id: mortar, numId: 5, name: Mortar, rarity: epic,", "{id: mortar, numId: 5, name: Mortar, rarity: legendary,")
	set, ps := seed.Load(m)
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	report, err := env.Seeder.Seed(ctx, set, seed.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if report.Items[0].Action != seed.ActionPublished || report.Items[0].Version != 2 {
		t.Fatalf("catalog after a change: %+v", report.Items[0])
	}
	cat, err := env.Players.Catalog(ctx)
	if err != nil || cat.Version != 2 {
		t.Fatalf("current catalog version %v (%v), want 2", cat, err)
	}

	tests := []struct{ name, old, new, want string }{
		{"renumbered card", "{id: ballista, numId: 6,", "{id: ballista, numId: 60,", `card "ballista" was published with numId 6`},
		{"reused numId", "{id: ballista, numId: 6,", "{id: crossbow, numId: 6,", `numId 6 was published for card "ballista"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := mapFS(t)
			delete(m, seed.FileWorld) // its deck codes name ballista by numId
			edit(t, m, seed.FileCatalog, tt.old, tt.new)
			if tt.name == "reused numId" {
				edit(t, m, seed.FileStarterDecks, "ballista: 2,", "crossbow: 2,")
			}
			set, ps := seed.Load(m)
			if len(ps) > 0 {
				t.Fatal(ps)
			}
			before := snapshot(t, env.DB)
			_, err := env.Seeder.Seed(ctx, set, seed.Options{})
			probs := seed.Problems(err)
			if len(probs) != 1 || !strings.Contains(probs[0].Message, tt.want) {
				t.Fatalf("Seed = %v, problems %v; want one saying %q", err, probs, tt.want)
			}
			if diff := cmp.Diff(before, snapshot(t, env.DB)); diff != "" {
				t.Errorf("a refused seed wrote rows:\n%s", diff)
			}
		})
	}
}

func TestSeedKeepsOperatorLiveOps(t *testing.T) {
	ctx := t.Context()
	env := playertest.New(t, playertest.Options{})
	storetest.Exec(t, env.DB, `INSERT INTO liveops_configs (version, etag, content_hash, body, source, published_at)
		SELECT version + 1, 'op', 'op', body, 'operator', published_at FROM liveops_configs`)
	m := mapFS(t)
	edit(t, m, seed.FileLiveOps, "short: 20261121", "short: 42")
	set, _ := seed.Load(m)
	report, err := env.Seeder.Seed(ctx, set, seed.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := actions(report)["liveops"]; got != seed.ActionKept {
		t.Fatalf("live-ops after an operator publish: %s, want kept", got)
	}
}

func TestConcurrentSeedsApplyOnce(t *testing.T) {
	ctx := t.Context()
	db := storetest.Open(t)
	set := loadEmbedded(t)
	const runs = 4
	var wg sync.WaitGroup
	errs := make(chan error, runs)
	for range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := seederOn(t, db).Seed(ctx, set, seed.Options{World: true})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	got := snapshot(t, db)
	want := map[string]int{"content_catalogs": 1, "liveops_configs": 1, "users": len(set.World.Players), "lobbies": 1}
	for table, n := range want {
		if got[table] != n {
			t.Errorf("%s: %d rows after %d concurrent seeds, want %d", table, got[table], runs, n)
		}
	}
	if t.Failed() {
		t.Log(fmt.Sprint(got))
	}
}

// TestWorldPlayersSignInWithTheirFixturePassword: seeding stores each
// fixture player's passwordHash as it is, without hashing, and the
// published password signs in.
func TestWorldPlayersSignInWithTheirFixturePassword(t *testing.T) {
	ctx := t.Context()
	env := playertest.New(t, playertest.Options{World: true})
	for _, p := range loadEmbedded(t).World.Players {
		u, err := env.Accounts.ByEmail(ctx, account.RealmPlayer, p.Email)
		if err != nil {
			t.Fatalf("%s: %v", p.Nickname, err)
		}
		if u.PasswordHash != p.PasswordHash {
			t.Errorf("%s: stored hash %q, want the fixture's", p.Nickname, u.PasswordHash)
		}
		if _, err := env.Accounts.Authenticate(ctx, account.RealmPlayer, p.Email, p.Password); err != nil {
			t.Errorf("%s cannot sign in with %q: %v", p.Nickname, p.Password, err)
		}
		if _, err := env.Accounts.Authenticate(ctx, account.RealmPlayer, p.Email, p.Password+"!"); err == nil {
			t.Errorf("%s signs in with a wrong password", p.Nickname)
		}
	}
}

// TestSeedHashesPasswordsWithoutFixtureHash: a world player without a
// passwordHash gets the password hashed with the service's parameters.
func TestSeedHashesPasswordsWithoutFixtureHash(t *testing.T) {
	ctx := t.Context()
	env := playertest.New(t, playertest.Options{})
	m := mapFS(t)
	ada := loadEmbedded(t).World.Players[0]
	edit(t, m, seed.FileWorld, "    password: development-only\n    passwordHash: '"+ada.PasswordHash+"'\n", "    password: ada's own password\n")
	set, ps := seed.Load(m)
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	if set.World.Players[0].PasswordHash != "" {
		t.Fatal("the edit left ada's passwordHash")
	}
	if _, err := env.Seeder.Seed(ctx, set, seed.Options{World: true}); err != nil {
		t.Fatal(err)
	}
	u, err := env.Accounts.Authenticate(ctx, account.RealmPlayer, "ada@example.test", "ada's own password")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("$argon2id$v=19$m=%d,t=%d,p=%d$", playertest.Cheap.MemoryKiB, playertest.Cheap.Iterations, playertest.Cheap.Parallelism); !strings.HasPrefix(u.PasswordHash, want) {
		t.Errorf("ada's hash %q, want one made by the seeder's hasher (%s…)", u.PasswordHash, want)
	}
	if _, err := env.Accounts.Authenticate(ctx, account.RealmPlayer, "grace@example.test", "development-only"); err != nil {
		t.Errorf("grace, whose fixture hash was used: %v", err)
	}
}

// TestFixtureDefaultDeckThatIsAStarterDeck: a sample player's default deck
// that is the same deck as a starter one is not stored twice, but it is
// still their default.
func TestFixtureDefaultDeckThatIsAStarterDeck(t *testing.T) {
	ctx := t.Context()
	env := playertest.New(t, playertest.Options{})
	m := mapFS(t)
	edit(t, m, seed.FileWorld, "    email: ken@example.test\n    password: development-only\n",
		"    email: ken@example.test\n    password: development-only\n    decks:\n      - name: My Frost\n        default: true\n"+
			"        cards: {arrow-tower: 2, frost-spire: 2, tesla-coil: 2, tar-pit: 3, snare: 2, shieldbearer: 2, rat-swarm: 1}\n")
	set, ps := seed.Load(m)
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	if _, err := env.Seeder.Seed(ctx, set, seed.Options{World: true}); err != nil {
		t.Fatal(err)
	}
	list, err := env.Players.Decks(ctx, mustPlayer(t, env, "ken"))
	if err != nil {
		t.Fatal(err)
	}
	cat, err := env.Players.Catalog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var frost string
	for _, d := range cat.StarterDecks {
		if d.ID == "frost-control" {
			frost = d.Code
		}
	}
	if len(list.Decks) != len(cat.StarterDecks) {
		t.Errorf("ken has %d decks, want the %d starter decks", len(list.Decks), len(cat.StarterDecks))
	}
	for _, d := range list.Decks {
		if d.IsDefault != (d.Code == frost) {
			t.Errorf("deck %s (%s): default %v; want the fixture's default, the Frost Control deck", d.Name, d.Code, d.IsDefault)
		}
	}
}
