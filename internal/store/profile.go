package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/profile"
)

type changeRow struct {
	bun.BaseModel `bun:"table:profile_changes"`

	ID              uuid.UUID  `bun:"id,pk"`
	UserID          uuid.UUID  `bun:"user_id"`
	Type            string     `bun:"type"`
	Status          string     `bun:"status"`
	Step            string     `bun:"step"`
	NewName         *string    `bun:"new_name"`
	NewNickname     *string    `bun:"new_nickname"`
	NewEmail        *string    `bun:"new_email"`
	NewPasswordHash *string    `bun:"new_password_hash"`
	BaseFingerprint string     `bun:"base_fingerprint"`
	CallbackURL     string     `bun:"callback_url"`
	RequestedBy     string     `bun:"requested_by"`
	CreatedAt       time.Time  `bun:"created_at"`
	UpdatedAt       time.Time  `bun:"updated_at"`
	CompletedAt     *time.Time `bun:"completed_at"`
}

func changeToRow(c *profile.Change) *changeRow {
	return &changeRow{
		ID: c.ID, UserID: c.UserID, Type: string(c.Type), Status: string(c.Status), Step: string(c.Step),
		NewName: nullable(c.NewName), NewNickname: nullable(c.NewNickname), NewEmail: nullable(c.NewEmail),
		NewPasswordHash: nullable(c.NewPasswordHash), BaseFingerprint: c.BaseFingerprint,
		CallbackURL: c.CallbackURL, RequestedBy: c.RequestedBy,
		CreatedAt: c.CreatedAt.UTC(), UpdatedAt: c.UpdatedAt.UTC(), CompletedAt: utcPtr(c.CompletedAt),
	}
}

func (r *changeRow) change() *profile.Change {
	return &profile.Change{
		ID: r.ID, UserID: r.UserID, Type: profile.Type(r.Type), Status: profile.Status(r.Status), Step: profile.Step(r.Step),
		NewName: deref(r.NewName), NewNickname: deref(r.NewNickname), NewEmail: deref(r.NewEmail),
		NewPasswordHash: deref(r.NewPasswordHash), BaseFingerprint: r.BaseFingerprint,
		CallbackURL: r.CallbackURL, RequestedBy: r.RequestedBy,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(), CompletedAt: utcPtr(r.CompletedAt),
	}
}

type profileTokenRow struct {
	bun.BaseModel `bun:"table:profile_tokens"`

	TokenHash    string     `bun:"token_hash,pk"`
	ChangeID     uuid.UUID  `bun:"change_id"`
	UserID       uuid.UUID  `bun:"user_id"`
	Type         string     `bun:"type"`
	Step         string     `bun:"step"`
	CreatedAt    time.Time  `bun:"created_at"`
	ExpiresAt    time.Time  `bun:"expires_at"`
	ConsumedAt   *time.Time `bun:"consumed_at"`
	SupersededAt *time.Time `bun:"superseded_at"`
}

func (r *profileTokenRow) token() *profile.Token {
	return &profile.Token{
		Hash: r.TokenHash, ChangeID: r.ChangeID, UserID: r.UserID, Type: profile.Type(r.Type), Step: profile.Step(r.Step),
		CreatedAt: r.CreatedAt.UTC(), ExpiresAt: r.ExpiresAt.UTC(),
		ConsumedAt: utcPtr(r.ConsumedAt), SupersededAt: utcPtr(r.SupersededAt),
	}
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// ProfileStore implements profile.Store.
type ProfileStore struct{ db *DB }

// Profiles returns the pending-change store.
func (db *DB) Profiles() *ProfileStore { return &ProfileStore{db: db} }

// InTx implements profile.Store with DB.InTx, so fn may run more than once.
func (s *ProfileStore) InTx(ctx context.Context, fn func(ctx context.Context, tx profile.Tx) error) error {
	return s.db.InTx(ctx, func(ctx context.Context, tx Tx) error { return fn(ctx, tx) })
}

// Token implements profile.Store.
func (s *ProfileStore) Token(ctx context.Context, hash string) (*profile.Token, *profile.Change, error) {
	tok, err := tokenByHash(ctx, s.db.bun, hash)
	if err != nil || tok == nil {
		return nil, nil, err
	}
	var row changeRow
	if err := s.db.bun.NewSelect().Model(&row).Where("id = ?", tok.ChangeID).Scan(ctx); err != nil {
		return nil, nil, mapError(err)
	}
	return tok, row.change(), nil
}

func tokenByHash(ctx context.Context, idb bun.IDB, hash string) (*profile.Token, error) {
	var row profileTokenRow
	err := idb.NewSelect().Model(&row).Where("token_hash = ?", hash).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, mapError(err)
	}
	return row.token(), nil
}

// The steps of profile.Tx.

func (t Tx) LockUser(ctx context.Context, id uuid.UUID) (*account.User, error) {
	var row userRow
	err := t.forUpdate(t.idb.NewSelect().Model(&row).Where("id = ?", id)).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, account.ErrNotFound
	}
	if err != nil {
		return nil, mapError(err)
	}
	return row.user(), nil
}

func (t Tx) TokenByHash(ctx context.Context, hash string) (*profile.Token, error) {
	return tokenByHash(ctx, t.idb, hash)
}

