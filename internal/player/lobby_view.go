// Reading lobbies: the list, one lobby, and how each is shown to a player.

package player

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/platform"
)

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
