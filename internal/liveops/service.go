package liveops

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/towerdefence/platformctl/internal/audit"
	"github.com/towerdefence/platformctl/internal/gamemap"
	"github.com/towerdefence/platformctl/internal/platform"
)

// Sources of a published version (the liveops_configs.source column).
const (
	SourceFixtures = "fixtures"
	SourceOperator = "operator"
)

// Audit actions of the live-ops configuration.
const (
	ActionPublishFixtures = "liveops.publish-fixtures"
	ActionSetSeed         = "liveops.set-seed"
)

// ActorFixtures is the audit actor of versions published from the fixtures.
const ActorFixtures = "system:fixtures"

// CodeNotPublished is returned while no configuration has been published.
const CodeNotPublished = "LIVEOPS_NOT_PUBLISHED"

// ErrNotPublished: the database has no live-ops configuration yet.
var ErrNotPublished = platform.Errorf(platform.KindNotFound, CodeNotPublished,
	"no live-ops configuration has been published yet; run `platformctl seed fixtures`")

// maxReasonLen bounds the reason recorded with a change.
const maxReasonLen = 500

// HistoryLength is how many versions the snapshot lists.
const HistoryLength = 10

// Published is one published version of the configuration. Versions are
// immutable: a change publishes the next version, so the history is the
// table itself and rollback is publishing an old body again.
type Published struct {
	Version     int       `json:"version"`
	ETag        string    `json:"etag"`
	ContentHash string    `json:"contentHash"`
	Source      string    `json:"source"`
	PublishedAt time.Time `json:"publishedAt"`
	PublishedBy string    `json:"publishedBy"`
	Description string    `json:"description"`
	// Config is the body; history listings leave it empty.
	Config Config `json:"-"`
}

// ConfigETag derives the entity tag of a published version from its
// number and content hash, in the form the catalog uses.
func ConfigETag(version int, contentHash string) string {
	return fmt.Sprintf(`"liveops-%d-%.16s"`, version, contentHash)
}

// Store persists published versions.
type Store interface {
	// LiveOpsHead returns the newest version number, 0 when none exists.
	LiveOpsHead(ctx context.Context) (int, error)
	// LiveOpsVersion returns one version with its body.
	LiveOpsVersion(ctx context.Context, version int) (*Published, error)
	// LiveOpsHistory returns the newest versions without bodies, newest first.
	LiveOpsHistory(ctx context.Context, limit int) ([]Published, error)
	// LiveOpsLastHash returns the content hash of the newest version
	// published from source, "" when there is none.
	LiveOpsLastHash(ctx context.Context, source string) (string, error)
	// PublishLiveOps holds the publication lock, calls next with the newest
	// version (nil when none exists), and inserts what next returns
	// together with its audit entry, in one transaction. When next returns
	// nil nothing is written and PublishLiveOps returns nil. Concurrent
	// publications therefore apply one after the other and none is lost.
	PublishLiveOps(ctx context.Context, next func(latest *Published) (*Published, *audit.Entry, error)) (*Published, error)
}

// CatalogVersioner reports the current content catalog version; the
// player area owns the catalog.
type CatalogVersioner interface {
	CatalogVersion(ctx context.Context) (int, error)
}

// Service owns the live-ops configuration: reading the newest version,
// publishing new ones (fixtures, map seed changes) and evaluating it for
// players.
type Service struct {
	store   Store
	catalog CatalogVersioner
	env     string
	now     func() time.Time
	// newest caches the newest version read. Versions never change once
	// published, so a cached body is valid for as long as its number is
	// the newest; every read still asks the database for that number, so a
	// version published by another process is seen at once.
	newest atomic.Pointer[Published]
}

// New returns the live-ops service for the environment env (development
// or production). catalog may be nil, in which case the catalog version
// shows as 0.
func New(store Store, catalog CatalogVersioner, env string, now func() time.Time) *Service {
	return &Service{store: store, catalog: catalog, env: env, now: now}
}

// Environment is the environment audiences are matched against.
func (s *Service) Environment() string { return s.env }

// Current returns the newest published version, or ErrNotPublished.
func (s *Service) Current(ctx context.Context) (*Published, error) {
	v, err := s.store.LiveOpsHead(ctx)
	if err != nil {
		return nil, fmt.Errorf("live-ops head: %w", err)
	}
	if v == 0 {
		return nil, ErrNotPublished
	}
	if c := s.newest.Load(); c != nil && c.Version == v {
		return c, nil
	}
	p, err := s.store.LiveOpsVersion(ctx, v)
	if err != nil {
		return nil, fmt.Errorf("live-ops version %d: %w", v, err)
	}
	s.newest.Store(p)
	return p, nil
}

