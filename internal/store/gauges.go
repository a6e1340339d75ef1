package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/towerdefence/platformctl/internal/admin"
)

// CountFailedMailAttempts implements admin.GaugeStore over the partial
// index of failed attempts; the outcomes are spelled out (mail.OutcomeRetry,
// mail.OutcomeFailed) so that the planner matches the index predicate.
func (s *LiveOpsStore) CountFailedMailAttempts(ctx context.Context) (int64, error) {
	var n int64
	err := s.db.bun.NewRaw(`SELECT COUNT(*) FROM mail_attempts WHERE outcome IN ('retry', 'failed')`).Scan(ctx, &n)
	return n, mapError(err)
}

// SaveSnapshot implements admin.GaugeStore.
func (s *LiveOpsStore) SaveSnapshot(ctx context.Context, body []byte, at time.Time) error {
	_, err := s.db.bun.NewRaw(`INSERT INTO stat_snapshots (id, body, refreshed_at) VALUES (1, ?, ?)
		ON CONFLICT (id) DO UPDATE SET body = excluded.body, refreshed_at = excluded.refreshed_at`, string(body), at.UTC()).Exec(ctx)
	return mapError(err)
}

// LoadSnapshot implements admin.GaugeStore.
func (s *LiveOpsStore) LoadSnapshot(ctx context.Context) ([]byte, error) {
	var body string
	err := s.db.bun.NewRaw(`SELECT body FROM stat_snapshots WHERE id = 1`).Scan(ctx, &body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, admin.ErrNoSnapshot
	}
	if err != nil {
		return nil, mapError(err)
	}
	return []byte(body), nil
}
