package liveops

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/towerdefence/platformctl/internal/gamemap"
	"github.com/towerdefence/platformctl/internal/platform"
)

// HistoryLength is how many versions the snapshot lists.
const HistoryLength = 10

// MapSeedView is one map size's seed as operators see it.
type MapSeedView struct {
	Size gamemap.Size `json:"size"`
	// Seed is the configured seed; EffectiveSeed the one the queues use
	// now, which differs while a running event (OverriddenBy) sets its own.
	Seed          int64  `json:"seed"`
	EffectiveSeed int64  `json:"effectiveSeed"`
	OverriddenBy  string `json:"overriddenBy,omitempty"`
}

// ScheduledEvent is an event with its status at the time of the snapshot.
type ScheduledEvent struct {
	Event
	Status string `json:"status"`
}

// ScheduledBanner is a banner with its status at the time of the snapshot.
type ScheduledBanner struct {
	Banner
	Status string `json:"status"`
}

// ScheduledMessage is a message with its status at the time of the snapshot.
type ScheduledMessage struct {
	Message
	Status string `json:"status"`
}

// Snapshot is the live-ops configuration as operators see it, with every
// status computed at one instant. ETag is a strong validator of exactly
// these bytes: it changes with every published version and also when an
// event, banner or message changes status or the catalog version moves,
// because the body does. ConfigETag identifies the published version alone.
type Snapshot struct {
	Version        int                `json:"version"`
	ETag           string             `json:"etag"`
	ConfigETag     string             `json:"configEtag"`
	ContentHash    string             `json:"contentHash"`
	Source         string             `json:"source"`
	PublishedAt    time.Time          `json:"publishedAt"`
	PublishedBy    string             `json:"publishedBy"`
	Description    string             `json:"description"`
	Environment    string             `json:"environment"`
	CatalogVersion int                `json:"catalogVersion"`
	MapSeeds       []MapSeedView      `json:"mapSeeds"`
	Flags          []Flag             `json:"flags"`
	Events         []ScheduledEvent   `json:"events"`
	Banners        []ScheduledBanner  `json:"banners"`
	Messages       []ScheduledMessage `json:"messages"`
	// History lists the newest versions, newest first.
	History []Head `json:"history"`
}

// Snapshot returns the newest configuration with statuses computed now,
// or ErrNotPublished.
func (s *Service) Snapshot(ctx context.Context) (*Snapshot, error) {
	head, cfg, err := s.Current(ctx)
	if err != nil {
		return nil, err
	}
	if head == nil {
		return nil, ErrNotPublished
	}
	history, err := s.store.LiveOpsHistory(ctx, HistoryLength)
	if err != nil {
		return nil, fmt.Errorf("live-ops history: %w", err)
	}
	catalog := 0
	if s.opts.Catalog != nil {
		if catalog, err = s.opts.Catalog.CatalogVersion(ctx); err != nil {
			return nil, fmt.Errorf("catalog version: %w", err)
		}
	}
	return s.snapshot(head, cfg, history, catalog, s.now().UTC()), nil
}

func (s *Service) snapshot(head *Head, c *Config, history []Head, catalog int, now time.Time) *Snapshot {
	snap := &Snapshot{
		Version: head.Version, ConfigETag: head.ETag, ContentHash: head.Hash, Source: head.Source,
		PublishedAt: head.PublishedAt.UTC(), PublishedBy: head.PublishedBy, Description: head.Description,
		Environment: s.opts.Environment, CatalogVersion: catalog,
		MapSeeds: make([]MapSeedView, 0, len(gamemap.Sizes)),
		Flags:    make([]Flag, len(c.Flags)),
		Events:   make([]ScheduledEvent, len(c.Events)),
		Banners:  make([]ScheduledBanner, len(c.Banners)),
		Messages: make([]ScheduledMessage, len(c.Messages)),
		History:  platform.OrEmpty(history),
	}
	for _, size := range gamemap.Sizes {
		v := MapSeedView{Size: size, Seed: c.MapSeeds.Short}
		if size == gamemap.Long {
			v.Seed = c.MapSeeds.Long
		}
		v.EffectiveSeed, v.OverriddenBy = effectiveSeed(c, size, now)
		snap.MapSeeds = append(snap.MapSeeds, v)
	}
	for i, f := range c.Flags {
		f.Rules = platform.OrEmpty(f.Rules)
		snap.Flags[i] = f
	}
	for i, e := range c.Events {
		snap.Events[i] = ScheduledEvent{e, e.Status(now)}
	}
	for i, b := range c.Banners {
		snap.Banners[i] = ScheduledBanner{b, b.Status(now)}
	}
	for i, m := range c.Messages {
		snap.Messages[i] = ScheduledMessage{m, m.Status(now)}
	}
	snap.ETag = etagOf(snap)
	return snap
}

// etagOf hashes the snapshot's JSON without its etag. Marshalling is
// deterministic (struct fields in order, map keys sorted), so equal
// snapshots get equal tags.
func etagOf(snap *Snapshot) string {
	c := *snap
	c.ETag = ""
	body, err := json.Marshal(&c)
	if err != nil {
		// Published bodies are JSON values; Marshal cannot fail on them.
		panic("liveops: marshal snapshot: " + err.Error())
	}
	sum := sha256.Sum256(body)
	return fmt.Sprintf(`"liveops-%d-%s"`, snap.Version, hex.EncodeToString(sum[:8]))
}