// PublishFixtures publishes cfg, the live-ops defaults of the fixtures, as
// a new version when the database has none, or when the fixtures changed
// since they were last published (their content hash differs). It leaves
// the configuration alone when the fixtures did not change, so that
// operators' changes (map seeds) survive every re-seed. cfg must have
// passed Validate. It reports whether it published.
func (s *Service) PublishFixtures(ctx context.Context, cfg Config) (bool, error) {
	hash := cfg.Hash()
	last, err := s.store.LiveOpsLastHash(ctx, SourceFixtures)
	if err != nil {
		return false, fmt.Errorf("publish live-ops fixtures: %w", err)
	}
	p, err := s.store.PublishLiveOps(ctx, func(latest *Published) (*Published, *audit.Entry, error) {
		if latest != nil && (last == hash || latest.ContentHash == hash) {
			return nil, nil, nil
		}
		next := s.next(latest, cfg, SourceFixtures, ActorFixtures, "defaults from the fixtures")
		e := &audit.Entry{At: next.PublishedAt, Actor: ActorFixtures, Action: ActionPublishFixtures, Target: "liveops",
			Details: map[string]string{"version": strconv.Itoa(next.Version), "contentHash": hash}}
		return next, e, nil
	})
	if err != nil {
		return false, fmt.Errorf("publish live-ops fixtures: %w", err)
	}
	return p != nil, nil
}

// next builds the version after latest with body cfg.
func (s *Service) next(latest *Published, cfg Config, source, actor, description string) *Published {
	v := 1
	if latest != nil {
		v = latest.Version + 1
	}
	hash := cfg.Hash()
	return &Published{Version: v, ETag: ConfigETag(v, hash), ContentHash: hash, Source: source,
		PublishedAt: s.now().UTC().Truncate(time.Second), PublishedBy: actor, Description: description, Config: cfg}
}

// SeedChange is the result of SetSeed.
type SeedChange struct {
	Size    gamemap.Size `json:"size"`
	From    int64        `json:"from"`
	To      int64        `json:"to"`
	Changed bool         `json:"changed"`
	Version int          `json:"version"`
	// OverriddenBy names the running event whose own seed the queues use
	// for this size until it ends; empty when the new seed applies now.
	OverriddenBy string     `json:"overriddenBy,omitempty"`
	Map          MapSummary `json:"map"`
}

// SetSeed publishes a new version with the map seed of one size changed,
// recording actor and reason in the audit trail in the same transaction.
// Setting the seed a size already has publishes and records nothing. The
// queues route reads the newest version on every request, so every server
// uses the new map at once, without a restart.
func (s *Service) SetSeed(ctx context.Context, actor, size string, seed int64, reason string) (*SeedChange, error) {
	sz, err := gamemap.ParseSize(size)
	if err != nil {
		return nil, err
	}
	if seed <= 0 {
		return nil, platform.Invalid("seed", "must be a positive integer")
	}
	reason = strings.TrimSpace(reason)
	if err := checkActorReason(actor, reason); err != nil {
		return nil, err
	}
	change := &SeedChange{Size: sz, To: seed}
	var cfg Config
	_, err = s.store.PublishLiveOps(ctx, func(latest *Published) (*Published, *audit.Entry, error) {
		if latest == nil {
			return nil, nil, ErrNotPublished
		}
		cfg = latest.Config
		seeds := &cfg.MapSeeds
		field := &seeds.Short
		if sz == gamemap.Long {
			field = &seeds.Long
		}
		change.From, change.Version = *field, latest.Version
		if *field == seed {
			return nil, nil, nil
		}
		*field = seed
		desc := fmt.Sprintf("map seed %s: %d -> %d", sz, change.From, seed)
		if reason != "" {
			desc += " (" + reason + ")"
		}
		next := s.next(latest, cfg, SourceOperator, actor, desc)
		e := &audit.Entry{At: next.PublishedAt, Actor: actor, Action: ActionSetSeed, Target: "map-seed:" + string(sz), Reason: reason,
			Details: map[string]string{
				"size": string(sz), "from": strconv.FormatInt(change.From, 10), "to": strconv.FormatInt(seed, 10),
				"version": strconv.Itoa(next.Version),
			}}
		change.Changed, change.Version = true, next.Version
		return next, e, nil
	})
	if err != nil {
		return nil, fmt.Errorf("set map seed: %w", err)
	}
	if eff, by := effectiveSeed(&cfg, sz, s.now()); eff != seed {
		change.OverriddenBy = by
	}
	change.Map = SummarizeSeed(sz, seed)
	return change, nil
}

