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
type Sweeps struct {
	db    *DB
	batch int
	// fence, when set, is the job and holder whose lease every batch
	// statement checks.
	fence *[2]string
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
	return &Sweeps{db: s.db, batch: n, fence: s.fence}
}

// Fenced returns the sweeps as run by holder under its lease on job: each
// batch statement changes rows only while holder still holds job's lease
// in job_runs, reading the lease row FOR SHARE on PostgreSQL so a claim
// by another replica waits for the batch in flight, and a batch after
// the claim changes nothing. So a holder paused past its lease (the lease
// taken over meanwhile) never writes beside the new holder. An empty
// holder (a run outside the leases, as prune's) returns s unfenced.
func (s *Sweeps) Fenced(job, holder string) *Sweeps {
	if holder == "" {
		return s
	}
	return &Sweeps{db: s.db, batch: s.batch, fence: &[2]string{job, holder}}
}

// sweep is what one sweep removes: the rows of table matching where (with
// its values at the sweep's time), found through index, and key, the
// table's primary key.
type sweep struct{ table, key, index, where string }

// The sweeps.
var (
	expiredSessions   = sweep{"sessions", "id", "sessions_expires_idx", "expires_at <= ?"}
	expiredMailTokens = sweep{"auth_tokens", "id", "auth_tokens_expires_idx", "expires_at <= ?"}
	expiredOAuthState = sweep{"oauth_states", "state_hash", "oauth_states_expires_idx", "expires_at <= ?"}
	// Sign-in challenges and passkey ceremonies nobody answered.
	expiredChallenges = sweep{"two_factor_challenges", "token_hash", "two_factor_challenges_expires_idx", "expires_at <= ?"}
	expiredCeremonies = sweep{"passkey_ceremonies", "token_hash", "passkey_ceremonies_expires_idx", "expires_at <= ?"}
	finishedMail      = sweep{"mail_outbox", "id", "mail_outbox_done_idx", "status IN ('sent', 'failed', 'expired') AND updated_at < ?"}
	closedLobbies     = sweep{"lobbies", "id", "lobbies_closed_idx", "status = 'closed' AND closed_at < ?"}
	oldProfileChanges = sweep{"profile_changes", "id", "profile_changes_updated_idx", "updated_at < ?"}
	staleRateLimits   = sweep{"rate_limits", "key", "rate_limits_tat_idx", "tat <= ?"}
	oldAuditEntries   = sweep{"audit_log", "id", "audit_log_recent_idx", "at < ?"}
	// A guest owns something when it imported a deck, has a relationship
	// or is in or hosts a live lobby; starter decks are everyone's.
	inactiveGuests = sweep{"users", "id", "users_anonymous_idx", `is_anonymous AND updated_at < ?
 AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.user_id = users.id AND s.updated_at >= ?)
 AND NOT EXISTS (SELECT 1 FROM player_decks d WHERE d.user_id = users.id AND d.source <> 'starter')
 AND NOT EXISTS (SELECT 1 FROM social_edges e WHERE e.user_id = users.id)
 AND NOT EXISTS (SELECT 1 FROM social_edges e WHERE e.other_id = users.id)
 AND NOT EXISTS (SELECT 1 FROM lobby_members m WHERE m.user_id = users.id)
 AND NOT EXISTS (SELECT 1 FROM lobbies l WHERE l.host_id = users.id AND l.status <> 'closed')`}
	// stalePasswords is not deleted but has its new password forgotten.
	stalePasswords = sweep{"profile_changes", "id", "profile_changes_updated_idx",
		"status = ? AND new_password_hash IS NOT NULL AND updated_at <= ?"}
)

// deleteSQL is the statement that deletes one batch of w's rows.
func (s *Sweeps) deleteSQL(w sweep) string {
	return s.batchSQL("DELETE FROM "+w.table, w)
}

// batchSQL applies head ("DELETE FROM t", "UPDATE t SET …") to at most a
// batch of w's rows: those whose key the inner SELECT finds, through w's
// index, up to its LIMIT.
//
// On PostgreSQL the keys are gathered into an array first (= ANY(ARRAY(…))):
// given IN (SELECT …), the planner, once it expects thousands of keys,
// hash-joins them to a sequential scan of the whole table, so every batch
// would read all of it. SQLite, which has no statistics (nothing runs
// ANALYZE), is held to the index with INDEXED BY: left to itself it reads
// the outbox's sweep through mail_outbox_status_idx, every finished
// message, and INDEXED BY turns a schema change that breaks a sweep's
// index into an error instead of a slow sweep.
func (s *Sweeps) batchSQL(head string, w sweep) string {
	if s.db.dialect == Postgres {
		return fmt.Sprintf("%s WHERE %s = ANY(ARRAY(SELECT %[2]s FROM %s WHERE %s LIMIT %d))", head, w.key, w.table, w.where, s.batch) + s.fenceSQL()
	}
	return fmt.Sprintf("%s WHERE %s IN (SELECT %[2]s FROM %s INDEXED BY %s WHERE %s LIMIT %d)", head, w.key, w.table, w.index, w.where, s.batch) + s.fenceSQL()
}

