package liveops

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/towerdefence/platformctl/internal/audit"
	"github.com/towerdefence/platformctl/internal/platform"
)

// Sources of a published configuration.
const (
	SourceFixtures = "fixtures"
	SourceOperator = "operator"
)

// Head identifies a published configuration version. Versions are
// immutable: a change publishes the next version, so the history is the
// table itself.
type Head struct {
	Version     int       `json:"version"`
	ETag        string    `json:"etag"`
	Hash        string    `json:"contentHash"`
	Source      string    `json:"source"`
	PublishedAt time.Time `json:"publishedAt"`
	// PublishedBy is the audit actor of an operator's version, and
	// ActorFixtures for a version seeded from the fixtures.
	PublishedBy string `json:"publishedBy"`
	// Description says what changed and why.
	Description string `json:"description"`
}

// ActorFixtures is who published a version seeded from the fixtures.
const ActorFixtures = "system:fixtures"

// ETag derives the entity tag of a configuration version.
func ETag(version int, hash string) string {
	return fmt.Sprintf(`"liveops-%d-%.16s"`, version, hash)
}

// Publication is a version to publish: its head and its body.
type Publication struct {
	Head   Head
	Config Config
}

// Store reads and publishes configurations.
type Store interface {
	// LiveOpsHead returns the newest version, or nil when none exists.
	LiveOpsHead(ctx context.Context) (*Head, error)
	LiveOpsConfig(ctx context.Context, version int) (*Config, error)
	// LiveOpsHistory returns the newest versions, newest first.
	LiveOpsHistory(ctx context.Context, limit int) ([]Head, error)
	// InTx runs fn in one transaction, committing when fn returns nil. fn
	// may run more than once: after a serialization failure, a deadlock or
	// a connection lost before COMMIT the transaction starts again (up to
	// four runs), so fn works only through tx, has no side effects outside
	// the transaction, and resets whatever it gathers at the start of each
	// run.
	InTx(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error
}

// Tx is the transaction a publication runs in.
type Tx interface {
	// LockPublications holds the publication lock (the one fixture
	// seeding holds too) until the transaction ends.
	LockPublications(ctx context.Context) error
	// LatestLiveOps returns the newest version and its body, or nil, nil.
	LatestLiveOps(ctx context.Context) (*Head, *Config, error)
	InsertLiveOps(ctx context.Context, p *Publication) error
	InsertAudit(ctx context.Context, e *audit.Entry) error
}

// CatalogVersioner reports the current content catalog version; the
// player area owns the catalog.
type CatalogVersioner interface {
	CatalogVersion(ctx context.Context) (int, error)
}

// Options configure the service.
type Options struct {
	// Environment (development or production) is what
	// Audience.Environments matches.
	Environment string
	// Catalog, when set, supplies the catalog version operators see.
	Catalog CatalogVersioner
	// DefaultShortSeed and DefaultLongSeed are the map seeds the queues
	// play before any live-ops version is published.
	DefaultShortSeed, DefaultLongSeed uint64
	// SeedRefresh is how long MapSeeds trusts the version it last read
	// before asking the database for a newer one. Versions this service
	// publishes are seen at once; other processes' within SeedRefresh.
	SeedRefresh time.Duration
	// ReadTimeout bounds each database read made for a caller without a
	// deadline of its own: the queues route is served from memory and
	// has no request deadline, but MapSeeds reads the database once per
	// SeedRefresh. Zero leaves such reads unbounded.
	ReadTimeout time.Duration
}

// Service serves and changes the live-ops configuration. Versions are
// immutable, so the parsed newest one is kept until the database names a
// newer one; every read still asks the database for the newest version
// number (MapSeeds at most once per Options.SeedRefresh), so a version
// another process published is seen.
type Service struct {
	store Store
	now   func() time.Time
	opts  Options

	mu      sync.Mutex
	version int
	config  *Config
	// head is the newest head read, checked when; checked is zero when it
	// must be read again (nothing read yet, or this service published).
	head    *Head
	checked time.Time
}

// New returns the live-ops service.
func New(store Store, opts Options, now func() time.Time) *Service {
	return &Service{store: store, now: now, opts: opts}
}

// CodeNotPublished is returned while no configuration has been published.
const CodeNotPublished = "LIVEOPS_NOT_PUBLISHED"

// ErrNotPublished: the database has no live-ops configuration yet.
var ErrNotPublished = platform.Errorf(platform.KindNotFound, CodeNotPublished,
	"no live-ops configuration has been published yet; run `platformctl seed fixtures`")

// configAt returns the configuration of version, parsing it once.
func (s *Service) configAt(ctx context.Context, version int) (*Config, error) {
	s.mu.Lock()
	if s.version == version {
		cfg := s.config
		s.mu.Unlock()
		return cfg, nil
	}
	s.mu.Unlock()
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	cfg, err := s.store.LiveOpsConfig(ctx, version)
	if err != nil {
		return nil, fmt.Errorf("live-ops config %d: %w", version, err)
	}
	s.mu.Lock()
	if version > s.version {
		s.version, s.config = version, cfg
	}
	s.mu.Unlock()
	return cfg, nil
}

// bounded gives a database read Options.ReadTimeout when ctx has no
// deadline.
func (s *Service) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok || s.opts.ReadTimeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, s.opts.ReadTimeout)
}

