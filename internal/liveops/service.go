package liveops

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Sources of a published configuration.
const (
	SourceFixtures = "fixtures"
	SourceOperator = "operator"
)

// Head identifies a published configuration version.
type Head struct {
	Version     int
	ETag        string
	Hash        string
	Source      string
	PublishedAt time.Time
}

// ETag derives the entity tag of a configuration version.
func ETag(version int, hash string) string {
	return fmt.Sprintf(`"liveops-%d-%.16s"`, version, hash)
}

// Store reads published configurations.
type Store interface {
	// LiveOpsHead returns the newest version, or nil when none exists.
	LiveOpsHead(ctx context.Context) (*Head, error)
	LiveOpsConfig(ctx context.Context, version int) (*Config, error)
}

// Service serves the current configuration. Versions are immutable, so
// the parsed newest one is kept until the database names a newer one.
type Service struct {
	store Store
	now   func() time.Time

	mu      sync.Mutex
	version int
	config  *Config
}

// NewService returns the live-ops service.
func NewService(store Store, now func() time.Time) *Service {
	return &Service{store: store, now: now}
}

// config returns the configuration of version, parsing it once.
func (s *Service) configAt(ctx context.Context, version int) (*Config, error) {
	s.mu.Lock()
	if s.version == version {
		cfg := s.config
		s.mu.Unlock()
		return cfg, nil
	}
	s.mu.Unlock()
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

// Current returns the newest configuration and its head; both are nil
// before anything was published.
func (s *Service) Current(ctx context.Context) (*Head, *Config, error) {
	head, err := s.store.LiveOpsHead(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("live-ops head: %w", err)
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
func (s *Service) EvaluateVersion(ctx context.Context, version int, sub Subject) (*Evaluation, error) {
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
