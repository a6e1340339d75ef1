// Package player owns the player's meta state: the content catalog, decks
// and deck codes, the social graph, lobbies and the bootstrap that hands a
// client all of it in one round trip. Every rule about that state lives
// here; the store only reads and writes rows.
package player

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/matchmaking"
	"github.com/towerdefence/platformctl/internal/platform"
)

// Error codes of this package.
const (
	CodeCatalogNotSeeded        = "CATALOG_NOT_SEEDED"
	CodeDeckCodeInvalid         = "DECK_CODE_INVALID"
	CodeDeckInvalid             = "DECK_INVALID"
	CodeDeckNotFound            = "DECK_NOT_FOUND"
	CodeDeckLimitReached        = "DECK_LIMIT_REACHED"
	CodePlayerNotFound          = "PLAYER_NOT_FOUND"
	CodeSocialSelf              = "SOCIAL_SELF"
	CodeSocialInvalidTransition = "SOCIAL_INVALID_TRANSITION"
	CodeSocialLimitReached      = "SOCIAL_LIMIT_REACHED"
	CodeSocialRequestsFull      = "SOCIAL_REQUESTS_FULL"
	CodeInvalidCursor           = "INVALID_CURSOR"
	CodeQueueNotFound           = "QUEUE_NOT_FOUND"
	CodeQueueDisabled           = "QUEUE_DISABLED"
	CodeLobbyNotFound           = "LOBBY_NOT_FOUND"
	CodeLobbyFull               = "LOBBY_FULL"
	CodeLobbyClosed             = "LOBBY_CLOSED"
	CodeLobbyStarted            = "LOBBY_STARTED"
	CodeLobbyAlreadyMember      = "LOBBY_ALREADY_MEMBER"
	CodeLobbyNotMember          = "LOBBY_NOT_MEMBER"
	CodeLobbyNotHost            = "LOBBY_NOT_HOST"
	CodeLobbyNotReady           = "LOBBY_NOT_READY"
	CodeLobbyDeckRequired       = "LOBBY_DECK_REQUIRED"
)

// Limits are the per-player caps.
type Limits struct {
	MaxDecks            int `json:"maxDecks"`
	MaxFriends          int `json:"maxFriends"`
	MaxOutgoingRequests int `json:"maxOutgoingRequests"`
	MaxBlocked          int `json:"maxBlocked"`
	// MaxIncomingRequests caps the friend requests waiting for one
	// player, so nobody's inbox can be flooded.
	MaxIncomingRequests int `json:"maxIncomingRequests"`
}

// DefaultLimits are the caps used when Options leave them zero.
var DefaultLimits = Limits{MaxDecks: 30, MaxFriends: 200, MaxOutgoingRequests: 50, MaxBlocked: 500, MaxIncomingRequests: 500}

// Options configure a Service.
type Options struct {
	Limits Limits
	// LobbyIdleTimeout closes a lobby nobody acted in for this long.
	LobbyIdleTimeout time.Duration
	// CatalogRefresh is how long CatalogForClients trusts the catalog
	// version it last read before asking the database for a newer one;
	// zero asks every time.
	CatalogRefresh time.Duration
	// ReadTimeout bounds CatalogForClients's database reads for a caller
	// without a deadline of its own (the catalog route has none); zero
	// leaves them unbounded.
	ReadTimeout time.Duration
}

// Deps are what a player Service works with.
type Deps struct {
	Store   Store
	LiveOps LiveOps
	// Events hears of committed lobby and social changes; nil ignores them.
	Events Events
}

// Service is the player meta-state service.
type Service struct {
	store   Store
	queues  []matchmaking.Queue
	liveops LiveOps
	limits  Limits
	idle    time.Duration
	// refresh and readTimeout are Options.CatalogRefresh and ReadTimeout.
	refresh, readTimeout time.Duration
	now                  func() time.Time
	events               Events

	mu      sync.Mutex
	catalog *Catalog // the last loaded version; versions never change
	// head is the newest catalog head CatalogForClients read, checked
	// when.
	head    *CatalogHead
	checked time.Time
}