// fenceSQL is the condition a fenced batch adds, with fenceArgs its
// values. SQLite needs no lock: its writers are serialised.
func (s *Sweeps) fenceSQL() string {
	if s.fence == nil {
		return ""
	}
	cond := " AND EXISTS (SELECT 1 FROM job_runs WHERE name = ? AND holder = ? AND lease_until > 0"
	if s.db.dialect == Postgres {
		return cond + " FOR SHARE)"
	}
	return cond + ")"
}

func (s *Sweeps) fenceArgs() []any {
	if s.fence == nil {
		return nil
	}
	return []any{s.fence[0], s.fence[1]}
}

// deleteBatches deletes w's rows, a batch at a time, and returns how many
// it deleted (or, with dryRun, how many match).
func (s *Sweeps) deleteBatches(ctx context.Context, w sweep, dryRun bool, args ...any) (int, error) {
	if dryRun {
		return s.count(ctx, w, args...)
	}
	return s.inBatches(ctx, "sweep "+w.table, s.deleteSQL(w), args...)
}

// count counts w's rows.
func (s *Sweeps) count(ctx context.Context, w sweep, args ...any) (int, error) {
	var n int
	err := s.db.bun.NewRaw(fmt.Sprintf("SELECT COUNT(*) FROM %s WHERE %s", w.table, w.where), args...).Scan(ctx, &n)
	return n, mapError(err)
}

// inBatches runs q, a statement that changes at most a batch of rows,
// until a run changes fewer, each run its own transaction, and returns
// how many rows it changed in all. A cancelled ctx stops it between
// batches (or cancels the statement in flight). Its values are written
// into q by bun: a sweep runs once a period, and a range's plan is best
// made for the value at hand.
func (s *Sweeps) inBatches(ctx context.Context, what, q string, args ...any) (int, error) {
	total := 0
	args = append(args[:len(args):len(args)], s.fenceArgs()...)
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
	return s.deleteBatches(ctx, expiredSessions, dryRun, now.UTC())
}

// ExpiredMailTokens deletes mailed verification and reset tokens that
// expired by now.
func (s *Sweeps) ExpiredMailTokens(ctx context.Context, now time.Time, dryRun bool) (int, error) {
	return s.deleteBatches(ctx, expiredMailTokens, dryRun, now.UTC())
}

// ExpiredOAuthStates deletes provider sign-ins that were never finished
// and expired by now.
func (s *Sweeps) ExpiredOAuthStates(ctx context.Context, now time.Time, dryRun bool) (int, error) {
	return s.deleteBatches(ctx, expiredOAuthState, dryRun, now.UTC())
}

// ExpiredFactorChallenges deletes second-factor sign-in challenges and
// passkey ceremonies that expired by now, unanswered.
func (s *Sweeps) ExpiredFactorChallenges(ctx context.Context, now time.Time, dryRun bool) (int, error) {
	n, err := s.deleteBatches(ctx, expiredChallenges, dryRun, now.UTC())
	if err != nil {
		return n, err
	}
	m, err := s.deleteBatches(ctx, expiredCeremonies, dryRun, now.UTC())
	return n + m, err
}

// FinishedMail deletes sent, failed and expired messages (their attempts
// go with them) last touched before before.
func (s *Sweeps) FinishedMail(ctx context.Context, before time.Time, dryRun bool) (int, error) {
	return s.deleteBatches(ctx, finishedMail, dryRun, before.UTC())
}

// ClosedLobbies deletes lobbies closed before before.
func (s *Sweeps) ClosedLobbies(ctx context.Context, before time.Time, dryRun bool) (int, error) {
	return s.deleteBatches(ctx, closedLobbies, dryRun, before.UTC())
}

// StalePasswordChanges forgets the new password hash of pending changes
// untouched since staleBefore (their link has expired), in batches.
func (s *Sweeps) StalePasswordChanges(ctx context.Context, staleBefore time.Time, dryRun bool) (int, error) {
	args := []any{profile.StatusPending, staleBefore.UTC()}
	if dryRun {
		return s.count(ctx, stalePasswords, args...)
	}
	q := s.batchSQL("UPDATE profile_changes SET new_password_hash = NULL", stalePasswords)
	return s.inBatches(ctx, "sweep stale password changes", q, args...)
}

// OldProfileChanges deletes profile changes (and their tokens) last
// touched before before.
func (s *Sweeps) OldProfileChanges(ctx context.Context, before time.Time, dryRun bool) (int, error) {
	return s.deleteBatches(ctx, oldProfileChanges, dryRun, before.UTC())
}

// RateLimits deletes attempt counters that limit nobody any more.
func (s *Sweeps) RateLimits(ctx context.Context, now time.Time, dryRun bool) (int, error) {
	return s.deleteBatches(ctx, staleRateLimits, dryRun, now.UnixMicro())
}

// AuditLog deletes audit entries recorded before before.
func (s *Sweeps) AuditLog(ctx context.Context, before time.Time, dryRun bool) (int, error) {
	return s.deleteBatches(ctx, oldAuditEntries, dryRun, before.UTC())
}

// InactiveGuests deletes guests that own nothing, were created or last
// upgraded before before and have no session used since; their player
// state and sessions (all long expired unless sessions outlive the
// retention) go with them.
func (s *Sweeps) InactiveGuests(ctx context.Context, before time.Time, dryRun bool) (int, error) {
	return s.deleteBatches(ctx, inactiveGuests, dryRun, before.UTC(), before.UTC())
}
