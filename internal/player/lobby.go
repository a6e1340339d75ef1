package player

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/matchmaking"
	"github.com/towerdefence/platformctl/internal/platform"
)

// Lobby visibilities.
const (
	VisibilityPublic  = "public"  // listed to everyone
	VisibilityFriends = "friends" // listed to the host's friends
	VisibilityPrivate = "private" // never listed; joined by code only
)

// Lobby statuses. A started lobby has gone to matchmaking; a closed one is
// gone for good.
const (
	LobbyOpen    = "open"
	LobbyStarted = "started"
	LobbyClosed  = "closed"
)

// Lobby actions, as listed in a lobby's allowedActions.
const (
	LobbyActionJoin  = "join"
	LobbyActionLeave = "leave"
	LobbyActionReady = "ready"
	LobbyActionKick  = "kick"
	LobbyActionStart = "start"
	LobbyActionClose = "close"
)

// Why a lobby closed.
const (
	CloseReasonHost  = "host"
	CloseReasonEmpty = "empty"
	CloseReasonIdle  = "idle"
)

// LobbyVisibilities lists the visibilities.
var LobbyVisibilities = []string{VisibilityPublic, VisibilityFriends, VisibilityPrivate}

// LobbyStatuses lists the statuses.
var LobbyStatuses = []string{LobbyOpen, LobbyStarted, LobbyClosed}

// joinCodeAlphabet leaves out 0, O, 1 and I, which people misread.
const joinCodeAlphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"

// JoinCodeLen is the length of a join code: 32^6, about a billion codes.
const JoinCodeLen = 6

// LobbySummary is a lobby in a list.
type LobbySummary struct {
	ID          uuid.UUID `json:"id"`
	Queue       string    `json:"queue"`
	Visibility  string    `json:"visibility"`
	Status      string    `json:"status"`
	Host        PlayerRef `json:"host"`
	Capacity    int       `json:"capacity"`
	MemberCount int       `json:"memberCount"`
	CreatedAt   time.Time `json:"createdAt"`
	// ExpiresAt is when the lobby closes unless someone acts in it.
	ExpiresAt time.Time `json:"expiresAt"`
}

// Lobby is one lobby in full. Code is shown to members only.
type Lobby struct {
	LobbySummary
	Code           *string       `json:"code"`
	Members        []LobbyMember `json:"members"`
	AllowedActions []string      `json:"allowedActions"`
	UpdatedAt      time.Time     `json:"updatedAt"`
}

// LobbyMember is a member of a lobby.
type LobbyMember struct {
	Player   PlayerRef `json:"player"`
	Host     bool      `json:"host"`
	Ready    bool      `json:"ready"`
	JoinedAt time.Time `json:"joinedAt"`
}

// LobbyList is the lobby browser: lobbies the player may join, and the one
// they are in.
type LobbyList struct {
	Lobbies []LobbySummary `json:"lobbies"`
	Current *Lobby         `json:"current"`
	// NextCursor continues the list after its last lobby; empty at the end.
	NextCursor string `json:"nextCursor,omitempty"`
}

// LobbyResult is the caller's lobby after an action; nil once they are no
// longer in it.
type LobbyResult struct {
	Lobby *Lobby `json:"lobby"`
}

// CreateLobbyInput creates a lobby.
type CreateLobbyInput struct {
	Queue      string `json:"queue"`
	Visibility string `json:"visibility"`
}

// JoinLobbyInput names the lobby to join by id or by join code.
type JoinLobbyInput struct {
	LobbyID *uuid.UUID `json:"lobbyId"`
	Code    string     `json:"code"`
}

// LobbyQuery filters the lobby list.
type LobbyQuery struct {
	Queue string
	// Limit is the page size; nil means DefaultLobbyListLimit.
	Limit *int
	// Cursor continues a previous page's list.
	Cursor string
}

// lobbyCursorKind marks the lobby list's cursors.
const lobbyCursorKind = "lobby"

// The lobby list shows DefaultLobbyListLimit lobbies unless asked for up
// to MaxLobbyListLimit.
const (
	DefaultLobbyListLimit = 20
	MaxLobbyListLimit     = 100
)

func (s *Service) queue(id string) (matchmaking.Queue, bool) {
	for _, q := range s.queues {
		if q.ID == id {
			return q, true
		}
	}
	return matchmaking.Queue{}, false
}

func (s *Service) isIdle(l *LobbyRow, now time.Time) bool {
	return l.Status != LobbyClosed && now.Sub(l.ActiveAt) >= s.idle
}

func lobbyErr(kind platform.Kind, code, format string, args ...any) *platform.Error {
	return platform.Errorf(kind, code, format, args...)
}

