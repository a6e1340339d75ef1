package store

import (
	"context"
	"fmt"
	"time"

	"github.com/towerdefence/platformctl/internal/profile"
)

// SweepBatch is the most rows one sweep statement deletes: each batch is
// its own transaction, so a sweep never holds locks on a large table for
// long, and a sweep cut short keeps what it already deleted.
const SweepBatch = 10_000

// Sweeps deletes what has outlived its use, in batches. Every method with
// dryRun set only counts what it would delete.
type Sweeps struct{ db *DB }

// Sweeps returns the sweeps of the periodic jobs.
func (db *DB) Sweeps() *Sweeps { return &Sweeps{db: db} }

// deleteBatches deletes the rows of table matching where, SweepBatch at a
// time by the key column, and returns how many it deleted (or, with
// dryRun, how many match).
func (db *DB) deleteBatches(ctx context.Context, table, key, where string, dryRun bool, args ...any) (int, error) {
	if dryRun {
		var n int
		err := db.bun.NewRaw(fmt.Sprintf("SELECT COUNT(*) FROM %s WHERE %s", table, where), args...).Scan(ctx, &n)
		return n, mapError(err)
	}
	q := fmt.Sprintf("DELETE FROM %[1]s WHERE %[2]s IN (SELECT %[2]s FROM %[1]s WHERE %[3]s LIMIT %[4]d)", table, key, where, SweepBatch)
	return db.inBatches(ctx, "sweep "+table, q, args...)
}

// inBatches runs q, a statement that changes at most SweepBatch rows,
// until a run changes fewer, each run its own transaction, and returns
// how many rows it changed in all.
func (db *DB) inBatches(ctx context.Context, what, q string, args ...any) (int, error) {
	total := 0
	for {
		res, err := db.bun.NewRaw(q, args...).Exec(ctx)
		if err != nil {
			return total, mapError(fmt.Errorf("%s: %w", what, err))
		}
		n, err := res.RowsAffected()
		if err != nil {
			return total, err
		}
		total += int(n)
		if n < SweepBatch {
			return total, nil
		}
	}
}

// ExpiredSessions deletes sessions that expired by now.
func (s *Sweeps) ExpiredSessions(ctx context.Context, now time.Time, dryRun bool) (int, error) {
	return s.db.deleteBatches(ctx, "sessions", "id", "expires_at <= ?", dryRun, now.UTC())
}

// ExpiredMailTokens deletes mailed verification and reset tokens that
// expired by now.
func (s *Sweeps) ExpiredMailTokens(ctx context.Context, now time.Time, dryRun bool) (int, error) {
	return s.db.deleteBatches(ctx, "auth_tokens", "id", "expires_at <= ?", dryRun, now.UTC())
}

// FinishedMail deletes sent, failed and expired messages (their attempts
// go with them) last touched before before.
func (s *Sweeps) FinishedMail(ctx context.Context, before time.Time, dryRun bool) (int, error) {
	return s.db.deleteBatches(ctx, "mail_outbox", "id", "status IN ('sent', 'failed', 'expired') AND updated_at < ?", dryRun, before.UTC())
}

// ClosedLobbies deletes lobbies closed before before.
func (s *Sweeps) ClosedLobbies(ctx context.Context, before time.Time, dryRun bool) (int, error) {
	return s.db.deleteBatches(ctx, "lobbies", "id", "status = 'closed' AND closed_at < ?", dryRun, before.UTC())
}

// StalePasswordChanges forgets the new password hash of pending changes
// untouched since staleBefore (their link has expired), in batches.
func (s *Sweeps) StalePasswordChanges(ctx context.Context, staleBefore time.Time, dryRun bool) (int, error) {
	where := "status = ? AND new_password_hash IS NOT NULL AND updated_at <= ?"
	args := []any{profile.StatusPending, staleBefore.UTC()}
	if dryRun {
		return s.db.deleteBatches(ctx, "profile_changes", "id", where, true, args...)
	}
	q := fmt.Sprintf("UPDATE profile_changes SET new_password_hash = NULL WHERE id IN (SELECT id FROM profile_changes WHERE %s LIMIT %d)", where, SweepBatch)
	return s.db.inBatches(ctx, "sweep stale password changes", q, args...)
}

// OldProfileChanges deletes profile changes (and their tokens) last
// touched before before.
func (s *Sweeps) OldProfileChanges(ctx context.Context, before time.Time, dryRun bool) (int, error) {
	return s.db.deleteBatches(ctx, "profile_changes", "id", "updated_at < ?", dryRun, before.UTC())
}

// ProfileRateEvents deletes profile request events that left every window.
func (s *Sweeps) ProfileRateEvents(ctx context.Context, before time.Time, dryRun bool) (int, error) {
	return s.db.deleteBatches(ctx, "profile_rate_events", "id", "at < ?", dryRun, before.UTC())
}

// RateLimits deletes attempt counters that limit nobody any more.
func (s *Sweeps) RateLimits(ctx context.Context, now time.Time, dryRun bool) (int, error) {
	return s.db.deleteBatches(ctx, "rate_limits", "key", "tat <= ?", dryRun, now.UnixMicro())
}

// AuditLog deletes audit entries recorded before before.
func (s *Sweeps) AuditLog(ctx context.Context, before time.Time, dryRun bool) (int, error) {
	return s.db.deleteBatches(ctx, "audit_log", "id", "at < ?", dryRun, before.UTC())
}
