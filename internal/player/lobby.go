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
	t.touch(j.now)
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
		l.touch(now)
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
		l.Status = LobbyStarted
		l.touch(now)
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
