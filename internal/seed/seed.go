package seed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/liveops"
	"github.com/towerdefence/platformctl/internal/matchmaking"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/player"
)

// CodeFixturesInvalid is the error code of fixtures that fail validation.
const CodeFixturesInvalid = "FIXTURES_INVALID"

// Actions a seed run reports per item.
const (
	ActionPublished = "published" // a new version was written
	ActionUnchanged = "unchanged" // the database already has this version
	ActionKept      = "kept"      // an operator's newer version stays
	ActionApplied   = "applied"   // a world item was written
	ActionSkipped   = "skipped"   // a world item conflicts with what players did
	ActionDone      = "done"      // a world item was applied by an earlier run
)

// Published is a catalog or live-ops version as stored.
type Published struct {
	Version     int
	ETag        string
	Hash        string
	Body        []byte
	Source      string
	PublishedAt time.Time
}

// Tx is what seeding writes, in one transaction.
type Tx interface {
	player.Tx
	// LockPublications holds the lock live-ops publications hold too
	// until the transaction ends, so seeders and publishers take turns.
	LockPublications(ctx context.Context) error
	// CatalogHash returns the newest catalog version and content hash (0
	// and "" when none).
	CatalogHash(ctx context.Context) (int, string, error)
	CardRegistry(ctx context.Context) (map[uint32]string, error)
	PublishCatalog(ctx context.Context, p Published, cards []player.Card) error
	LiveOpsHead(ctx context.Context) (*liveops.Head, error)
	PublishLiveOps(ctx context.Context, p Published) error
	Ledger(ctx context.Context) (map[string]string, error)
	RecordLedger(ctx context.Context, item, ref string, at time.Time) error
	// PlayerIDByEmail returns uuid.Nil when there is no such player.
	PlayerIDByEmail(ctx context.Context, email string) (uuid.UUID, error)
	InsertUser(ctx context.Context, u *account.User) error
}