func (t Tx) ConsumeToken(ctx context.Context, hash string, now time.Time) (bool, error) {
	now = now.UTC()
	res, err := t.idb.NewUpdate().Model((*profileTokenRow)(nil)).
		Set("consumed_at = ?", now).
		Where("token_hash = ? AND consumed_at IS NULL AND superseded_at IS NULL AND expires_at > ?", hash, now).
		Exec(ctx)
	if err != nil {
		return false, mapError(err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func (t Tx) LockChange(ctx context.Context, id uuid.UUID) (*profile.Change, error) {
	var row changeRow
	if err := t.forUpdate(t.idb.NewSelect().Model(&row).Where("id = ?", id)).Scan(ctx); err != nil {
		return nil, mapError(err)
	}
	return row.change(), nil
}

func (t Tx) SupersedePending(ctx context.Context, userID uuid.UUID, now time.Time, types ...profile.Type) error {
	return supersedePendingChanges(ctx, t.idb, userID, now, types...)
}

// supersedePendingChanges marks the user's pending profile changes of the
// given types (all types when none are given) superseded and their tokens
// dead, dropping any new password hash they carried.
func supersedePendingChanges(ctx context.Context, tx bun.IDB, userID uuid.UUID, now time.Time, types ...profile.Type) error {
	now = now.UTC()
	pending := tx.NewSelect().Model((*changeRow)(nil)).Column("id").Where("user_id = ? AND status = ?", userID, profile.StatusPending)
	update := tx.NewUpdate().Model((*changeRow)(nil)).
		Set("status = ?", profile.StatusSuperseded).Set("new_password_hash = NULL").Set("updated_at = ?", now).
		Where("user_id = ? AND status = ?", userID, profile.StatusPending)
	if len(types) > 0 {
		names := make([]string, len(types))
		for i, ty := range types {
			names[i] = string(ty)
		}
		pending = pending.Where("type IN (?)", bun.List(names))
		update = update.Where("type IN (?)", bun.List(names))
	}
	if _, err := tx.NewUpdate().Model((*profileTokenRow)(nil)).Set("superseded_at = ?", now).
		Where("consumed_at IS NULL AND superseded_at IS NULL AND change_id IN (?)", pending).Exec(ctx); err != nil {
		return mapError(err)
	}
	_, err := update.Exec(ctx)
	return mapError(err)
}

func (t Tx) InsertChange(ctx context.Context, c *profile.Change) error {
	_, err := t.idb.NewInsert().Model(changeToRow(c)).Exec(ctx)
	return mapError(err)
}

// UpdateChange writes the state of c. A change that is no longer pending
// drops its new password hash: it is either in the users table now or
// will never be used.
func (t Tx) UpdateChange(ctx context.Context, c *profile.Change) error {
	q := t.idb.NewUpdate().Model((*changeRow)(nil)).
		Set("status = ?", string(c.Status)).Set("step = ?", string(c.Step)).
		Set("updated_at = ?", c.UpdatedAt.UTC()).Set("completed_at = ?", utcPtr(c.CompletedAt)).
		Where("id = ?", c.ID)
	if c.Status != profile.StatusPending {
		q = q.Set("new_password_hash = NULL")
	}
	_, err := q.Exec(ctx)
	return mapError(err)
}

func (t Tx) InsertToken(ctx context.Context, tok *profile.Token) error {
	row := &profileTokenRow{
		TokenHash: tok.Hash, ChangeID: tok.ChangeID, UserID: tok.UserID, Type: string(tok.Type), Step: string(tok.Step),
		CreatedAt: tok.CreatedAt.UTC(), ExpiresAt: tok.ExpiresAt.UTC(),
	}
	_, err := t.idb.NewInsert().Model(row).Exec(ctx)
	return mapError(err)
}

func (t Tx) NicknameTaken(ctx context.Context, realm account.Realm, nickname string, except uuid.UUID) (bool, error) {
	ok, err := t.idb.NewSelect().Model((*userRow)(nil)).
		Where("realm = ? AND nickname_key = ? AND id <> ?", string(realm), account.NicknameKey(nickname), except).Exists(ctx)
	return ok, mapError(err)
}

func (t Tx) EmailTaken(ctx context.Context, realm account.Realm, email string, except uuid.UUID) (bool, error) {
	ok, err := t.idb.NewSelect().Model((*userRow)(nil)).
		Where("realm = ? AND email = ? AND id <> ?", string(realm), email, except).Exists(ctx)
	return ok, mapError(err)
}

func (t Tx) UpdateProfile(ctx context.Context, userID uuid.UUID, name, nickname string, at time.Time) error {
	_, err := t.idb.NewUpdate().Model((*userRow)(nil)).
		Set("name = ?", name).Set("nickname = ?", nickname).Set("nickname_key = ?", account.NicknameKey(nickname)).
		Set("updated_at = ?", at.UTC()).Where("id = ?", userID).Exec(ctx)
	return mapUserError(err)
}

// UpdateEmail also deletes the tokens mailed to the user's old address
// (password reset, email verification): that inbox no longer speaks for
// the account.
func (t Tx) UpdateEmail(ctx context.Context, userID uuid.UUID, email string, at time.Time) error {
	_, err := t.idb.NewUpdate().Model((*userRow)(nil)).
		Set("email = ?", email).Set("email_verified = ?", true).
		Set("updated_at = ?", at.UTC()).Where("id = ?", userID).Exec(ctx)
	if err != nil {
		return mapUserError(err)
	}
	_, err = t.idb.NewDelete().Model((*authTokenRow)(nil)).Where("user_id = ?", userID).Exec(ctx)
	return mapError(err)
}
