package store

import (
	"context"
	"fmt"
	"time"

	"github.com/towerdefence/platformctl/internal/profile"
)

// SweepBatch is the most rows one sweep statement changes, and the
// default batch: each batch is its own transaction, so a sweep never
// holds locks on a large table for long, and a sweep cut short keeps
// what it already did.
const SweepBatch = 10_000

// Sweeps deletes what has outlived its use, in batches. Every method with
// dryRun set only counts what it would delete.
type Sweeps struct {
	db    *DB
	batch int
}

// Sweeps returns the sweeps of the periodic jobs, SweepBatch rows a
// statement.
func (db *DB) Sweeps() *Sweeps { return &Sweeps{db: db, batch: SweepBatch} }

// WithBatch returns the sweeps changing at most n rows a statement; n
// outside 1 to SweepBatch means SweepBatch. Smaller batches hold locks
// for less time, for engines that want them small.
func (s *Sweeps) WithBatch(n int) *Sweeps {
	if n < 1 || n > SweepBatch {
		n = SweepBatch
	}
	return &Sweeps{db: s.db, batch: n}
}

// deleteBatches deletes the rows of table matching where, a batch at a
// time by the key column, and returns how many it deleted (or, with
// dryRun, how many match).
func (s *Sweeps) deleteBatches(ctx context.Context, table, key, where string, dryRun bool, args ...any) (int, error) {
	if dryRun {
		var n int
		err := s.db.bun.NewRaw(fmt.Sprintf("SELECT COUNT(*) FROM %s WHERE %s", table, where), args...).Scan(ctx, &n)
		return n, mapError(err)
	}
	q := fmt.Sprintf("DELETE FROM %[1]s WHERE %[2]s IN (SELECT %[2]s FROM %[1]s WHERE %[3]s LIMIT %[4]d)", table, key, where, s.batch)
	return s.inBatches(ctx, "sweep "+table, q, args...)
}

// inBatches runs q, a statement that changes at most a batch of rows,
// until a run changes fewer, each run its own transaction, and returns
// how many rows it changed in all. A cancelled ctx stops it between
// batches (or cancels the statement in flight).
func (s *Sweeps) inBatches(ctx context.Context, what, q string, args ...any) (int, error) {
	total := 0
	for {
		res, err := s.db.bun.NewRaw(q, args...).Exec(ctx)
		if err != nil {
			return total, mapError(fmt.Errorf("%s: %w", what, err))
		}
		n, err := res.RowsAffected()
		if err != nil {
			return total, err
		}
		total += int(n)
		if n < int64(s.batch) {
			return total, nil
		}
	}
}

// ExpiredSessions deletes sessions that expired by now.
func (s *Sweeps) ExpiredSessions(ctx context.Context, now time.Time, dryRun bool) (int, error) {
	return s.deleteBatches(ctx, "sessions", "id", "expires_at <= ?", dryRun, now.UTC())
}

// ExpiredMailTokens deletes mailed verification and reset tokens that
// expired by now.
func (s *Sweeps) ExpiredMailTokens(ctx context.Context, now time.Time, dryRun bool) (int, error) {
	return s.deleteBatches(ctx, "auth_tokens", "id", "expires_at <= ?", dryRun, now.UTC())
}

// FinishedMail deletes sent, failed and expired messages (their attempts
// go with them) last touched before before.
func (s *Sweeps) FinishedMail(ctx context.Context, before time.Time, dryRun bool) (int, error) {
	return s.deleteBatches(ctx, "mail_outbox", "id", "status IN ('sent', 'failed', 'expired') AND updated_at < ?", dryRun, before.UTC())
}

// ClosedLobbies deletes lobbies closed before before.
func (s *Sweeps) ClosedLobbies(ctx context.Context, before time.Time, dryRun bool) (int, error) {
	return s.deleteBatches(ctx, "lobbies", "id", "status = 'closed' AND closed_at < ?", dryRun, before.UTC())
}

// StalePasswordChanges forgets the new password hash of pending changes
// untouched since staleBefore (their link has expired), in batches.
func (s *Sweeps) StalePasswordChanges(ctx context.Context, staleBefore time.Time, dryRun bool) (int, error) {
	where := "status = ? AND new_password_hash IS NOT NULL AND updated_at <= ?"
	args := []any{profile.StatusPending, staleBefore.UTC()}
	if dryRun {
		return s.deleteBatches(ctx, "profile_changes", "id", where, true, args...)
	}
	q := fmt.Sprintf("UPDATE profile_changes SET new_password_hash = NULL WHERE id IN (SELECT id FROM profile_changes WHERE %s LIMIT %d)", where, s.batch)
	return s.inBatches(ctx, "sweep stale password changes", q, args...)
}

// OldProfileChanges deletes profile changes (and their tokens) last
// touched before before.
func (s *Sweeps) OldProfileChanges(ctx context.Context, before time.Time, dryRun bool) (int, error) {
	return s.deleteBatches(ctx, "profile_changes", "id", "updated_at < ?", dryRun, before.UTC())
}

// RateLimits deletes attempt counters that limit nobody any more.
func (s *Sweeps) RateLimits(ctx context.Context, now time.Time, dryRun bool) (int, error) {
	return s.deleteBatches(ctx, "rate_limits", "key", "tat <= ?", dryRun, now.UnixMicro())
}

// AuditLog deletes audit entries recorded before before.
func (s *Sweeps) AuditLog(ctx context.Context, before time.Time, dryRun bool) (int, error) {
	return s.deleteBatches(ctx, "audit_log", "id", "at < ?", dryRun, before.UTC())
}
