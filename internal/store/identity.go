package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/auth"
)

type identityRow struct {
	bun.BaseModel `bun:"table:user_identities"`

	ID        uuid.UUID `bun:"id,pk"`
	UserID    uuid.UUID `bun:"user_id"`
	Provider  string    `bun:"provider"`
	Issuer    string    `bun:"issuer"`
	Subject   string    `bun:"subject"`
	Email     string    `bun:"email"`
	CreatedAt time.Time `bun:"created_at"`
	UpdatedAt time.Time `bun:"updated_at"`
}

func (r *identityRow) identity() auth.Identity {
	return auth.Identity{
		ID: r.ID, UserID: r.UserID, Provider: r.Provider, Issuer: r.Issuer, Subject: r.Subject, Email: r.Email,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
	}
}

type oauthStateRow struct {
	bun.BaseModel `bun:"table:oauth_states"`

	StateHash []byte    `bun:"state_hash,pk"`
	Provider  string    `bun:"provider"`
	Data      string    `bun:"data"`
	ExpiresAt time.Time `bun:"expires_at"`
	CreatedAt time.Time `bun:"created_at"`
}

// SocialStore implements auth.SocialStore.
type SocialStore struct{ db *DB }

// Social returns the store of provider identities, states and guests.
func (db *DB) Social() *SocialStore { return &SocialStore{db: db} }

var _ auth.SocialTx = Tx{}

// InSocialTx implements auth.SocialStore.
func (s *SocialStore) InSocialTx(ctx context.Context, fn func(ctx context.Context, tx auth.SocialTx) error) error {
	return s.db.InTx(ctx, func(ctx context.Context, tx Tx) error { return fn(ctx, tx) })
}

// InsertOAuthState implements auth.SocialStore.
func (s *SocialStore) InsertOAuthState(ctx context.Context, st *auth.OAuthState) error {
	data, err := json.Marshal(st.Data)
	if err != nil {
		return fmt.Errorf("encode oauth state: %w", err)
	}
	row := &oauthStateRow{StateHash: st.Hash[:], Provider: st.Provider, Data: string(data),
		ExpiresAt: st.ExpiresAt.UTC(), CreatedAt: st.CreatedAt.UTC()}
	_, err = s.db.bun.NewInsert().Model(row).Exec(ctx)
	return mapError(err)
}

// Identities implements auth.SocialStore.
func (s *SocialStore) Identities(ctx context.Context, userID uuid.UUID) ([]auth.Identity, error) {
	return identitiesOf(ctx, s.db.bun, userID)
}

// IdentitiesOf implements auth.SocialTx.
func (t Tx) IdentitiesOf(ctx context.Context, userID uuid.UUID) ([]auth.Identity, error) {
	return identitiesOf(ctx, t.idb, userID)
}

// identitiesOf reads a user's identities; an account holds a handful, and
// the list stops at 100 whatever happens.
func identitiesOf(ctx context.Context, idb bun.IDB, userID uuid.UUID) ([]auth.Identity, error) {
	var rows []identityRow
	err := idb.NewSelect().Model(&rows).Where("user_id = ?", userID).OrderExpr("created_at, id").Limit(100).Scan(ctx)
	if err != nil {
		return nil, mapError(err)
	}
	out := make([]auth.Identity, len(rows))
	for i := range rows {
		out[i] = rows[i].identity()
	}
	return out, nil
}

// DeleteGuest implements auth.SocialStore; the player state goes with the
// user through the foreign keys' cascades.
func (s *SocialStore) DeleteGuest(ctx context.Context, userID uuid.UUID) error {
	_, err := s.db.bun.NewDelete().Model((*userRow)(nil)).Where("id = ? AND is_anonymous", userID).Exec(ctx)
	return mapError(err)
}

// TakeOAuthState implements auth.SocialTx: the DELETE decides which of
// concurrent callbacks gets the state.
func (t Tx) TakeOAuthState(ctx context.Context, hash auth.TokenHash) (*auth.OAuthState, error) {
	var rows []oauthStateRow
	err := t.idb.NewDelete().Model(&rows).Where("state_hash = ?", hash[:]).Returning("*").Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) || err == nil && len(rows) == 0 {
		return nil, auth.ErrOAuthStateNotFound
	}
	if err != nil {
		return nil, mapError(err)
	}
	r := rows[0]
	st := &auth.OAuthState{Hash: hash, Provider: r.Provider, ExpiresAt: r.ExpiresAt.UTC(), CreatedAt: r.CreatedAt.UTC()}
	if err := json.Unmarshal([]byte(r.Data), &st.Data); err != nil {
		return nil, fmt.Errorf("decode oauth state: %w", err)
	}
	return st, nil
}

// IdentityBySubject implements auth.SocialTx.
func (t Tx) IdentityBySubject(ctx context.Context, issuer, subject string) (*auth.Identity, error) {
	var row identityRow
	err := t.idb.NewSelect().Model(&row).Where("issuer = ? AND subject = ?", issuer, subject).Limit(1).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, auth.ErrIdentityNotFound
	}
	if err != nil {
		return nil, mapError(err)
	}
	id := row.identity()
	return &id, nil
}

// InsertIdentity implements auth.SocialTx.
func (t Tx) InsertIdentity(ctx context.Context, id *auth.Identity) error {
	row := &identityRow{ID: id.ID, UserID: id.UserID, Provider: id.Provider, Issuer: id.Issuer, Subject: id.Subject,
		Email: id.Email, CreatedAt: id.CreatedAt.UTC(), UpdatedAt: id.UpdatedAt.UTC()}
	_, err := t.idb.NewInsert().Model(row).Exec(ctx)
	return mapError(err)
}

// DeleteIdentity implements auth.SocialTx.
func (t Tx) DeleteIdentity(ctx context.Context, userID, id uuid.UUID) (bool, error) {
	res, err := t.idb.NewDelete().Model((*identityRow)(nil)).Where("id = ? AND user_id = ?", id, userID).Exec(ctx)
	if err != nil {
		return false, mapError(err)
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

// UserByEmail implements the find-by-email step of auth.SocialTx.
func (t Tx) UserByEmail(ctx context.Context, realm account.Realm, email string) (*account.User, error) {
	return userWhere(ctx, t.idb, "realm = ? AND email = ?", string(realm), email)
}

// UpdateUser implements auth.SocialTx (a guest's upgrade).
func (t Tx) UpdateUser(ctx context.Context, u *account.User) error {
	row := userToRow(u)
	_, err := t.idb.NewUpdate().Model(row).
		Column("email", "name", "nickname", "nickname_key", "email_verified", "image", "password_hash", "is_anonymous", "updated_at").
		WherePK().Exec(ctx)
	return mapUserError(err)
}
