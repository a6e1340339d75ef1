package player

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// What changed in a lobby, as lobby events name it.
const (
	LobbyChangeCreated = "created"
	LobbyChangeJoined  = "member_joined"
	LobbyChangeLeft    = "member_left"
	LobbyChangeKicked  = "member_kicked"
	LobbyChangeReady   = "ready_changed"
	LobbyChangeHost    = "host_changed"
	LobbyChangeStarted = "started"
	LobbyChangeClosed  = "closed"
)

// LobbyChanges lists the lobby changes.
var LobbyChanges = []string{LobbyChangeCreated, LobbyChangeJoined, LobbyChangeLeft, LobbyChangeKicked,
	LobbyChangeReady, LobbyChangeHost, LobbyChangeStarted, LobbyChangeClosed}

// LobbyChange is a committed change to one lobby. Removed names the players the
// change took out of it: they hear of it once more, after which the lobby
// is no longer theirs. Audience is Removed and the members at commit, so
// that a process with none of them connected skips it without a query.
type LobbyChange struct {
	LobbyID  uuid.UUID
	Change   string
	Removed  []uuid.UUID
	Audience []uuid.UUID
	// State is the lobby as the change's transaction left it, when the
	// change is known in the process that made it; LobbyUpdates then
	// renders it without reading the lobby again.
	State *LobbyState
}

// LobbyState is a lobby with its members; Lobby is nil when the lobby is
// gone.
type LobbyState struct {
	Lobby   *LobbyRow
	Members []MemberRow
}

// SocialChange is a committed social action. TargetSees is false when the
// target must not learn of it (a block, an unblock, or anything done by a
// player the target blocked).
type SocialChange struct {
	Actor, Target uuid.UUID
	Action        string
	TargetSees    bool
}

// Events hears of committed changes so that live streams can follow them.
// It must not block: a slow listener never slows an action.
type Events interface {
	LobbyChanged(ctx context.Context, c LobbyChange)
	SocialChanged(ctx context.Context, c SocialChange)
}

type noEvents struct{}

func (noEvents) LobbyChanged(context.Context, LobbyChange)   {}
func (noEvents) SocialChanged(context.Context, SocialChange) {}

// lobbyChanges collects a transaction's lobby changes, published once it
// has committed.
type lobbyChanges []LobbyChange

// add records a change; a second change to the same lobby in one
// transaction merges into the first, keeping the later name.
func (c *lobbyChanges) add(lobbyID uuid.UUID, change string, removed ...uuid.UUID) {
	for i := range *c {
		if (*c)[i].LobbyID == lobbyID {
			(*c)[i].Change = change
			(*c)[i].Removed = append((*c)[i].Removed, removed...)
			return
		}
	}
	*c = append(*c, LobbyChange{LobbyID: lobbyID, Change: change, Removed: removed})
}

// addState reads each changed lobby as its transaction leaves it, in one
// statement per lobby, and names the change's audience from it.
func (c lobbyChanges) addState(ctx context.Context, tx Tx) error {
	for i := range c {
		l, members, err := tx.LobbyWithMembers(ctx, c[i].LobbyID)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		c[i].State = &LobbyState{Lobby: l, Members: members}
		c[i].Audience = append([]uuid.UUID(nil), c[i].Removed...)
		for _, m := range members {
			if !containsID(c[i].Audience, m.Player.ID) {
				c[i].Audience = append(c[i].Audience, m.Player.ID)
			}
		}
	}
	return nil
}

// commitLobbies runs fn in a transaction and, once it has committed,
// publishes the lobby changes fn recorded with the state it left.
func (s *Service) commitLobbies(ctx context.Context, fn func(ctx context.Context, tx Tx, ch *lobbyChanges) error) (lobbyChanges, error) {
	var ch lobbyChanges
	err := s.store.InTx(ctx, func(ctx context.Context, tx Tx) error {
		ch = nil
		if err := fn(ctx, tx, &ch); err != nil {
			return err
		}
		return ch.addState(ctx, tx)
	})
	if err != nil {
		return nil, err
	}
	for _, c := range ch {
		s.events.LobbyChanged(ctx, c)
	}
	return ch, nil
}

