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

	mu     sync.Mutex
	head   *Head
	config *Config
}

// NewService returns the live-ops service.
func NewService(store Store, now func() time.Time) *Service {
	return &Service{store: store, now: now}
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
	s.mu.Lock()
	if s.head != nil && s.head.Version == head.Version {
		h, c := s.head, s.config
		s.mu.Unlock()
		return h, c, nil
	}
	s.mu.Unlock()
	cfg, err := s.store.LiveOpsConfig(ctx, head.Version)
	if err != nil {
		return nil, nil, fmt.Errorf("live-ops config %d: %w", head.Version, err)
	}
	s.mu.Lock()
	if s.head == nil || s.head.Version < head.Version {
		s.head, s.config = head, cfg
	}
	s.mu.Unlock()
	return head, cfg, nil
}

// Evaluate returns the configuration as the subject sees it now; an empty
// evaluation (version 0) before anything was published.
func (s *Service) Evaluate(ctx context.Context, sub Subject) (*Evaluation, error) {
	head, cfg, err := s.Current(ctx)
	if err != nil {
		return nil, err
	}
	if head == nil {
		return (&Config{}).Evaluate(0, sub, s.now().UTC()), nil
	}
	return cfg.Evaluate(head.Version, sub, s.now().UTC()), nil
}