var errLobbyNotFound = lobbyErr(platform.KindNotFound, CodeLobbyNotFound, "No such lobby")

// newJoinCode returns a random join code.
func newJoinCode() string {
	var b [JoinCodeLen]byte
	rand.Read(b[:]) //nolint:errcheck // crypto/rand.Read never fails
	for i := range b {
		b[i] = joinCodeAlphabet[int(b[i])%len(joinCodeAlphabet)]
	}
	return string(b[:])
}

// normalizeJoinCode upper-cases a typed code and drops spaces and hyphens.
func normalizeJoinCode(code string) string {
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == '-' {
			return -1
		}
		return r
	}, strings.ToUpper(strings.TrimSpace(code)))
}

// Lobbies lists the lobbies the player may join — public ones and those of
// friends who host with visibility friends — and the player's own.
func (s *Service) Lobbies(ctx context.Context, playerID uuid.UUID, q LobbyQuery) (*LobbyList, error) {
	if q.Queue != "" {
		if _, ok := s.queue(q.Queue); !ok {
			return nil, platform.Invalid("queue", fmt.Sprintf("unknown queue %.40q", q.Queue))
		}
	}
	limit, err := pageLimit(q.Limit, DefaultLobbyListLimit, MaxLobbyListLimit)
	if err != nil {
		return nil, err
	}
	now := s.clock()
	f := LobbyFilter{Viewer: playerID, Queue: q.Queue, ActiveMin: now.Add(-s.idle), Limit: limit + 1}
	if q.Cursor != "" {
		c, err := decodeCursor(q.Cursor)
		if err != nil {
			return nil, err
		}
		if c.kind != lobbyCursorKind {
			return nil, errBadCursor
		}
		f.After = &EdgeKey{Since: c.at, Other: c.id}
	}
	b, err := s.store.BrowseLobbies(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("list lobbies: %w", err)
	}
	out := &LobbyList{Lobbies: make([]LobbySummary, 0, len(b.Listings))}
	for i, l := range b.Listings {
		if i == limit { // the extra lobby only says there is more
			last := b.Listings[limit-1]
			out.NextCursor = encodeCursor(cursor{kind: lobbyCursorKind, at: last.CreatedAt, id: last.ID})
			break
		}
		out.Lobbies = append(out.Lobbies, s.summary(&l.LobbyRow, l.Host))
	}
	if b.Current != nil && !s.isIdle(b.Current, now) {
		if out.Current, err = s.viewWith(ctx, s.store, b.Current, b.Members, playerID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// CurrentLobby returns the lobby the player is in, or nil.
func (s *Service) CurrentLobby(ctx context.Context, playerID uuid.UUID) (*Lobby, error) {
	l, members, err := s.store.CurrentLobbyOf(ctx, playerID)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("current lobby: %w", err)
	}
	if s.isIdle(l, s.clock()) {
		return nil, nil // closing it is a write; the next action or the janitor does it
	}
	return s.viewWith(ctx, s.store, l, members, playerID)
}

// Lobby returns one lobby if the player is in it or may see it.
func (s *Service) Lobby(ctx context.Context, playerID, lobbyID uuid.UUID) (*Lobby, error) {
	l, err := s.store.Lobby(ctx, lobbyID)
	if errors.Is(err, ErrNotFound) {
		return nil, errLobbyNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("lobby: %w", err)
	}
	m, err := s.store.MembershipOf(ctx, playerID)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("lobby: %w", err)
	}
	if m == nil || m.LobbyID != l.ID {
		visible, err := s.visible(ctx, s.store, l, playerID, false)
		if err != nil {
			return nil, err
		}
		if !visible {
			return nil, errLobbyNotFound
		}
	}
	if s.isIdle(l, s.clock()) {
		l.Status = LobbyClosed
	}
	return s.view(ctx, s.store, l, playerID)
}

// visible decides whether a non-member may see (and join) a lobby. A join
// code opens any lobby; otherwise private lobbies are hidden, friends
// lobbies show to the host's friends, and a block either way hides the
// lobby as if it did not exist. The store's BrowseLobbies applies the same
// rule in SQL.
func (s *Service) visible(ctx context.Context, r Reader, l *LobbyRow, playerID uuid.UUID, byCode bool) (bool, error) {
	toHost, blocked, err := s.relationToHost(ctx, r, l, playerID)
	if err != nil || blocked {
		return false, err
	}
	switch {
	case byCode, l.Visibility == VisibilityPublic:
		return true, nil
	case l.Visibility == VisibilityFriends:
		return toHost == StateFriend, nil
	}
	return false, nil
}

// relationToHost returns the player's state towards the lobby's host and
// whether either of them blocked the other.
func (s *Service) relationToHost(ctx context.Context, r Reader, l *LobbyRow, playerID uuid.UUID) (string, bool, error) {
	toHost, err := r.Edge(ctx, playerID, l.HostID)
	if err != nil {
		return "", false, err
	}
	fromHost, err := r.Edge(ctx, l.HostID, playerID)
	if err != nil {
		return "", false, err
	}
	return toHost, toHost == StateBlocked || fromHost == StateBlocked, nil
}

func (s *Service) summary(l *LobbyRow, host PlayerRef) LobbySummary {
	return LobbySummary{ID: l.ID, Queue: l.QueueID, Visibility: l.Visibility, Status: l.Status, Host: host,
		Capacity: l.Capacity, MemberCount: l.MemberCount, CreatedAt: l.CreatedAt.UTC(), ExpiresAt: l.ActiveAt.Add(s.idle).UTC()}
}

// view renders a lobby for the player.
func (s *Service) view(ctx context.Context, r Reader, l *LobbyRow, playerID uuid.UUID) (*Lobby, error) {
	members, err := r.Members(ctx, l.ID)
	if err != nil {
		return nil, fmt.Errorf("lobby members: %w", err)
	}
	return s.viewWith(ctx, r, l, members, playerID)
}

// viewWith renders a lobby whose members are already loaded.
func (s *Service) viewWith(ctx context.Context, r Reader, l *LobbyRow, members []MemberRow, playerID uuid.UUID) (*Lobby, error) {
	var host PlayerRef
	v := &Lobby{Members: make([]LobbyMember, 0, len(members)), AllowedActions: []string{}, UpdatedAt: l.UpdatedAt.UTC()}
	isMember := false
	for _, m := range members {
		if m.Player.ID == l.HostID {
			host = m.Player
		}
		if m.Player.ID == playerID {
			isMember = true
		}
		v.Members = append(v.Members, LobbyMember{Player: m.Player, Host: m.Player.ID == l.HostID, Ready: m.Ready, JoinedAt: m.JoinedAt.UTC()})
	}
	if host.ID == uuid.Nil {
		h, err := r.PlayerByID(ctx, l.HostID)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return nil, fmt.Errorf("lobby host: %w", err)
		}
		if h != nil {
			host = *h
		}
	}
	v.LobbySummary = s.summary(l, host)
	if isMember {
		v.Code = l.JoinCode
		v.AllowedActions = append(v.AllowedActions, LobbyActionLeave)
		switch {
		case l.Status == LobbyOpen && l.HostID == playerID:
			v.AllowedActions = append(v.AllowedActions, LobbyActionReady, LobbyActionKick, LobbyActionStart, LobbyActionClose)
		case l.Status == LobbyOpen:
			v.AllowedActions = append(v.AllowedActions, LobbyActionReady)
		case l.Status == LobbyStarted && l.HostID == playerID:
			v.AllowedActions = append(v.AllowedActions, LobbyActionClose)
		}
	} else if l.Status == LobbyOpen && l.MemberCount < l.Capacity {
		v.AllowedActions = append(v.AllowedActions, LobbyActionJoin)
	}
	return v, nil
}