// Store opens seeding transactions.
type Store interface {
	Ledger(ctx context.Context) (map[string]string, error)
	// InTx runs fn in one transaction, committing when fn returns nil. fn
	// may run more than once: after a serialization failure, a deadlock or
	// a connection lost before COMMIT the transaction starts again (up to
	// four runs), so fn works only through tx, has no side effects outside
	// the transaction, and resets whatever it gathers at the start of each
	// run.
	InTx(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error
}

// Seeder applies fixture sets.
type Seeder struct {
	store    Store
	accounts *account.Service
	players  *player.Service
	queues   []matchmaking.Queue
	now      func() time.Time
}

// Deps are the services a Seeder writes through.
type Deps struct {
	Store    Store
	Accounts *account.Service
	Players  *player.Service
}

// New returns a seeder; queues are the matchmaking queue presets the
// fixtures are validated against.
func New(d Deps, queues []matchmaking.Queue, now func() time.Time) *Seeder {
	return &Seeder{store: d.Store, accounts: d.Accounts, players: d.Players, queues: queues, now: now}
}

// Options tune a run.
type Options struct {
	// DryRun validates and computes every change, then writes nothing.
	DryRun bool
	// World applies the development world; serve and the CLI turn it off
	// in production.
	World bool
}

// Item is what a run did, or would do, to one thing.
type Item struct {
	Item    string `json:"item"`
	Action  string `json:"action"`
	Version int    `json:"version,omitempty"`
	Note    string `json:"note,omitempty"`
}

// Report lists every item of a run.
type Report struct {
	DryRun bool   `json:"dryRun"`
	Items  []Item `json:"items"`
}

// Changed reports whether the run wrote (or would write) anything.
func (r *Report) Changed() bool {
	return slices.ContainsFunc(r.Items, func(it Item) bool { return it.Action == ActionPublished || it.Action == ActionApplied })
}

// invalid wraps problems in a FIXTURES_INVALID error.
func invalid(ps []platform.Problem) error {
	msg := fmt.Sprintf("%d problems in the fixtures; nothing was written", len(ps))
	if len(ps) == 1 {
		msg = "a problem in the fixtures; nothing was written"
	}
	return &platform.Error{Kind: platform.KindInvalid, Code: CodeFixturesInvalid, Message: msg,
		Details: map[string]any{"problems": ps}}
}

// Problems returns the problems a FIXTURES_INVALID error carries.
func Problems(err error) []platform.Problem {
	pe, ok := platform.As(err)
	if !ok || pe.Code != CodeFixturesInvalid {
		return nil
	}
	ps, _ := pe.Details["problems"].([]platform.Problem)
	return ps
}

var errDryRun = errors.New("dry run")

// Seed validates the set and applies it in one transaction. Validation
// problems, including clashes with the database (a card numId published
// before for another card), come back as one FIXTURES_INVALID error
// listing all of them, and nothing is written.
func (s *Seeder) Seed(ctx context.Context, set *Set, opts Options) (*Report, error) {
	if ps := set.Validate(s.queues); len(ps) > 0 {
		return nil, invalid(ps)
	}
	body, err := json.Marshal(set.Content)
	if err != nil {
		return nil, fmt.Errorf("encode catalog: %w", err)
	}
	liveBody, err := json.Marshal(set.LiveOps)
	if err != nil {
		return nil, fmt.Errorf("encode live-ops: %w", err)
	}
	world := opts.World && set.World != nil
	users := map[string]*account.User{}
	if world {
		if users, err = s.prepareWorldUsers(ctx, set.World); err != nil {
			return nil, err
		}
	}
	report := &Report{DryRun: opts.DryRun}
	err = s.store.InTx(ctx, func(ctx context.Context, tx Tx) error {
		// Concurrent seeders serialise: the second sees what the first
		// wrote.
		if err := tx.LockPublications(ctx); err != nil {
			return err
		}
		report.Items = report.Items[:0]
		now := s.now().UTC().Truncate(time.Microsecond)
		cat, item, err := s.seedCatalog(ctx, tx, &set.Content, body, now)
		if err != nil {
			return err
		}
		report.Items = append(report.Items, item)
		item, err = s.seedLiveOps(ctx, tx, &set.LiveOps, liveBody, now)
		if err != nil {
			return err
		}
		report.Items = append(report.Items, item)
		if world {
			items, err := s.seedWorld(ctx, tx, cat, set.World, users, now)
			if err != nil {
				return err
			}
			report.Items = append(report.Items, items...)
		}
		if opts.DryRun {
			return errDryRun
		}
		return nil
	})
	if err != nil && !errors.Is(err, errDryRun) {
		return nil, err
	}
	return report, nil
}

// prepareWorldUsers builds the accounts of the world players that no
// earlier run created. A player's fixture hash is used as is; the embedded
// world has one for every player, so seeding a fresh development database
// hashes nothing. Other passwords are hashed before the transaction, since
// argon2id is slow on purpose and must not hold the database's write lock,
// and once per distinct password.
func (s *Seeder) prepareWorldUsers(ctx context.Context, w *World) (map[string]*account.User, error) {
	ledger, err := s.store.Ledger(ctx)
	if err != nil {
		return nil, fmt.Errorf("read fixture ledger: %w", err)
	}
	users := map[string]*account.User{}
	hashes := map[string]string{}
	now := s.now().UTC().Truncate(time.Millisecond)
	for _, p := range w.Players {
		if _, done := ledger[playerItem(p.Nickname)]; done {
			continue
		}
		hash, ok := p.PasswordHash, p.PasswordHash != ""
		if !ok {
			hash, ok = hashes[p.Password]
		}
		if !ok {
			if hash, err = s.accounts.HashPassword(ctx, p.Password); err != nil {
				return nil, fmt.Errorf("fixture player %s: %w", p.Nickname, err)
			}
			hashes[p.Password] = hash
		}
		// World.validate has checked every field against the account rules.
		users[account.NicknameKey(p.Nickname)] = &account.User{
			ID: uuid.New(), Realm: account.RealmPlayer, Email: account.NormalizeEmail(p.Email),
			Name: account.NormalizeName(p.Name), Nickname: account.NormalizeNickname(p.Nickname),
			EmailVerified: true, PasswordHash: hash, CreatedAt: now, UpdatedAt: now,
		}
	}
	return users, nil
}

func (s *Seeder) seedCatalog(ctx context.Context, tx Tx, content *player.Content, body []byte, now time.Time) (*player.Catalog, Item, error) {
	item := Item{Item: "catalog"}
	version, hash, err := tx.CatalogHash(ctx)
	if err != nil {
		return nil, item, err
	}
	registry, err := tx.CardRegistry(ctx)
	if err != nil {
		return nil, item, err
	}
	// Deck codes name cards by numId, so a numId published once must keep
	// naming the same card forever.
	var ps []platform.Problem
	byID := map[string]uint32{}
	for num, id := range registry {
		byID[id] = num
	}
	for i, c := range content.Cards {
		path := fmt.Sprintf("cards[%d].numId", i)
		if id, ok := registry[c.NumID]; ok && id != c.ID {
			ps = append(ps, platform.Problem{File: FileCatalog, Path: path, Message: fmt.Sprintf("numId %d was published for card %q; give %q a new numId", c.NumID, id, c.ID)})
		} else if num, ok := byID[c.ID]; ok && num != c.NumID {
			ps = append(ps, platform.Problem{File: FileCatalog, Path: path, Message: fmt.Sprintf("card %q was published with numId %d; a card's numId never changes", c.ID, num)})
		}
	}
	if len(ps) > 0 {
		return nil, item, invalid(ps)
	}
	newHash := content.Hash()
	head := player.CatalogHead{Version: version, ETag: player.CatalogETag(version, hash), PublishedAt: now}
	item.Action, item.Version = ActionUnchanged, version
	if hash != newHash {
		head.Version = version + 1
		head.ETag = player.CatalogETag(head.Version, newHash)
		if err := tx.PublishCatalog(ctx, Published{Version: head.Version, ETag: head.ETag, Hash: newHash, Body: body, PublishedAt: now}, content.Cards); err != nil {
			return nil, item, err
		}
		item.Action, item.Version = ActionPublished, head.Version
	}
	cat, err := player.NewCatalog(content, head)
	return cat, item, err
}

func (s *Seeder) seedLiveOps(ctx context.Context, tx Tx, cfg *liveops.Config, body []byte, now time.Time) (Item, error) {
	item := Item{Item: "liveops"}
	head, err := tx.LiveOpsHead(ctx)
	if err != nil {
		return item, err
	}
	hash := cfg.Hash()
	switch {
	case head != nil && head.Source == liveops.SourceOperator:
		item.Action, item.Version, item.Note = ActionKept, head.Version, "an operator published a newer configuration"
		return item, nil
	case head != nil && head.Hash == hash:
		item.Action, item.Version = ActionUnchanged, head.Version
		return item, nil
	}
	version := 1
	if head != nil {
		version = head.Version + 1
	}
	err = tx.PublishLiveOps(ctx, Published{Version: version, ETag: liveops.ETag(version, hash), Hash: hash, Body: body,
		Source: liveops.SourceFixtures, PublishedAt: now})
	item.Action, item.Version = ActionPublished, version
	return item, err
}

func playerItem(nickname string) string { return "world/player/" + account.NicknameKey(nickname) }

// seedWorld applies the world items the ledger does not list yet. An item
// that would overwrite something players did since (a relationship that
// exists, a player already in a lobby) is skipped and recorded, so later
// runs leave it alone too.
func (s *Seeder) seedWorld(ctx context.Context, tx Tx, cat *player.Catalog, w *World, users map[string]*account.User, now time.Time) ([]Item, error) {
	ledger, err := tx.Ledger(ctx)
	if err != nil {
		return nil, err
	}
	run := &worldRun{seeder: s, tx: tx, cat: cat, ledger: ledger, ids: map[string]uuid.UUID{}, now: now}
	if err := run.players(ctx, w.Players, users); err != nil {
		return nil, err
	}
	if err := run.relations(ctx, w); err != nil {
		return nil, err
	}
	if err := run.lobbies(ctx, w.Lobbies); err != nil {
		return nil, err
	}
	return run.items, nil
}

// worldRun is one application of the world inside the seeding transaction.
type worldRun struct {
	seeder *Seeder
	tx     Tx
	cat    *player.Catalog
	ledger map[string]string    // items applied by earlier runs -> their ref
	ids    map[string]uuid.UUID // nickname key -> player id
	items  []Item
	now    time.Time
}

// done reports whether an earlier run applied item, listing it as done.
func (r *worldRun) done(item string) bool {
	if _, ok := r.ledger[item]; !ok {
		return false
	}
	r.items = append(r.items, Item{Item: item, Action: ActionDone})
	return true
}

// record lists item with its action and writes it to the ledger.
func (r *worldRun) record(ctx context.Context, item, ref, action, note string) error {
	r.items = append(r.items, Item{Item: item, Action: action, Note: note})
	return r.tx.RecordLedger(ctx, item, ref, r.now)
}

// id returns the player id of a sample player's nickname.
func (r *worldRun) id(nickname string) uuid.UUID { return r.ids[account.NicknameKey(nickname)] }

// players creates the sample players no earlier run created. A nickname
// that belongs to someone else fails the whole run, listing every clash.
func (r *worldRun) players(ctx context.Context, players []WorldPlayer, users map[string]*account.User) error {
	var ps []platform.Problem
	for _, p := range players {
		item := playerItem(p.Nickname)
		if ref, ok := r.ledger[item]; ok {
			r.done(item)
			if id, err := uuid.Parse(ref); err == nil {
				r.ids[account.NicknameKey(p.Nickname)] = id
			}
			continue
		}
		clash, err := r.player(ctx, item, p, users[account.NicknameKey(p.Nickname)])
		if err != nil {
			return err
		}
		if clash {
			ps = append(ps, platform.Problem{File: FileWorld, Path: "players", Message: fmt.Sprintf("nickname %q belongs to another account", p.Nickname)})
		}
	}
	if len(ps) > 0 {
		return invalid(ps)
	}
	return nil
}

// player applies one sample player: an existing account with the email is
// used as is; otherwise the account is created with its decks. It reports
// a clash when the nickname belongs to another account.
func (r *worldRun) player(ctx context.Context, item string, p WorldPlayer, u *account.User) (clash bool, err error) {
	if u == nil {
		return false, fmt.Errorf("fixture player %s was not prepared", p.Nickname)
	}
	key := account.NicknameKey(p.Nickname)
	existing, err := r.tx.PlayerIDByEmail(ctx, u.Email)
	if err != nil {
		return false, err
	}
	if existing != uuid.Nil {
		r.ids[key] = existing
		return false, r.record(ctx, item, existing.String(), ActionSkipped, "an account with this email exists; it is used as is")
	}
	switch _, err := r.tx.PlayerByNickname(ctx, key); {
	case err == nil:
		return true, nil
	case !errors.Is(err, player.ErrNotFound):
		return false, err
	}
	if err := r.tx.InsertUser(ctx, u); err != nil {
		return false, err
	}
	r.ids[key] = u.ID
	decks, err := r.decks(p)
	if err != nil {
		return false, err
	}
	if err := r.seeder.players.SeedPlayerTx(ctx, r.tx, r.cat, u.ID, decks); err != nil {
		return false, fmt.Errorf("fixture player %s: %w", p.Nickname, err)
	}
	return false, r.record(ctx, item, u.ID.String(), ActionApplied, "")
}

// decks resolves a sample player's fixture decks against the catalog.
func (r *worldRun) decks(p WorldPlayer) ([]player.FixtureDeck, error) {
	var decks []player.FixtureDeck
	for _, d := range p.Decks {
		cards, err := r.cat.ResolveSpec(d.DeckSpec)
		if err != nil {
			return nil, fmt.Errorf("fixture player %s: %w", p.Nickname, err)
		}
		decks = append(decks, player.FixtureDeck{Name: strings.TrimSpace(d.Name), Cards: cards, Default: d.Default})
	}
	return decks, nil
}

// relations applies friendships, requests and blocks.
func (r *worldRun) relations(ctx context.Context, w *World) error {
	for _, f := range w.Friendships {
		a, b := f[0], f[1]
		if account.NicknameKey(a) > account.NicknameKey(b) {
			a, b = b, a
		}
		if err := r.relation(ctx, "friendship", a, b, player.StateFriend); err != nil {
			return err
		}
	}
	for _, q := range w.Requests {
		if err := r.relation(ctx, "request", q.From, q.To, player.StateOutgoing); err != nil {
			return err
		}
	}
	for _, b := range w.Blocks {
		if err := r.relation(ctx, "block", b.By, b.Target, player.StateBlocked); err != nil {
			return err
		}
	}
	return nil
}

// relation applies one relationship from a to b unless the players
// already have one.
func (r *worldRun) relation(ctx context.Context, kind, a, b, state string) error {
	item := "world/" + kind + "/" + account.NicknameKey(a) + "+" + account.NicknameKey(b)
	if r.done(item) {
		return nil
	}
	applied, err := r.seeder.players.SeedRelationTx(ctx, r.tx, r.id(a), r.id(b), state)
	if err != nil {
		return err
	}
	if !applied {
		return r.record(ctx, item, "", ActionSkipped, "the players already have a relationship")
	}
	return r.record(ctx, item, "", ActionApplied, "")
}

// lobbies opens the sample lobbies, in id order, unless a member is
// already in a lobby.
func (r *worldRun) lobbies(ctx context.Context, lobbies []WorldLobby) error {
	lobbies = slices.Clone(lobbies)
	sort.SliceStable(lobbies, func(i, j int) bool { return lobbies[i].ID < lobbies[j].ID })
	for _, l := range lobbies {
		item := "world/lobby/" + l.ID
		if r.done(item) {
			continue
		}
		members := make([]uuid.UUID, len(l.Members))
		for i, m := range l.Members {
			members[i] = r.id(m)
		}
		applied, err := r.seeder.players.SeedLobbyTx(ctx, r.tx, r.id(l.Host), l.Queue, l.Visibility, members)
		if err != nil {
			return fmt.Errorf("fixture lobby %s: %w", l.ID, err)
		}
		action, note := ActionApplied, ""
		if !applied {
			action, note = ActionSkipped, "a member is already in a lobby"
		}
		if err := r.record(ctx, item, "", action, note); err != nil {
			return err
		}
	}
	return nil
}