// Current returns the newest configuration and its head; both are nil
// before anything was published.
func (s *Service) Current(ctx context.Context) (*Head, *Config, error) {
	return s.current(ctx, 0)
}

// current is Current that trusts the head it read less than maxAge ago.
func (s *Service) current(ctx context.Context, maxAge time.Duration) (*Head, *Config, error) {
	now := s.now()
	var head *Head
	fresh := false
	if maxAge > 0 {
		s.mu.Lock()
		if age := now.Sub(s.checked); !s.checked.IsZero() && age >= 0 && age < maxAge {
			head, fresh = s.head, true
		}
		s.mu.Unlock()
	}
	if !fresh {
		rctx, cancel := s.bounded(ctx)
		var err error
		head, err = s.store.LiveOpsHead(rctx)
		cancel()
		if err != nil {
			return nil, nil, fmt.Errorf("live-ops head: %w", err)
		}
		s.mu.Lock()
		s.head, s.checked = head, now
		s.mu.Unlock()
	}
	if head == nil {
		return nil, nil, nil
	}
	cfg, err := s.configAt(ctx, head.Version)
	if err != nil {
		return nil, nil, err
	}
	return head, cfg, nil
}

// Evaluate returns the configuration as the subject sees it now; an empty
// evaluation (version 0) before anything was published.
func (s *Service) Evaluate(ctx context.Context, sub Subject) (*Evaluation, error) {
	head, err := s.store.LiveOpsHead(ctx)
	if err != nil {
		return nil, fmt.Errorf("live-ops head: %w", err)
	}
	version := 0
	if head != nil {
		version = head.Version
	}
	return s.EvaluateVersion(ctx, version, sub)
}

// EvaluateVersion evaluates a version the caller already knows is the
// newest, sparing the head query; version 0 means nothing was published.
// The subject's environment is the service's.
func (s *Service) EvaluateVersion(ctx context.Context, version int, sub Subject) (*Evaluation, error) {
	sub.Environment = s.opts.Environment
	now := s.now().UTC()
	if version == 0 {
		return (&Config{}).Evaluate(0, sub, now), nil
	}
	cfg, err := s.configAt(ctx, version)
	if err != nil {
		return nil, err
	}
	return cfg.Evaluate(version, sub, now), nil
}

// published forgets when the newest version was read, so that the next
// read sees what this service just published.
func (s *Service) published() {
	s.mu.Lock()
	s.checked = time.Time{}
	s.mu.Unlock()
}
