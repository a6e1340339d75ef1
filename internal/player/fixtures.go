package player

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// FixtureDeck is a deck a fixture gives a player.
type FixtureDeck struct {
	Name    string
	Cards   []CardCount
	Default bool
}

// SeedPlayerTx gives a fixture player the starter decks and the fixture's
// own decks, and makes the fixture's default deck the default. Decks the
// player already has (a starter deck, say) are left as they are, but the
// fixture's default still becomes the default.
func (s *Service) SeedPlayerTx(ctx context.Context, tx Tx, cat *Catalog, playerID uuid.UUID, decks []FixtureDeck) error {
	if err := s.grantStarterTx(ctx, tx, cat, playerID); err != nil {
		return err
	}
	now := s.clock()
	for _, d := range decks {
		if problems := cat.CheckDeck(d.Cards); len(problems) > 0 {
			return fmt.Errorf("fixture deck %q: %s", d.Name, problems[0].Message)
		}
		code, err := EncodeDeck(d.Cards)
		if err != nil {
			return fmt.Errorf("fixture deck %q: %w", d.Name, err)
		}
		row := &DeckRow{ID: uuid.New(), UserID: playerID, Name: d.Name, Code: code, Source: SourceFixture, CreatedAt: now, UpdatedAt: now}
		switch err := tx.InsertDeck(ctx, row); {
		case errors.Is(err, ErrDuplicate):
			if !d.Default {
				continue
			}
			rows, err := tx.Decks(ctx, playerID)
			if err != nil {
				return err
			}
			if row = findDeck(rows, func(r DeckRow) bool { return r.Code == code }); row == nil {
				return fmt.Errorf("fixture deck %q: code %s is taken but not among the player's decks", d.Name, code)
			}
		case err != nil:
			return err
		}
		if d.Default {
			if err := tx.SetDefaultDeck(ctx, playerID, &row.ID, now); err != nil {
				return err
			}
		}
		now = now.Add(time.Microsecond)
	}
	return nil
}

// SeedRelationTx sets up a fixture relationship from a's side: friend,
// outgoing (a asked b) or blocked (a blocked b). It applies only between
// players who have no relationship yet and reports whether it did, so a
// relationship players changed is never overwritten.
func (s *Service) SeedRelationTx(ctx context.Context, tx Tx, a, b uuid.UUID, state string) (bool, error) {
	now := s.clock()
	if err := tx.EnsureProfiles(ctx, now, a, b); err != nil {
		return false, err
	}
	if err := tx.LockProfiles(ctx, a, b); err != nil {
		return false, err
	}
	ab, err := tx.Edge(ctx, a, b)
	if err != nil {
		return false, err
	}
	ba, err := tx.Edge(ctx, b, a)
	if err != nil {
		return false, err
	}
	if ab != StateNone || ba != StateNone {
		return false, nil
	}
	switch state {
	case StateFriend:
		if err := tx.SetEdge(ctx, a, b, StateFriend, now); err != nil {
			return false, err
		}
		return true, tx.SetEdge(ctx, b, a, StateFriend, now)
	case StateOutgoing:
		if err := tx.SetEdge(ctx, a, b, StateOutgoing, now); err != nil {
			return false, err
		}
		return true, tx.SetEdge(ctx, b, a, StateIncoming, now)
	case StateBlocked:
		return true, tx.SetEdge(ctx, a, b, StateBlocked, now)
	}
	return false, fmt.Errorf("fixture relationship state %q", state)
}

// SeedLobbyTx opens a fixture lobby hosted by host with members, unless
// one of them is already in a lobby; it reports whether it did.
func (s *Service) SeedLobbyTx(ctx context.Context, tx Tx, host uuid.UUID, queueID, visibility string, members []uuid.UUID) (bool, error) {
	q, ok := s.queue(queueID)
	if !ok {
		return false, fmt.Errorf("fixture lobby: unknown queue %q", queueID)
	}
	if 1+len(members) > q.PartySize.Max {
		return false, fmt.Errorf("fixture lobby: %d players exceed the party size %d of %s", 1+len(members), q.PartySize.Max, q.ID)
	}
	now := s.clock()
	everyone := append([]uuid.UUID{host}, members...)
	if err := tx.EnsureProfiles(ctx, now, everyone...); err != nil {
		return false, err
	}
	if err := tx.LockProfiles(ctx, everyone...); err != nil {
		return false, err
	}
	for _, p := range everyone {
		m, err := tx.MembershipOf(ctx, p)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return false, err
		}
		if m != nil {
			return false, nil
		}
	}
	code := newJoinCode()
	l := &LobbyRow{ID: uuid.New(), JoinCode: &code, QueueID: q.ID, Visibility: visibility, Status: LobbyOpen, HostID: host,
		Capacity: q.PartySize.Max, MemberCount: len(everyone), CreatedAt: now, UpdatedAt: now, ActiveAt: now}
	if err := tx.InsertLobby(ctx, l); err != nil {
		return false, err
	}
	for i, p := range everyone {
		if err := tx.InsertMember(ctx, &MemberRow{LobbyID: l.ID, Player: PlayerRef{ID: p}, JoinedAt: now.Add(time.Duration(i) * time.Microsecond)}); err != nil {
			return false, err
		}
	}
	return true, nil
}