// New returns the service. queues are the matchmaking queue presets
// lobbies may be opened for; a lobby holds its queue's largest party.
func New(d Deps, queues []matchmaking.Queue, opts Options, now func() time.Time) *Service {
	s := &Service{store: d.Store, queues: queues, liveops: d.LiveOps, limits: opts.Limits, idle: opts.LobbyIdleTimeout, now: now,
		refresh: opts.CatalogRefresh, readTimeout: opts.ReadTimeout}
	if s.limits == (Limits{}) {
		s.limits = DefaultLimits
	}
	if s.limits.MaxIncomingRequests <= 0 {
		s.limits.MaxIncomingRequests = DefaultLimits.MaxIncomingRequests
	}
	if s.idle <= 0 {
		s.idle = 30 * time.Minute
	}
	s.events = d.Events
	if s.events == nil {
		s.events = noEvents{}
	}
	return s
}

// Limits returns the per-player caps.
func (s *Service) Limits() Limits { return s.limits }

// clock returns the current time in UTC at microsecond precision, the
// precision both databases keep.
func (s *Service) clock() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// Catalog returns the current catalog. Versions are immutable, so the
// parsed catalog is kept until the database names a newer one.
func (s *Service) Catalog(ctx context.Context) (*Catalog, error) {
	head, err := s.store.CatalogHead(ctx)
	if err != nil {
		return nil, fmt.Errorf("catalog head: %w", err)
	}
	return s.catalogAt(ctx, head)
}

// CatalogForClients returns the catalog as GET /api/content/catalog
// serves it. Every client fetches it at start, so the newest version
// number is read from the database at most once per
// Options.CatalogRefresh: a catalog published since is served within
// that time, or as soon as this server has loaded it. Deck and lobby
// rules use Catalog, which always asks. The route has no request
// deadline; reads made here have Options.ReadTimeout.
func (s *Service) CatalogForClients(ctx context.Context) (*Catalog, error) {
	if cat := s.standingCatalog(); cat != nil {
		return cat, nil
	}
	if _, ok := ctx.Deadline(); !ok && s.readTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.readTimeout)
		defer cancel()
	}
	head, err := s.store.CatalogHead(ctx)
	if err != nil {
		return nil, fmt.Errorf("catalog head: %w", err)
	}
	s.mu.Lock()
	s.head, s.checked = head, s.now()
	s.mu.Unlock()
	return s.catalogAt(ctx, head)
}

// standingCatalog returns the loaded catalog when the head read within
// the refresh interval names it or an older version, else nil.
func (s *Service) standingCatalog() *Catalog {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	age := now.Sub(s.checked)
	if s.checked.IsZero() || age < 0 || age >= s.refresh || s.head == nil || s.catalog == nil || s.catalog.Version < s.head.Version {
		return nil
	}
	return s.catalog
}

func (s *Service) catalogAt(ctx context.Context, head *CatalogHead) (*Catalog, error) {
	if head == nil {
		return nil, platform.Errorf(platform.KindUnavailable, CodeCatalogNotSeeded,
			"no content catalog has been published yet; run `platformctl seed fixtures`")
	}
	s.mu.Lock()
	cached := s.catalog
	s.mu.Unlock()
	if cached != nil && cached.Version >= head.Version {
		return cached, nil // a newer version than head names is as good
	}
	content, err := s.store.CatalogContent(ctx, head.Version)
	if err != nil {
		return nil, fmt.Errorf("load catalog %d: %w", head.Version, err)
	}
	cat, err := NewCatalog(content, *head)
	if err != nil {
		return nil, fmt.Errorf("load catalog %d: %w", head.Version, err)
	}
	s.mu.Lock()
	if s.catalog == nil || s.catalog.Version < cat.Version {
		s.catalog = cat
	}
	s.mu.Unlock()
	return cat, nil
}

// PlayerRef names a player as other players see them.
type PlayerRef struct {
	ID       uuid.UUID `json:"id"`
	Nickname string    `json:"nickname"`
	Name     string    `json:"name"`
	Image    *string   `json:"image"`
}

// Profile is the player's own meta row.
type Profile struct {
	UserID         uuid.UUID
	DefaultDeckID  *uuid.UUID
	StarterGranted bool
}

