package player

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/gamemap"
	"github.com/towerdefence/platformctl/internal/liveops"
)

// LiveOps evaluates a live-ops configuration version for one player.
type LiveOps interface {
	EvaluateVersion(ctx context.Context, version int, s liveops.Subject) (*liveops.Evaluation, error)
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
	Queues     []QueueSummary      `json:"queues"`
	LiveOps    *liveops.Evaluation `json:"liveops"`
}

// CatalogRef tells the client whether its cached catalog is current.
type CatalogRef struct {
	Version int    `json:"version"`
	ETag    string `json:"etag"`
}

// Bootstrap assembles the player's start-up state. It is the route every
// client calls first, so it reads everything in one round trip, with the
// catalog and live-ops configuration from the per-version cache; only a
// player's very first visit, which gives the starter decks, costs more.
func (s *Service) Bootstrap(ctx context.Context, v Viewer) (*Bootstrap, error) {
	st, err := s.store.PlayerState(ctx, v.ID)
	if err != nil {
		return nil, fmt.Errorf("bootstrap: %w", err)
	}
	cat, err := s.catalogAt(ctx, st.Catalog)
	if err != nil {
		return nil, err
	}
	b := &Bootstrap{ServerTime: s.clock(), Catalog: CatalogRef{Version: cat.Version, ETag: cat.ETag}, Queues: s.queueList(),
		Social: s.socialSummary(st.EdgeCounts)}
	prof, decks := st.Profile, st.Decks
	if prof == nil || !prof.StarterGranted {
		if prof, err = s.ensureStarted(ctx, cat, v.ID); err != nil {
			return nil, err
		}
		if decks, err = s.store.Decks(ctx, v.ID); err != nil {
			return nil, fmt.Errorf("bootstrap decks: %w", err)
		}
	}
	b.Decks = s.deckListFrom(cat, prof, decks)
	if st.Lobby != nil && !s.isIdle(st.Lobby, b.ServerTime) {
		if b.Lobby, err = s.viewWith(ctx, s.store, st.Lobby, st.Members, v.ID); err != nil {
			return nil, err
		}
	}
	sub := liveops.Subject{PlayerID: v.ID.String(), Nickname: v.Nickname, CreatedAt: v.CreatedAt}
	if b.LiveOps, err = s.liveops.EvaluateVersion(ctx, st.LiveOpsVersion, sub); err != nil {
		return nil, fmt.Errorf("bootstrap live-ops: %w", err)
	}
	return b, nil
}

// QueueSummary is a matchmaking queue preset as lobbies use it: PartySize
// is the capacity of a lobby for the queue, its preset's largest party.
type QueueSummary struct {
	ID                string       `json:"id"`
	Mode              string       `json:"mode"`
	MapSize           gamemap.Size `json:"mapSize"`
	PartySize         int          `json:"partySize"`
	Rated             bool         `json:"rated"`
	RequiresValidDeck bool         `json:"requiresValidDeck"`
	Enabled           bool         `json:"enabled"`
}

func (s *Service) queueList() []QueueSummary {
	out := make([]QueueSummary, len(s.queues))
	for i, q := range s.queues {
		out[i] = QueueSummary{ID: q.ID, Mode: q.Mode, MapSize: q.MapSize, PartySize: q.PartySize.Max,
			Rated: q.Rated, RequiresValidDeck: q.RequiresValidDeck, Enabled: q.Enabled}
	}
	return out
}
