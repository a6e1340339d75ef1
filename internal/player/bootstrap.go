package player

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/liveops"
)

// LiveOps evaluates the live-ops configuration for one player.
type LiveOps interface {
	Evaluate(ctx context.Context, s liveops.Subject) (*liveops.Evaluation, error)
}

// Viewer is the signed-in player a bootstrap is for.
type Viewer struct {
	ID        uuid.UUID
	Nickname  string
	CreatedAt time.Time
}

// Bootstrap is everything a client needs on start, in one round trip.
type Bootstrap struct {
	ServerTime time.Time           `json:"serverTime"`
	Catalog    CatalogRef          `json:"catalog"`
	Decks      *DeckList           `json:"decks"`
	Social     *SocialSummary      `json:"social"`
	Lobby      *Lobby              `json:"lobby"`
	Queues     []Queue             `json:"queues"`
	LiveOps    *liveops.Evaluation `json:"liveops"`
}

// CatalogRef tells the client whether its cached catalog is current.
type CatalogRef struct {
	Version int    `json:"version"`
	ETag    string `json:"etag"`
}

// Bootstrap assembles the player's start-up state.
func (s *Service) Bootstrap(ctx context.Context, v Viewer) (*Bootstrap, error) {
	cat, err := s.Catalog(ctx)
	if err != nil {
		return nil, err
	}
	b := &Bootstrap{ServerTime: s.clock(), Catalog: CatalogRef{Version: cat.Version, ETag: cat.ETag}, Queues: s.queueList()}
	if b.Decks, err = s.deckList(ctx, cat, v.ID); err != nil {
		return nil, err
	}
	if b.Social, err = s.SocialSummary(ctx, v.ID); err != nil {
		return nil, err
	}
	if b.Lobby, err = s.CurrentLobby(ctx, v.ID); err != nil {
		return nil, err
	}
	if b.LiveOps, err = s.liveops.Evaluate(ctx, liveops.Subject{PlayerID: v.ID.String(), Nickname: v.Nickname, CreatedAt: v.CreatedAt}); err != nil {
		return nil, fmt.Errorf("bootstrap live-ops: %w", err)
	}
	return b, nil
}

func (s *Service) queueList() []Queue {
	qs := s.queues.Queues()
	out := make([]Queue, len(qs))
	copy(out, qs)
	return out
}