// DeckRow is a stored deck.
type DeckRow struct {
	ID        uuid.UUID
	UserID    uuid.UUID
	Name      string
	Code      string
	Source    string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Where a deck came from.
const (
	SourceStarter = "starter"
	SourceImport  = "import"
	SourceFixture = "fixture"
)

// Relationship states, always seen from the viewer's side.
const (
	StateNone     = "none"
	StateOutgoing = "outgoing"
	StateIncoming = "incoming"
	StateFriend   = "friend"
	StateBlocked  = "blocked"
)

// Edge is the viewer's side of a relationship.
type Edge struct {
	Other PlayerRef
	State string
	Since time.Time
}

// EdgePage asks for up to Limit relationships in State, newest first
// (since descending, then other player's id), after the position After
// when it is set.
type EdgePage struct {
	State string
	After *EdgeKey
	Limit int
}

// EdgeKey is a position in a list ordered newest first: a relationship
// list, or the lobby list (lobby creation time and id).
type EdgeKey struct {
	Since time.Time
	Other uuid.UUID
}

// LobbyRow is a stored lobby.
type LobbyRow struct {
	ID          uuid.UUID
	JoinCode    *string
	QueueID     string
	Visibility  string
	Status      string
	HostID      uuid.UUID
	Capacity    int
	MemberCount int
	CreatedAt   time.Time
	UpdatedAt   time.Time
	ActiveAt    time.Time
	ClosedAt    *time.Time
	CloseReason string
}

// MemberRow is one member of a lobby.
type MemberRow struct {
	LobbyID  uuid.UUID
	Player   PlayerRef
	Ready    bool
	JoinedAt time.Time
}

// PlayerState is the raw start-up state of one player: what a bootstrap
// reads in its one round trip.
type PlayerState struct {
	Catalog        *CatalogHead // nil before the first seed
	LiveOpsVersion int          // 0 before the first seed
	Profile        *Profile     // nil for a player never seen
	EdgeCounts     map[string]int
	Decks          []DeckRow
	// Lobby is the player's lobby, nil when they are in none.
	Lobby   *LobbyRow
	Members []MemberRow
}

// LobbyFilter narrows the lobby list.
type LobbyFilter struct {
	Viewer    uuid.UUID
	Queue     string
	ActiveMin time.Time // lobbies idle since before this are not listed
	Limit     int
	// After continues the list (created_at descending, then id) after
	// this lobby's creation time and id.
	After *EdgeKey
}

// LobbyBrowse is what the lobby browser reads.
type LobbyBrowse struct {
	Listings []LobbyListing
	// Current is the viewer's lobby, nil when they are in none.
	Current *LobbyRow
	Members []MemberRow
}

// LobbyListing is a lobby in a list, with its host. Its JoinCode is not
// read: a listing is for players outside the lobby.
type LobbyListing struct {
	LobbyRow
	Host PlayerRef
}

// Reader reads player state; inside a transaction it sees the
// transaction's writes.
type Reader interface {
	CatalogHead(ctx context.Context) (*CatalogHead, error)
	CatalogContent(ctx context.Context, version int) (*Content, error)

	PlayerByID(ctx context.Context, id uuid.UUID) (*PlayerRef, error)
	// PlayerByNickname looks a player up by nickname key (account.NicknameKey).
	PlayerByNickname(ctx context.Context, nicknameKey string) (*PlayerRef, error)

	Profile(ctx context.Context, userID uuid.UUID) (*Profile, error)
	Decks(ctx context.Context, userID uuid.UUID) ([]DeckRow, error)

	Edge(ctx context.Context, from, to uuid.UUID) (string, error)
	// EdgePages reads one page of relationships per query, newest first,
	// in one round trip.
	EdgePages(ctx context.Context, userID uuid.UUID, pages []EdgePage) ([]Edge, error)
	CountEdges(ctx context.Context, userID uuid.UUID, state string) (int, error)
	EdgeCounts(ctx context.Context, userID uuid.UUID) (map[string]int, error)

	// PlayerState reads in one round trip what a bootstrap needs: the
	// newest catalog and live-ops versions, the player's profile,
	// relationship counts, decks, and lobby with its members.
	PlayerState(ctx context.Context, userID uuid.UUID) (*PlayerState, error)
	// CurrentLobbyOf returns the player's lobby and its members in one
	// round trip, or ErrNotFound.
	CurrentLobbyOf(ctx context.Context, userID uuid.UUID) (*LobbyRow, []MemberRow, error)
	// LobbyWithMembers returns a lobby and its members in one round trip,
	// or ErrNotFound.
	LobbyWithMembers(ctx context.Context, lobbyID uuid.UUID) (*LobbyRow, []MemberRow, error)

	MembershipOf(ctx context.Context, userID uuid.UUID) (*MemberRow, error)
	Lobby(ctx context.Context, id uuid.UUID) (*LobbyRow, error)
	LobbyByCode(ctx context.Context, code string) (*LobbyRow, error)
	Members(ctx context.Context, lobbyID uuid.UUID) ([]MemberRow, error)
	// BrowseLobbies reads the joinable lobbies and the viewer's own lobby
	// with its members in one round trip.
	BrowseLobbies(ctx context.Context, f LobbyFilter) (*LobbyBrowse, error)
}

// Tx writes player state inside one transaction.
type Tx interface {
	Reader

	// EnsureProfiles creates missing profile rows; LockProfiles then
	// serialises the transactions that touch the same players (a no-op
	// where transactions already run one at a time).
	EnsureProfiles(ctx context.Context, now time.Time, ids ...uuid.UUID) error
	LockProfiles(ctx context.Context, ids ...uuid.UUID) error
	// GrantStarter marks the starter decks as given and reports whether
	// this call did it.
	GrantStarter(ctx context.Context, userID uuid.UUID, now time.Time) (bool, error)
	SetDefaultDeck(ctx context.Context, userID uuid.UUID, deckID *uuid.UUID, now time.Time) error

	// InsertDeck fails with ErrDuplicate when the player has the code.
	InsertDeck(ctx context.Context, d *DeckRow) error

	SetEdge(ctx context.Context, from, to uuid.UUID, state string, now time.Time) error
	DeleteEdge(ctx context.Context, from, to uuid.UUID) error

	// LockLobby reads a lobby and holds it until the transaction ends.
	LockLobby(ctx context.Context, id uuid.UUID) (*LobbyRow, error)
	// InsertLobby fails with ErrDuplicate when the join code is taken.
	InsertLobby(ctx context.Context, l *LobbyRow) error
	UpdateLobby(ctx context.Context, l *LobbyRow) error
	// InsertMember fails with ErrDuplicate when the player is in a lobby.
	InsertMember(ctx context.Context, m *MemberRow) error
	DeleteMember(ctx context.Context, lobbyID, userID uuid.UUID) error
	DeleteMembers(ctx context.Context, lobbyID uuid.UUID) error
	SetReady(ctx context.Context, lobbyID, userID uuid.UUID, ready bool) error
	// IdleLobbies lists open or started lobbies with no activity since before.
	IdleLobbies(ctx context.Context, before time.Time, limit int) ([]uuid.UUID, error)
}

// Store gives reads and transactions.
type Store interface {
	Reader
	// InTx runs fn in one transaction, committing when fn returns nil. fn
	// may run more than once: after a serialization failure, a deadlock or
	// a connection lost before COMMIT the transaction starts again (up to
	// four runs), so fn works only through tx, has no side effects outside
	// the transaction, and resets whatever it gathers at the start of each
	// run.
	InTx(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error
}

// ErrNotFound is returned by readers for a missing row.
var ErrNotFound = errors.New("not found")

// ErrDuplicate is returned by inserts that hit a unique key.
var ErrDuplicate = errors.New("duplicate")

// DeckCodeFormat describes the deck code format for clients.
type DeckCodeFormat struct {
	Prefix            string `json:"prefix"`
	CurrentVersion    int    `json:"currentVersion"`
	SupportedVersions []int  `json:"supportedVersions"`
	Alphabet          string `json:"alphabet"`
	Checksum          string `json:"checksum"`
}

// DeckCodeInfo returns the deck code format, as served in /api/meta.
func DeckCodeInfo() DeckCodeFormat {
	return DeckCodeFormat{Prefix: DeckCodePrefix, CurrentVersion: DeckCodeVersion, SupportedVersions: []int{DeckCodeVersion},
		Alphabet: crockford, Checksum: "CRC-32/IEEE"}
}

// LobbyFacts describes lobbies for clients.
type LobbyFacts struct {
	Statuses     []string `json:"statuses"`
	Visibilities []string `json:"visibilities"`
	Actions      []string `json:"actions"`
	JoinCode     struct {
		Length   int    `json:"length"`
		Alphabet string `json:"alphabet"`
	} `json:"joinCode"`
}

// LobbyInfo returns the lobby facts, as served in /api/meta.
func LobbyInfo() LobbyFacts {
	f := LobbyFacts{Statuses: LobbyStatuses, Visibilities: LobbyVisibilities,
		Actions: []string{LobbyActionJoin, LobbyActionLeave, LobbyActionReady, LobbyActionKick, LobbyActionStart, LobbyActionClose}}
	f.JoinCode.Length, f.JoinCode.Alphabet = JoinCodeLen, joinCodeAlphabet
	return f
}