func checkActorReason(actor, reason string) error {
	if strings.TrimSpace(actor) == "" {
		return platform.Invalid("actor", "is required")
	}
	if len(reason) > maxReasonLen {
		return platform.Invalid("reason", fmt.Sprintf("must be at most %d bytes", maxReasonLen))
	}
	return nil
}

// effectiveSeed returns the seed the queues use for size at now, and the
// id of the running event that sets it ("" for the configured default).
func effectiveSeed(c *Config, size gamemap.Size, now time.Time) (int64, string) {
	pick := func(m MapSeeds) int64 {
		if size == gamemap.Long {
			return m.Long
		}
		return m.Short
	}
	eff := pick(c.MapSeedsAt(now))
	if eff == pick(c.MapSeeds) {
		return eff, ""
	}
	for _, e := range c.Events {
		if e.MapSeeds != nil && e.Status(now) == StatusActive && pick(*e.MapSeeds) == eff {
			return eff, e.ID
		}
	}
	return eff, ""
}

// MapSeed returns the seed the queues use for size now: the configured
// seed, or the one a running event sets. It reads the newest version on
// every call, so a change published by another process is seen at once.
func (s *Service) MapSeed(ctx context.Context, size gamemap.Size) (uint64, error) {
	if !size.Valid() {
		return 0, platform.Invalid("size", `must be "short" or "long"`)
	}
	p, err := s.Current(ctx)
	if err != nil {
		return 0, err
	}
	seed, _ := effectiveSeed(&p.Config, size, s.now().UTC())
	return uint64(seed), nil
}

// Evaluate returns the configuration as player s sees it now. Before any
// version is published players get an empty evaluation (version 0) rather
// than an error, so that their bootstrap keeps working.
func (s *Service) Evaluate(ctx context.Context, sub Subject) (*Evaluation, error) {
	sub.Environment = s.env
	p, err := s.Current(ctx)
	if platform.ErrorCode(err) == CodeNotPublished {
		return (&Config{}).Evaluate(0, sub, s.now().UTC()), nil
	}
	if err != nil {
		return nil, err
	}
	return p.Config.Evaluate(p.Version, sub, s.now().UTC()), nil
}

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
	// History lists the newest versions, newest first, without bodies.
	History []Published `json:"history"`
}

// Snapshot returns the newest configuration with statuses computed now,
// or ErrNotPublished.
func (s *Service) Snapshot(ctx context.Context) (*Snapshot, error) {
	p, err := s.Current(ctx)
	if err != nil {
		return nil, err
	}
	history, err := s.store.LiveOpsHistory(ctx, HistoryLength)
	if err != nil {
		return nil, fmt.Errorf("live-ops history: %w", err)
	}
	catalog := 0
	if s.catalog != nil {
		if catalog, err = s.catalog.CatalogVersion(ctx); err != nil {
			return nil, fmt.Errorf("catalog version: %w", err)
		}
	}
	return s.snapshot(p, history, catalog, s.now().UTC()), nil
}

func (s *Service) snapshot(p *Published, history []Published, catalog int, now time.Time) *Snapshot {
	c := &p.Config
	snap := &Snapshot{
		Version: p.Version, ConfigETag: p.ETag, ContentHash: p.ContentHash, Source: p.Source,
		PublishedAt: p.PublishedAt.UTC(), PublishedBy: p.PublishedBy, Description: p.Description,
		Environment: s.env, CatalogVersion: catalog,
		MapSeeds: make([]MapSeedView, 0, len(gamemap.Sizes)),
		Flags:    make([]Flag, len(c.Flags)),
		Events:   make([]ScheduledEvent, len(c.Events)),
		Banners:  make([]ScheduledBanner, len(c.Banners)),
		Messages: make([]ScheduledMessage, len(c.Messages)),
		History:  orEmpty(history),
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
		f.Rules = orEmpty(f.Rules)
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

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
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