// wentIdle is returned from inside a lobby transaction that found lobbies
// gone idle: the transaction rolls back, the lobbies are closed in their
// own transaction (which must commit whatever the action's fate), and the
// action runs once more on the closed lobbies.
type wentIdle struct{ ids []uuid.UUID }

func (e *wentIdle) Error() string { return fmt.Sprintf("%d lobbies went idle", len(e.ids)) }

// checkIdle returns a *wentIdle naming those of the lobbies that went idle,
// or nil.
func (s *Service) checkIdle(now time.Time, lobbies ...*LobbyRow) error {
	var ids []uuid.UUID
	for _, l := range lobbies {
		if l != nil && s.isIdle(l, now) {
			ids = append(ids, l.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	return &wentIdle{ids: ids}
}

// lobbyTx runs fn in a transaction and, once it has committed, publishes
// the lobby changes fn recorded. Refusals are plain errors that roll fn's
// writes back. When fn reports lobbies gone idle, they are closed first in
// their own small transaction and fn runs again.
func (s *Service) lobbyTx(ctx context.Context, fn func(ctx context.Context, tx Tx, ch *lobbyChanges) error) error {
	for attempt := 0; ; attempt++ {
		var ch lobbyChanges
		err := s.store.InTx(ctx, func(ctx context.Context, tx Tx) error {
			ch = nil
			if err := fn(ctx, tx, &ch); err != nil {
				return err
			}
			return ch.addAudience(ctx, tx)
		})
		var idle *wentIdle
		switch {
		case err == nil:
			s.publishLobbies(ctx, ch)
			return nil
		case !errors.As(err, &idle):
			return err
		case attempt > 0: // closed a moment ago; cannot go idle again
			return lobbyErr(platform.KindConflict, CodeLobbyClosed, "The lobby has closed")
		}
		if _, err := s.closeIdle(ctx, idle.ids); err != nil {
			return err
		}
	}
}

// closeIdle closes those of the lobbies that are still idle and returns
// how many it closed.
func (s *Service) closeIdle(ctx context.Context, ids []uuid.UUID) (int, error) {
	var ch lobbyChanges
	err := s.store.InTx(ctx, func(ctx context.Context, tx Tx) error {
		ch = nil
		locked, err := lockLobbies(ctx, tx, ids...)
		if err != nil {
			return err
		}
		now := s.clock()
		for _, id := range ids {
			if l := locked[id]; l != nil && s.isIdle(l, now) {
				if err := s.closeTx(ctx, tx, l, CloseReasonIdle, now, &ch); err != nil {
					return err
				}
			}
		}
		return ch.addAudience(ctx, tx)
	})
	if err != nil {
		return 0, fmt.Errorf("close idle lobbies: %w", err)
	}
	s.publishLobbies(ctx, ch)
	return len(ch), nil
}

// lockLobbies locks lobbies in id order so that two transactions never
// wait on each other in a cycle, and returns them by id.
func lockLobbies(ctx context.Context, tx Tx, ids ...uuid.UUID) (map[uuid.UUID]*LobbyRow, error) {
	ids = slices.Clone(ids)
	slices.SortFunc(ids, func(a, b uuid.UUID) int { return strings.Compare(a.String(), b.String()) })
	out := make(map[uuid.UUID]*LobbyRow, len(ids))
	for _, id := range slices.Compact(ids) {
		l, err := tx.LockLobby(ctx, id)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[id] = l
	}
	return out, nil
}

// isMember reports whether the player is in the lobby.
func isMember(ctx context.Context, r Reader, lobbyID, playerID uuid.UUID) (bool, error) {
	m, err := r.MembershipOf(ctx, playerID)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return m.LobbyID == lobbyID, nil
}

// closeTx closes a lobby: every member leaves and the join code is freed.
func (s *Service) closeTx(ctx context.Context, tx Tx, l *LobbyRow, reason string, now time.Time, ch *lobbyChanges) error {
	members, err := tx.Members(ctx, l.ID)
	if err != nil {
		return err
	}
	if err := tx.DeleteMembers(ctx, l.ID); err != nil {
		return err
	}
	l.Status, l.JoinCode, l.MemberCount, l.ClosedAt, l.CloseReason, l.UpdatedAt = LobbyClosed, nil, 0, &now, reason, now
	removed := make([]uuid.UUID, 0, len(members))
	for _, m := range members {
		removed = append(removed, m.Player.ID)
	}
	ch.add(l.ID, LobbyChangeClosed, removed...)
	return tx.UpdateLobby(ctx, l)
}

// leaveTx removes a member; the earliest remaining member takes over from
// a leaving host, and the last one out closes the lobby.
func (s *Service) leaveTx(ctx context.Context, tx Tx, l *LobbyRow, playerID uuid.UUID, change string, now time.Time, ch *lobbyChanges) error {
	if err := tx.DeleteMember(ctx, l.ID, playerID); err != nil {
		return err
	}
	ch.add(l.ID, change, playerID)
	l.MemberCount--
	if l.MemberCount <= 0 {
		return s.closeTx(ctx, tx, l, CloseReasonEmpty, now, ch)
	}
	if l.HostID == playerID {
		members, err := tx.Members(ctx, l.ID)
		if err != nil {
			return err
		}
		if len(members) == 0 {
			return s.closeTx(ctx, tx, l, CloseReasonEmpty, now, ch)
		}
		l.HostID = members[0].Player.ID
		ch.add(l.ID, LobbyChangeHost)
	}
	l.ActiveAt, l.UpdatedAt = now, now
	return tx.UpdateLobby(ctx, l)
}

func (s *Service) requireDeck(ctx context.Context, r Reader, cat *Catalog, q matchmaking.Queue, players ...uuid.UUID) error {
	if !q.RequiresValidDeck {
		return nil
	}
	var missing []string
	for _, p := range players {
		ok, err := s.defaultDeckValid(ctx, r, cat, p)
		if err != nil {
			return err
		}
		if !ok {
			missing = append(missing, p.String())
		}
	}
	if len(missing) > 0 {
		return platform.Errorf(platform.KindUnprocessable, CodeLobbyDeckRequired,
			"Queue %s needs every member to have a valid default deck", q.ID).WithDetails("players", missing)
	}
	return nil
}

func errAlreadyMember(current *LobbyRow) error {
	return lobbyErr(platform.KindConflict, CodeLobbyAlreadyMember, "You are already in a lobby; leave it first").
		WithDetails("lobbyId", current.ID.String())
}

// CreateLobby opens a lobby for a queue preset with the player as host.
func (s *Service) CreateLobby(ctx context.Context, playerID uuid.UUID, in CreateLobbyInput) (*LobbyResult, error) {
	fields := platform.FieldErrors{}
	q, ok := s.queue(in.Queue)
	if !ok {
		fields.Add("queue", fmt.Sprintf("unknown queue %.40q", in.Queue))
	}
	if !slices.Contains(LobbyVisibilities, in.Visibility) {
		fields.Add("visibility", "must be public, friends or private")
	}
	if err := fields.Err(); err != nil {
		return nil, err
	}
	if !q.Enabled {
		return nil, platform.Errorf(platform.KindUnprocessable, CodeQueueDisabled, "Queue %s is closed right now", q.ID)
	}
	cat, err := s.Catalog(ctx)
	if err != nil {
		return nil, err
	}
	var res *LobbyResult
	err = s.lobbyTx(ctx, func(ctx context.Context, tx Tx, ch *lobbyChanges) error {
		if err := s.grantStarterTx(ctx, tx, cat, playerID); err != nil {
			return err
		}
		now := s.clock()
		current, err := s.currentRow(ctx, tx, playerID)
		if err != nil {
			return err
		}
		if err := s.checkIdle(now, current); err != nil {
			return err
		}
		if current != nil {
			return errAlreadyMember(current)
		}
		if err := s.requireDeck(ctx, tx, cat, q, playerID); err != nil {
			return err
		}
		res, err = s.insertLobby(ctx, tx, q, in.Visibility, playerID, now, ch)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("create lobby: %w", err)
	}
	return res, nil
}

// insertLobby writes a new lobby with a fresh join code and its host.
func (s *Service) insertLobby(ctx context.Context, tx Tx, q matchmaking.Queue, visibility string, playerID uuid.UUID, now time.Time, ch *lobbyChanges) (*LobbyResult, error) {
	l := &LobbyRow{ID: uuid.New(), QueueID: q.ID, Visibility: visibility, Status: LobbyOpen, HostID: playerID,
		Capacity: q.PartySize.Max, MemberCount: 1, CreatedAt: now, UpdatedAt: now, ActiveAt: now}
	for attempt := 0; ; attempt++ {
		code := newJoinCode()
		l.JoinCode = &code
		err := tx.InsertLobby(ctx, l)
		if err == nil {
			break
		}
		if !errors.Is(err, ErrDuplicate) || attempt == 5 {
			return nil, err
		}
	}
	if err := tx.InsertMember(ctx, &MemberRow{LobbyID: l.ID, Player: PlayerRef{ID: playerID}, JoinedAt: now}); err != nil {
		return nil, err
	}
	ch.add(l.ID, LobbyChangeCreated)
	v, err := s.view(ctx, tx, l, playerID)
	return &LobbyResult{Lobby: v}, err
}

// currentRow returns the lobby the player is in, locked, or nil.
func (s *Service) currentRow(ctx context.Context, tx Tx, playerID uuid.UUID) (*LobbyRow, error) {
	m, err := tx.MembershipOf(ctx, playerID)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return tx.LockLobby(ctx, m.LobbyID)
}

// joinInput checks a join request and returns its normalised code.
func joinInput(in JoinLobbyInput) (string, error) {
	code := normalizeJoinCode(in.Code)
	switch {
	case (in.LobbyID == nil) == (code == ""):
		return "", platform.Invalid("lobbyId", "give either lobbyId or code")
	case code != "" && (len(code) != JoinCodeLen || strings.Trim(code, joinCodeAlphabet) != ""):
		return "", platform.Invalid("code", fmt.Sprintf("must be %d characters from %s", JoinCodeLen, joinCodeAlphabet))
	}
	return code, nil
}

// joining is a join resolved: the target and the player's current lobby,
// both locked.
type joining struct {
	player  uuid.UUID
	byCode  bool
	target  *LobbyRow
	current *LobbyRow // nil when the player is in no lobby
	now     time.Time
}

// JoinLobby adds the player to a lobby, by id or by join code. Joining the
// lobby one is in answers it unchanged. The lobby row is locked while its
// member count is checked and raised, so racing joins never overfill it.
func (s *Service) JoinLobby(ctx context.Context, playerID uuid.UUID, in JoinLobbyInput) (*LobbyResult, error) {
	code, err := joinInput(in)
	if err != nil {
		return nil, err
	}
	cat, err := s.Catalog(ctx)
	if err != nil {
		return nil, err
	}
	var res *LobbyResult
	err = s.lobbyTx(ctx, func(ctx context.Context, tx Tx, ch *lobbyChanges) error {
		if err := s.grantStarterTx(ctx, tx, cat, playerID); err != nil {
			return err
		}
		j, err := s.resolveJoin(ctx, tx, playerID, in.LobbyID, code)
		if err != nil {
			return err
		}
		if j.current != nil && j.current.ID == j.target.ID && j.target.Status != LobbyClosed {
			v, err := s.view(ctx, tx, j.target, playerID)
			res = &LobbyResult{Lobby: v}
			return err
		}
		if err := s.checkJoin(ctx, tx, cat, j); err != nil {
			return err
		}
		res, err = s.applyJoin(ctx, tx, j, ch)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("join lobby: %w", err)
	}
	return res, nil
}

// resolveJoin finds and locks the target and the player's current lobby.
// It reports lobbies gone idle (see lobbyTx) before anything is decided.
func (s *Service) resolveJoin(ctx context.Context, tx Tx, playerID uuid.UUID, lobbyID *uuid.UUID, code string) (*joining, error) {
	var targetID uuid.UUID
	if lobbyID != nil {
		targetID = *lobbyID
	} else {
		l, err := tx.LobbyByCode(ctx, code)
		if errors.Is(err, ErrNotFound) {
			return nil, errLobbyNotFound
		}
		if err != nil {
			return nil, err
		}
		targetID = l.ID
	}
	ids := []uuid.UUID{targetID}
	m, err := tx.MembershipOf(ctx, playerID)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	if m != nil {
		ids = append(ids, m.LobbyID)
	}
	locked, err := lockLobbies(ctx, tx, ids...)
	if err != nil {
		return nil, err
	}
	j := &joining{player: playerID, byCode: code != "", target: locked[targetID], now: s.clock()}
	if j.target == nil {
		return nil, errLobbyNotFound
	}
	if m != nil {
		j.current = locked[m.LobbyID]
	}
	return j, s.checkIdle(j.now, j.target, j.current)
}

// checkJoin refuses a join the player may not make: a lobby they may not
// see is not found, and one cannot be in two lobbies.
func (s *Service) checkJoin(ctx context.Context, tx Tx, cat *Catalog, j *joining) error {
	if ok, err := s.visible(ctx, tx, j.target, j.player, j.byCode); err != nil || !ok {
		return cmpErr(err, errLobbyNotFound)
	}
	if j.current != nil {
		return errAlreadyMember(j.current)
	}
	switch j.target.Status {
	case LobbyClosed:
		return lobbyErr(platform.KindConflict, CodeLobbyClosed, "The lobby has closed")
	case LobbyStarted:
		return lobbyErr(platform.KindConflict, CodeLobbyStarted, "The lobby has already started")
	}
	if j.target.MemberCount >= j.target.Capacity {
		return lobbyErr(platform.KindConflict, CodeLobbyFull, "The lobby is full (%d of %d)", j.target.MemberCount, j.target.Capacity).
			WithDetails("capacity", j.target.Capacity)
	}
	if q, ok := s.queue(j.target.QueueID); ok {
		return s.requireDeck(ctx, tx, cat, q, j.player)
	}
	return nil
}

// cmpErr returns err, or fallback when err is nil.
func cmpErr(err, fallback error) error {
	if err != nil {
		return err
	}
	return fallback
}

// applyJoin adds the player to the target.
func (s *Service) applyJoin(ctx context.Context, tx Tx, j *joining, ch *lobbyChanges) (*LobbyResult, error) {
	t := j.target
	if err := tx.InsertMember(ctx, &MemberRow{LobbyID: t.ID, Player: PlayerRef{ID: j.player}, JoinedAt: j.now}); err != nil {
		return nil, err
	}
	t.MemberCount++
	t.ActiveAt, t.UpdatedAt = j.now, j.now
	if err := tx.UpdateLobby(ctx, t); err != nil {
		return nil, err
	}
	ch.add(t.ID, LobbyChangeJoined)
	v, err := s.view(ctx, tx, t, j.player)
	return &LobbyResult{Lobby: v}, err
}

// memberAction runs fn on a lobby, locked, for a player who may see it;
// a lobby gone idle is closed first (see lobbyTx). It answers the lobby
// as the player sees it afterwards, or no lobby once they are out of it.
func (s *Service) memberAction(ctx context.Context, playerID, lobbyID uuid.UUID,
	fn func(ctx context.Context, tx Tx, l *LobbyRow, now time.Time, ch *lobbyChanges) error) (*LobbyResult, error) {
	var res *LobbyResult
	err := s.lobbyTx(ctx, func(ctx context.Context, tx Tx, ch *lobbyChanges) error {
		now := s.clock()
		l, err := s.lockForAction(ctx, tx, playerID, lobbyID, now)
		if err != nil {
			return err
		}
		if err := fn(ctx, tx, l, now, ch); err != nil {
			return err
		}
		res = &LobbyResult{}
		if in, err := isMember(ctx, tx, l.ID, playerID); err != nil || !in {
			return err
		}
		res.Lobby, err = s.view(ctx, tx, l, playerID)
		return err
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// lockForAction locks the player's profile and the lobby. A block hides
// the lobby from a non-member on every route, as it does from the list
// and from GET.
func (s *Service) lockForAction(ctx context.Context, tx Tx, playerID, lobbyID uuid.UUID, now time.Time) (*LobbyRow, error) {
	if err := tx.EnsureProfiles(ctx, now, playerID); err != nil {
		return nil, err
	}
	if err := tx.LockProfiles(ctx, playerID); err != nil {
		return nil, err
	}
	l, err := tx.LockLobby(ctx, lobbyID)
	if errors.Is(err, ErrNotFound) {
		return nil, errLobbyNotFound
	}
	if err != nil {
		return nil, err
	}
	in, err := isMember(ctx, tx, l.ID, playerID)
	if err != nil {
		return nil, err
	}
	if !in {
		_, blocked, err := s.relationToHost(ctx, tx, l, playerID)
		if err != nil || blocked {
			return nil, cmpErr(err, errLobbyNotFound)
		}
	}
	return l, s.checkIdle(now, l)
}

// requireMember fails unless the player is in the lobby.
func requireMember(ctx context.Context, tx Tx, l *LobbyRow, playerID uuid.UUID) error {
	in, err := isMember(ctx, tx, l.ID, playerID)
	switch {
	case err != nil:
		return err
	case in:
		return nil
	case l.Status == LobbyClosed:
		return lobbyErr(platform.KindConflict, CodeLobbyClosed, "The lobby has closed")
	}
	return lobbyErr(platform.KindForbidden, CodeLobbyNotMember, "You are not in this lobby")
}

func requireHost(ctx context.Context, tx Tx, l *LobbyRow, playerID uuid.UUID) error {
	if err := requireMember(ctx, tx, l, playerID); err != nil {
		return err
	}
	if l.HostID != playerID {
		return lobbyErr(platform.KindForbidden, CodeLobbyNotHost, "Only the host can do that")
	}
	return nil
}

// LeaveLobby takes the player out of a lobby. Leaving a lobby one is not in
// changes nothing.
func (s *Service) LeaveLobby(ctx context.Context, playerID, lobbyID uuid.UUID) (*LobbyResult, error) {
	res, err := s.memberAction(ctx, playerID, lobbyID, func(ctx context.Context, tx Tx, l *LobbyRow, now time.Time, ch *lobbyChanges) error {
		if in, err := isMember(ctx, tx, l.ID, playerID); err != nil || !in {
			return err
		}
		return s.leaveTx(ctx, tx, l, playerID, LobbyChangeLeft, now, ch)
	})
	if err != nil {
		return nil, fmt.Errorf("leave lobby: %w", err)
	}
	return res, nil
}

// SetReady marks the player ready or not. In a queue that needs decks,
// only a player with a valid default deck can be ready.
func (s *Service) SetReady(ctx context.Context, playerID, lobbyID uuid.UUID, ready bool) (*LobbyResult, error) {
	cat, err := s.Catalog(ctx)
	if err != nil {
		return nil, err
	}
	res, err := s.memberAction(ctx, playerID, lobbyID, func(ctx context.Context, tx Tx, l *LobbyRow, now time.Time, ch *lobbyChanges) error {
		if err := requireMember(ctx, tx, l, playerID); err != nil {
			return err
		}
		if l.Status != LobbyOpen {
			return lobbyErr(platform.KindConflict, CodeLobbyStarted, "The lobby has already started")
		}
		if q, ok := s.queue(l.QueueID); ok && ready {
			if err := s.requireDeck(ctx, tx, cat, q, playerID); err != nil {
				return err
			}
		}
		if err := tx.SetReady(ctx, l.ID, playerID, ready); err != nil {
			return err
		}
		l.ActiveAt, l.UpdatedAt = now, now
		ch.add(l.ID, LobbyChangeReady)
		return tx.UpdateLobby(ctx, l)
	})
	if err != nil {
		return nil, fmt.Errorf("ready: %w", err)
	}
	return res, nil
}

// KickFromLobby removes another member; only the host may. Kicking someone
// who is not in the lobby changes nothing.
func (s *Service) KickFromLobby(ctx context.Context, playerID, lobbyID, targetID uuid.UUID) (*LobbyResult, error) {
	if targetID == playerID {
		return nil, platform.Invalid("playerId", "you cannot kick yourself; leave instead")
	}
	res, err := s.memberAction(ctx, playerID, lobbyID, func(ctx context.Context, tx Tx, l *LobbyRow, now time.Time, ch *lobbyChanges) error {
		if err := requireHost(ctx, tx, l, playerID); err != nil {
			return err
		}
		if in, err := isMember(ctx, tx, l.ID, targetID); err != nil || !in {
			return err
		}
		return s.leaveTx(ctx, tx, l, targetID, LobbyChangeKicked, now, ch)
	})
	if err != nil {
		return nil, fmt.Errorf("kick: %w", err)
	}
	return res, nil
}

// StartLobby sends the lobby to matchmaking; only the host may, once every
// other member is ready and, for queues that need them, every member has a
// valid default deck. Starting a started lobby changes nothing.
func (s *Service) StartLobby(ctx context.Context, playerID, lobbyID uuid.UUID) (*LobbyResult, error) {
	cat, err := s.Catalog(ctx)
	if err != nil {
		return nil, err
	}
	res, err := s.memberAction(ctx, playerID, lobbyID, func(ctx context.Context, tx Tx, l *LobbyRow, now time.Time, ch *lobbyChanges) error {
		if err := requireHost(ctx, tx, l, playerID); err != nil {
			return err
		}
		if l.Status == LobbyStarted {
			return nil
		}
		q, ok := s.queue(l.QueueID)
		if !ok || !q.Enabled {
			return platform.Errorf(platform.KindUnprocessable, CodeQueueDisabled, "Queue %s is closed right now", l.QueueID)
		}
		members, err := tx.Members(ctx, l.ID)
		if err != nil {
			return err
		}
		var notReady, all []uuid.UUID
		for _, m := range members {
			all = append(all, m.Player.ID)
			if !m.Ready && m.Player.ID != l.HostID {
				notReady = append(notReady, m.Player.ID)
			}
		}
		if len(notReady) > 0 {
			return platform.Errorf(platform.KindConflict, CodeLobbyNotReady, "%d members are not ready", len(notReady)).
				WithDetails("players", notReady)
		}
		if err := s.requireDeck(ctx, tx, cat, q, all...); err != nil {
			return err
		}
		l.Status, l.ActiveAt, l.UpdatedAt = LobbyStarted, now, now
		ch.add(l.ID, LobbyChangeStarted)
		return tx.UpdateLobby(ctx, l)
	})
	if err != nil {
		return nil, fmt.Errorf("start lobby: %w", err)
	}
	return res, nil
}

// CloseLobby closes the lobby for everyone; only the host may. Closing a
// closed lobby changes nothing.
func (s *Service) CloseLobby(ctx context.Context, playerID, lobbyID uuid.UUID) (*LobbyResult, error) {
	res, err := s.memberAction(ctx, playerID, lobbyID, func(ctx context.Context, tx Tx, l *LobbyRow, now time.Time, ch *lobbyChanges) error {
		if l.Status == LobbyClosed {
			return nil
		}
		if err := requireHost(ctx, tx, l, playerID); err != nil {
			return err
		}
		return s.closeTx(ctx, tx, l, CloseReasonHost, now, ch)
	})
	if err != nil {
		return nil, fmt.Errorf("close lobby: %w", err)
	}
	return res, nil
}

// ClosedLobbyRetention is how long a closed lobby stays readable (as
// closed) before the sweep deletes it.
const ClosedLobbyRetention = 24 * time.Hour

// CloseIdleLobbies closes lobbies nobody acted in for the idle timeout
// and returns how many it closed. Serve runs it periodically (a separate
// sweep deletes those closed longer than ClosedLobbyRetention); every
// other path also treats an idle lobby as closed, so correctness never
// waits for it.
func (s *Service) CloseIdleLobbies(ctx context.Context) (int, error) {
	closed := 0
	for {
		now := s.clock()
		var ids []uuid.UUID
		err := s.store.InTx(ctx, func(ctx context.Context, tx Tx) error {
			var err error
			ids, err = tx.IdleLobbies(ctx, now.Add(-s.idle), 100)
			return err
		})
		if err != nil {
			return closed, fmt.Errorf("find idle lobbies: %w", err)
		}
		for _, id := range ids {
			n, err := s.closeIdle(ctx, []uuid.UUID{id})
			if err != nil {
				return closed, fmt.Errorf("close idle lobby %s: %w", id, err)
			}
			closed += n
		}
		if len(ids) < 100 {
			return closed, nil
		}
	}
}
