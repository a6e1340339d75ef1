package store

import (
	"context"
	"time"
)

// The sweeps of account deletion.
var (
	expiredDeletionTokens = sweep{"deletion_tokens", "token_hash", "deletion_tokens_expires_idx", "expires_at <= ?"}
	freedIdentifiers      = sweep{"identifier_quarantine", "key_hash", "identifier_quarantine_free_idx", "free_at <= ?"}
)

// ExpiredDeletionTokens deletes mailed account-deletion links that
// expired by now.
func (s *Sweeps) ExpiredDeletionTokens(ctx context.Context, now time.Time, dryRun bool) (int, error) {
	return s.deleteBatches(ctx, expiredDeletionTokens, dryRun, now.UTC())
}

// FreedIdentifiers deletes the reservations of deleted accounts' emails
// and nicknames whose quarantine ended by now.
func (s *Sweeps) FreedIdentifiers(ctx context.Context, now time.Time, dryRun bool) (int, error) {
	return s.deleteBatches(ctx, freedIdentifiers, dryRun, now.UTC())
}
