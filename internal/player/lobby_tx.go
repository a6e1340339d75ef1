// The transactions lobby actions run in: idle lobbies closed on the way,
// rows locked in order, and the steps (close, leave, deck check) actions share.

package player

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/matchmaking"
	"github.com/towerdefence/platformctl/internal/platform"
)

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

// lobbyTx runs fn in a transaction that tells s.events of the lobby
// changes fn recorded (commitLobbies). Refusals are plain errors that roll
// fn's writes back. When fn reports lobbies gone idle, they are closed
// first in their own small transaction and fn runs again.
func (s *Service) lobbyTx(ctx context.Context, fn func(ctx context.Context, tx Tx, ch *lobbyChanges) error) error {
	for attempt := 0; ; attempt++ {
		_, err := s.commitLobbies(ctx, fn)
		var idle *wentIdle
		switch {
		case err == nil:
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
	ch, err := s.commitLobbies(ctx, func(ctx context.Context, tx Tx, ch *lobbyChanges) error {
		locked, err := lockLobbies(ctx, tx, ids...)
		if err != nil {
			return err
		}
		now := s.clock()
		for _, id := range ids {
			if l := locked[id]; l != nil && s.isIdle(l, now) {
				if err := s.closeTx(ctx, tx, l, CloseReasonIdle, now, ch); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("close idle lobbies: %w", err)
	}
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
	l.Status, l.JoinCode, l.MemberCount, l.ClosedAt, l.CloseReason = LobbyClosed, nil, 0, &now, reason
	l.changed(now)
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
	l.touch(now)
	return tx.UpdateLobby(ctx, l)
}

// touch records a member's action at now: the lobby is active again, and
// it changed.
func (l *LobbyRow) touch(now time.Time) {
	l.ActiveAt = now
	l.changed(now)
}

// changed moves UpdatedAt to now, or just past the lobby's previous change
// when the clock of the process that made that one ran ahead of this one.
// Under the lobby's lock UpdatedAt thus grows with every change, which
// orders the lobby's states: event streams drop a state older than one
// they have sent.
func (l *LobbyRow) changed(now time.Time) {
	if !now.After(l.UpdatedAt) {
		now = l.UpdatedAt.Add(time.Microsecond)
	}
	l.UpdatedAt = now
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
