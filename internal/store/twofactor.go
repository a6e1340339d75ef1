package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/auth"
)

type twoFactorRow struct {
	bun.BaseModel `bun:"table:two_factors"`

	UserID      uuid.UUID `bun:"user_id,pk"`
	Secret      string    `bun:"secret"`
	Verified    bool      `bun:"verified"`
	LastStep    int64     `bun:"last_step"`
	FailedCount int       `bun:"failed_count"`
	LockedUntil time.Time `bun:"locked_until,nullzero"`
	CreatedAt   time.Time `bun:"created_at"`
	UpdatedAt   time.Time `bun:"updated_at"`
}

type backupCodeRow struct {
	bun.BaseModel `bun:"table:backup_codes"`

	UserID   uuid.UUID `bun:"user_id,pk"`
	CodeHash []byte    `bun:"code_hash,pk"`
}

type challengeRow struct {
	bun.BaseModel `bun:"table:two_factor_challenges"`

	TokenHash []byte    `bun:"token_hash,pk"`
	UserID    uuid.UUID `bun:"user_id"`
	Realm     string    `bun:"realm"`
	Remember  bool      `bun:"remember"`
	Attempts  int       `bun:"attempts"`
	ExpiresAt time.Time `bun:"expires_at"`
}

// FactorStore implements auth.FactorStore.
type FactorStore struct{ db *DB }

// Factors returns the second-factor store.
func (db *DB) Factors() *FactorStore { return &FactorStore{db: db} }

var _ auth.FactorStore = (*FactorStore)(nil)

// TwoFactor implements auth.FactorStore.
func (s *FactorStore) TwoFactor(ctx context.Context, userID uuid.UUID) (*auth.TwoFactor, error) {
	var r twoFactorRow
	err := s.db.bun.NewSelect().Model(&r).Where("user_id = ?", userID).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, auth.ErrNoTwoFactor
	}
	if err != nil {
		return nil, mapError(err)
	}
	return &auth.TwoFactor{UserID: r.UserID, Secret: r.Secret, Verified: r.Verified, LastStep: r.LastStep,
		FailedCount: r.FailedCount, LockedUntil: r.LockedUntil.UTC(), CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}, nil
}

// PutTwoFactor implements auth.FactorStore in one transaction.
func (s *FactorStore) PutTwoFactor(ctx context.Context, tf *auth.TwoFactor, codeHashes [][]byte) error {
	return s.db.InTx(ctx, func(ctx context.Context, tx Tx) error {
		if _, err := tx.idb.NewDelete().Model((*twoFactorRow)(nil)).Where("user_id = ?", tf.UserID).Exec(ctx); err != nil {
			return mapError(err)
		}
		r := &twoFactorRow{UserID: tf.UserID, Secret: tf.Secret, Verified: tf.Verified, LastStep: tf.LastStep,
			CreatedAt: tf.CreatedAt.UTC(), UpdatedAt: tf.UpdatedAt.UTC()}
		if _, err := tx.idb.NewInsert().Model(r).Exec(ctx); err != nil {
			return mapError(err)
		}
		return replaceBackupCodes(ctx, tx.idb, tf.UserID, codeHashes)
	})
}

// DeleteTwoFactor implements auth.FactorStore: the TOTP row and the backup
// codes go together.
func (s *FactorStore) DeleteTwoFactor(ctx context.Context, userID uuid.UUID) (bool, error) {
	var removed bool
	err := s.db.InTx(ctx, func(ctx context.Context, tx Tx) error {
		res, err := tx.idb.NewDelete().Model((*twoFactorRow)(nil)).Where("user_id = ?", userID).Exec(ctx)
		if err != nil {
			return mapError(err)
		}
		n, _ := res.RowsAffected()
		removed = n > 0
		_, err = tx.idb.NewDelete().Model((*backupCodeRow)(nil)).Where("user_id = ?", userID).Exec(ctx)
		return mapError(err)
	})
	return removed, err
}

// UseTOTPStep implements auth.FactorStore with one conditional update, so
// of two requests with the same code exactly one moves the step.
func (s *FactorStore) UseTOTPStep(ctx context.Context, userID uuid.UUID, step int64, at time.Time) (bool, error) {
	res, err := s.db.bun.NewUpdate().Model((*twoFactorRow)(nil)).
		Set("last_step = ?", step).Set("verified = ?", true).Set("updated_at = ?", at.UTC()).
		Where("user_id = ? AND last_step < ?", userID, step).Exec(ctx)
	return changedRow(res, err)
}

// RecordFactorFailure implements auth.FactorStore.
func (s *FactorStore) RecordFactorFailure(ctx context.Context, userID uuid.UUID, limit int, lockUntil, at time.Time) error {
	return s.db.InTx(ctx, func(ctx context.Context, tx Tx) error {
		_, err := tx.idb.NewUpdate().Model((*twoFactorRow)(nil)).
			Set("failed_count = failed_count + 1").Set("updated_at = ?", at.UTC()).
			Where("user_id = ?", userID).Exec(ctx)
		if err != nil {
			return mapError(err)
		}
		_, err = tx.idb.NewUpdate().Model((*twoFactorRow)(nil)).
			Set("failed_count = 0").Set("locked_until = ?", lockUntil.UTC()).
			Where("user_id = ? AND failed_count >= ?", userID, limit).Exec(ctx)
		return mapError(err)
	})
}

