package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/towerdefence/platformctl/internal/account"
)

type userRow struct {
	bun.BaseModel `bun:"table:users"`

	ID            uuid.UUID `bun:"id,pk"`
	Realm         string    `bun:"realm"`
	Email         string    `bun:"email"`
	Name          string    `bun:"name"`
	Nickname      *string   `bun:"nickname"`
	NicknameKey   *string   `bun:"nickname_key"`
	EmailVerified bool      `bun:"email_verified"`
	Image         *string   `bun:"image"`
	PasswordHash  string    `bun:"password_hash"`
	Role          *string   `bun:"role"`
	IsAnonymous   bool      `bun:"is_anonymous"`
	CreatedAt     time.Time `bun:"created_at"`
	UpdatedAt     time.Time `bun:"updated_at"`
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func userToRow(u *account.User) *userRow {
	r := &userRow{
		ID: u.ID, Realm: string(u.Realm), Email: u.Email, Name: u.Name,
		Nickname: nullable(u.Nickname), EmailVerified: u.EmailVerified, Image: u.Image,
		PasswordHash: u.PasswordHash, Role: nullable(u.Role), IsAnonymous: u.IsAnonymous,
		CreatedAt: u.CreatedAt.UTC(), UpdatedAt: u.UpdatedAt.UTC(),
	}
	if u.Nickname != "" {
		r.NicknameKey = nullable(account.NicknameKey(u.Nickname))
	}
	return r
}

func (r *userRow) user() *account.User {
	return &account.User{
		ID: r.ID, Realm: account.Realm(r.Realm), Email: r.Email, Name: r.Name,
		Nickname: deref(r.Nickname), EmailVerified: r.EmailVerified, Image: r.Image,
		PasswordHash: r.PasswordHash, Role: deref(r.Role), IsAnonymous: r.IsAnonymous,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
	}
}

// AccountStore implements account.Store.
type AccountStore struct{ db *DB }

// Accounts returns the account store.
func (db *DB) Accounts() *AccountStore { return &AccountStore{db: db} }

// InsertUser implements account.Store.
func (s *AccountStore) InsertUser(ctx context.Context, u *account.User) error {
	return insertUser(ctx, s.db.bun, u)
}

// InsertUser implements the insert-user step of auth.Tx and seed.Tx. The
// unique indexes, not a prior SELECT, decide duplicates, so two concurrent
// sign-ups with one nickname cannot both succeed.
func (t Tx) InsertUser(ctx context.Context, u *account.User) error {
	return insertUser(ctx, t.idb, u)
}

func insertUser(ctx context.Context, idb bun.IDB, u *account.User) error {
	_, err := idb.NewInsert().Model(userToRow(u)).Exec(ctx)
	return mapUserError(err)
}

// mapUserError turns unique-index violations on users into the account
// package's errors. SQLite names the columns of a composite unique index
// ("users.realm, users.email"), not the index, so both forms are matched.
func mapUserError(err error) error {
	switch {
	case err == nil:
		return nil
	case uniqueViolation(err, "users_email_key"), uniqueViolation(err, "users.email"):
		return account.ErrEmailTaken
	case uniqueViolation(err, "users_nickname_key"), uniqueViolation(err, "users.nickname_key"):
		return account.ErrNicknameTaken
	}
	return mapError(err)
}

// UserByID implements account.Store.
func (s *AccountStore) UserByID(ctx context.Context, id uuid.UUID) (*account.User, error) {
	return userWhere(ctx, s.db.bun, "id = ?", id)
}

// UserByEmail implements account.Store.
//
// It is sign-in's lookup, so it takes the raw road: its values are bound
// parameters rather than the literals bun writes into a query, so that
// PostgreSQL runs one prepared statement per connection instead of
// parsing and planning every call.
func (s *AccountStore) UserByEmail(ctx context.Context, realm account.Realm, email string) (*account.User, error) {
	var row userRow
	err := s.db.raw().one(ctx, row.scan,
		"SELECT "+userColumns+" FROM users WHERE realm = ? AND email = ? LIMIT 1", string(realm), email)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, account.ErrNotFound
	}
	if err != nil {
		return nil, mapError(err)
	}
	return row.user(), nil
}

// userColumns are the columns userRow.scan reads, in its order.
const userColumns = "id, realm, email, name, nickname, nickname_key, email_verified, image, password_hash, role, " +
	"is_anonymous, created_at, updated_at"

// scan reads one row of userColumns into r, for the raw road.
func (r *userRow) scan(row rowScanner) error {
	return row.Scan(dbUUID{&r.ID}, &r.Realm, &r.Email, &r.Name, nullString{&r.Nickname}, nullString{&r.NicknameKey},
		&r.EmailVerified, nullString{&r.Image}, &r.PasswordHash, nullString{&r.Role}, &r.IsAnonymous,
		dbTime{&r.CreatedAt}, dbTime{&r.UpdatedAt})
}

// UserByID implements the read-user step of auth.Tx.
func (t Tx) UserByID(ctx context.Context, id uuid.UUID) (*account.User, error) {
	return userWhere(ctx, t.idb, "id = ?", id)
}

func userWhere(ctx context.Context, idb bun.IDB, where string, args ...any) (*account.User, error) {
	var row userRow
	err := idb.NewSelect().Model(&row).Where(where, args...).Limit(1).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, account.ErrNotFound
	}
	if err != nil {
		return nil, mapError(err)
	}
	return row.user(), nil
}

// SetPasswordHash implements account.Store.
func (s *AccountStore) SetPasswordHash(ctx context.Context, id uuid.UUID, hash string, at time.Time) error {
	return setPasswordHash(ctx, s.db.bun, id, hash, at)
}

// SetPasswordHash implements the set-password step of auth.Tx and
// profile.Tx (password reset, confirmed password change).
func (t Tx) SetPasswordHash(ctx context.Context, userID uuid.UUID, hash string, at time.Time) error {
	return setPasswordHash(ctx, t.idb, userID, hash, at)
}

func setPasswordHash(ctx context.Context, idb bun.IDB, id uuid.UUID, hash string, at time.Time) error {
	res, err := idb.NewUpdate().Model((*userRow)(nil)).
		Set("password_hash = ?", hash).Set("updated_at = ?", at.UTC()).
		Where("id = ?", id).Exec(ctx)
	if err != nil {
		return mapError(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return account.ErrNotFound
	}
	return nil
}

// Taken implements account.Store with one query over both unique indexes.
func (s *AccountStore) Taken(ctx context.Context, realm account.Realm, email, nicknameKey string) (emailTaken, nicknameTaken bool, err error) {
	var rows []struct {
		Email       string  `bun:"email"`
		NicknameKey *string `bun:"nickname_key"`
	}
	q := s.db.bun.NewSelect().Table("users").Column("email", "nickname_key").Where("realm = ?", string(realm))
	if nicknameKey != "" {
		q = q.Where("(email = ? OR nickname_key = ?)", email, nicknameKey)
	} else {
		q = q.Where("email = ?", email)
	}
	if err := q.Limit(2).Scan(ctx, &rows); err != nil {
		return false, false, mapError(err)
	}
	for _, r := range rows {
		emailTaken = emailTaken || r.Email == email
		nicknameTaken = nicknameTaken || (nicknameKey != "" && r.NicknameKey != nil && *r.NicknameKey == nicknameKey)
	}
	return emailTaken, nicknameTaken, nil
}