// LobbyUpdate is the payload of a lobby.updated event: the lobby as the
// recipient sees it, or no lobby once they are out of it.
type LobbyUpdate struct {
	LobbyID uuid.UUID `json:"lobbyId"`
	Change  string    `json:"change"`
	Lobby   *Lobby    `json:"lobby"`
	// Version is the lobby's UpdatedAt in the state shown, also to a
	// player it removed: it grows with every change of the lobby.
	Version time.Time `json:"-"`
}

// LobbyUpdates renders a committed lobby change for each recipient who is
// in the lobby or was removed by the change; others get nothing, so no one
// hears of a lobby they are no longer in. The lobby is the change's State,
// or without one as committed now.
func (s *Service) LobbyUpdates(ctx context.Context, c LobbyChange, recipients []uuid.UUID) (map[uuid.UUID]*LobbyUpdate, error) {
	state := c.State
	if state == nil {
		l, members, err := s.store.LobbyWithMembers(ctx, c.LobbyID)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return nil, fmt.Errorf("lobby update: %w", err)
		}
		state = &LobbyState{Lobby: l, Members: members}
	}
	l, members := state.Lobby, state.Members
	if l == nil {
		return nil, nil
	}
	out := make(map[uuid.UUID]*LobbyUpdate, len(recipients))
	for _, r := range recipients {
		switch {
		case hasMember(members, r):
			v, err := s.viewWith(ctx, s.store, l, members, r)
			if err != nil {
				return nil, err
			}
			out[r] = &LobbyUpdate{LobbyID: l.ID, Change: c.Change, Lobby: v, Version: l.UpdatedAt}
		case containsID(c.Removed, r):
			out[r] = &LobbyUpdate{LobbyID: l.ID, Change: c.Change, Version: l.UpdatedAt}
		}
	}
	return out, nil
}

func hasMember(members []MemberRow, id uuid.UUID) bool {
	for _, m := range members {
		if m.Player.ID == id {
			return true
		}
	}
	return false
}

func containsID(ids []uuid.UUID, id uuid.UUID) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// SocialUpdate is the payload of a social.updated event: the recipient's
// relation with another player after an action by either of them.
type SocialUpdate struct {
	Action         string    `json:"action"`
	Player         PlayerRef `json:"player"`
	State          string    `json:"state"`
	AllowedActions []string  `json:"allowedActions"`
}

// SocialUpdateFor renders a committed social action for recipient, one of
// its two players; nil when the recipient may not hear of it.
func (s *Service) SocialUpdateFor(ctx context.Context, c SocialChange, recipient uuid.UUID) (*SocialUpdate, error) {
	other := c.Target
	switch recipient {
	case c.Actor:
	case c.Target:
		if !c.TargetSees {
			return nil, nil
		}
		other = c.Actor
	default:
		return nil, nil
	}
	state, err := s.store.Edge(ctx, recipient, other)
	if err != nil {
		return nil, fmt.Errorf("social update: %w", err)
	}
	if recipient == c.Target {
		if back, err := s.store.Edge(ctx, other, recipient); err != nil || back == StateBlocked {
			return nil, err // blocked since: say nothing
		}
	}
	p, err := s.store.PlayerByID(ctx, other)
	if err != nil {
		return nil, fmt.Errorf("social update: %w", err)
	}
	return &SocialUpdate{Action: c.Action, Player: *p, State: state, AllowedActions: AllowedActions(state)}, nil
}

// Snapshot is what an event stream starts with: the player's lobby and
// social summary, enough for a client that missed events to be right
// again.
type Snapshot struct {
	Lobby  *Lobby         `json:"lobby"`
	Social *SocialSummary `json:"social"`
}

// SnapshotOf returns the player's snapshot.
func (s *Service) SnapshotOf(ctx context.Context, playerID uuid.UUID) (*Snapshot, error) {
	l, err := s.CurrentLobby(ctx, playerID)
	if err != nil {
		return nil, err
	}
	social, err := s.SocialSummary(ctx, playerID)
	if err != nil {
		return nil, err
	}
	return &Snapshot{Lobby: l, Social: social}, nil
}