// ClearFactorFailures implements auth.FactorStore.
func (s *FactorStore) ClearFactorFailures(ctx context.Context, userID uuid.UUID) error {
	_, err := s.db.bun.NewUpdate().Model((*twoFactorRow)(nil)).Set("failed_count = 0").
		Where("user_id = ?", userID).Exec(ctx)
	return mapError(err)
}

// ReplaceBackupCodes implements auth.FactorStore in one transaction.
func (s *FactorStore) ReplaceBackupCodes(ctx context.Context, userID uuid.UUID, codeHashes [][]byte) error {
	return s.db.InTx(ctx, func(ctx context.Context, tx Tx) error {
		return replaceBackupCodes(ctx, tx.idb, userID, codeHashes)
	})
}

func replaceBackupCodes(ctx context.Context, idb bun.IDB, userID uuid.UUID, codeHashes [][]byte) error {
	if _, err := idb.NewDelete().Model((*backupCodeRow)(nil)).Where("user_id = ?", userID).Exec(ctx); err != nil {
		return mapError(err)
	}
	if len(codeHashes) == 0 {
		return nil
	}
	rows := make([]backupCodeRow, len(codeHashes))
	for i, h := range codeHashes {
		rows[i] = backupCodeRow{UserID: userID, CodeHash: h}
	}
	_, err := idb.NewInsert().Model(&rows).Exec(ctx)
	return mapError(err)
}

// UseBackupCode implements auth.FactorStore with one DELETE.
func (s *FactorStore) UseBackupCode(ctx context.Context, userID uuid.UUID, codeHash []byte) (bool, error) {
	res, err := s.db.bun.NewDelete().Model((*backupCodeRow)(nil)).
		Where("user_id = ? AND code_hash = ?", userID, codeHash).Exec(ctx)
	return changedRow(res, err)
}

// InsertChallenge implements auth.FactorStore.
func (s *FactorStore) InsertChallenge(ctx context.Context, c *auth.Challenge) error {
	_, err := s.db.bun.NewInsert().Model(&challengeRow{TokenHash: c.TokenHash[:], UserID: c.UserID, Realm: string(c.Realm),
		Remember: c.Remember, Attempts: c.Attempts, ExpiresAt: c.ExpiresAt.UTC()}).Exec(ctx)
	return mapError(err)
}

// Challenge implements auth.FactorStore.
func (s *FactorStore) Challenge(ctx context.Context, tokenHash auth.TokenHash) (*auth.Challenge, error) {
	var r challengeRow
	err := s.db.bun.NewSelect().Model(&r).Where("token_hash = ?", tokenHash[:]).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, auth.ErrChallengeNotFound
	}
	if err != nil {
		return nil, mapError(err)
	}
	return &auth.Challenge{TokenHash: tokenHash, UserID: r.UserID, Realm: account.Realm(r.Realm), Remember: r.Remember,
		Attempts: r.Attempts, ExpiresAt: r.ExpiresAt.UTC()}, nil
}

// CountChallengeAttempt implements auth.FactorStore.
func (s *FactorStore) CountChallengeAttempt(ctx context.Context, tokenHash auth.TokenHash) (int, error) {
	var n int
	err := s.db.bun.NewUpdate().Model((*challengeRow)(nil)).Set("attempts = attempts + 1").
		Where("token_hash = ?", tokenHash[:]).Returning("attempts").Scan(ctx, &n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, auth.ErrChallengeNotFound
	}
	return n, mapError(err)
}

// TakeChallenge implements auth.FactorStore with one DELETE.
func (s *FactorStore) TakeChallenge(ctx context.Context, tokenHash auth.TokenHash) (bool, error) {
	res, err := s.db.bun.NewDelete().Model((*challengeRow)(nil)).Where("token_hash = ?", tokenHash[:]).Exec(ctx)
	return changedRow(res, err)
}

// SealedSecrets implements auth.FactorStore.
func (s *FactorStore) SealedSecrets(ctx context.Context, after uuid.UUID, limit int) ([]auth.SealedSecret, error) {
	var rows []twoFactorRow
	err := s.db.bun.NewSelect().Model(&rows).Column("user_id", "secret").
		Where("user_id > ?", after).OrderExpr("user_id").Limit(int64(limit)).Scan(ctx)
	if err != nil {
		return nil, mapError(err)
	}
	out := make([]auth.SealedSecret, len(rows))
	for i, r := range rows {
		out[i] = auth.SealedSecret{UserID: r.UserID, Secret: r.Secret}
	}
	return out, nil
}

// ReplaceSealedSecret implements auth.FactorStore as a compare-and-set.
func (s *FactorStore) ReplaceSealedSecret(ctx context.Context, userID uuid.UUID, old, updated string) (bool, error) {
	res, err := s.db.bun.NewUpdate().Model((*twoFactorRow)(nil)).Set("secret = ?", updated).
		Where("user_id = ? AND secret = ?", userID, old).Exec(ctx)
	return changedRow(res, err)
}

// changedRow reports whether a statement changed a row.
func changedRow(res sql.Result, err error) (bool, error) {
	if err != nil {
		return false, mapError(err)
	}
	n, err := res.RowsAffected()
	return n > 0, err
}
