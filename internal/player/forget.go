package player

import (
	"context"

	"github.com/google/uuid"
)

// LeaveForGoodTx takes a player whose account is being deleted out of
// their lobby inside tx: a hosted lobby passes to the earliest remaining
// member, or closes when none remains. The returned function tells the
// members through their streams and must be called once tx committed.
func (s *Service) LeaveForGoodTx(ctx context.Context, tx Tx, playerID uuid.UUID) (func(context.Context), error) {
	if err := tx.LockProfiles(ctx, playerID); err != nil {
		return nil, err
	}
	l, err := s.currentRow(ctx, tx, playerID)
	if err != nil {
		return nil, err
	}
	var ch lobbyChanges
	if l != nil && l.Status != LobbyClosed {
		if err := s.leaveTx(ctx, tx, l, playerID, LobbyChangeLeft, s.clock(), &ch); err != nil {
			return nil, err
		}
		if err := ch.addState(ctx, tx); err != nil {
			return nil, err
		}
	}
	return func(ctx context.Context) {
		for _, c := range ch {
			s.events.LobbyChanged(ctx, c)
		}
	}, nil
}
