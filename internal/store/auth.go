package store

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/uptrace/bun"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/audit"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/mail"
)

type sessionRow struct {
	bun.BaseModel `bun:"table:sessions"`

	ID        uuid.UUID `bun:"id,pk"`
	TokenHash string    `bun:"token_hash"`
	UserID    uuid.UUID `bun:"user_id"`
	Realm     string    `bun:"realm"`
	Remember  bool      `bun:"remember"`
	ExpiresAt time.Time `bun:"expires_at"`
	CreatedAt time.Time `bun:"created_at"`
	UpdatedAt time.Time `bun:"updated_at"`
	IPAddress string    `bun:"ip_address"`
	UserAgent string    `bun:"user_agent"`
}

func sessionToRow(s *auth.Session) *sessionRow {
	return &sessionRow{
		ID: s.ID, TokenHash: s.TokenHash, UserID: s.UserID, Realm: string(s.Realm), Remember: s.Remember,
		ExpiresAt: s.ExpiresAt.UTC(), CreatedAt: s.CreatedAt.UTC(), UpdatedAt: s.UpdatedAt.UTC(),
		IPAddress: s.IPAddress, UserAgent: s.UserAgent,
	}
}

func (r *sessionRow) session() auth.Session {
	return auth.Session{
		ID: r.ID, TokenHash: r.TokenHash, UserID: r.UserID, Realm: account.Realm(r.Realm), Remember: r.Remember,
		ExpiresAt: r.ExpiresAt.UTC(), CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
		IPAddress: r.IPAddress, UserAgent: r.UserAgent,
	}
}

// SessionStore implements auth.Store.
type SessionStore struct {
	db *DB
	// lookupSQL is the hot-path query with the dialect's own placeholder,
	// run on database/sql directly so that PostgreSQL prepares it once per
	// connection instead of parsing an interpolated text every time.
	lookupSQL string
}

const lookupSessionSQL = `SELECT s.id, s.user_id, s.realm, s.remember, s.expires_at, s.created_at, s.updated_at,
 s.ip_address, s.user_agent, u.realm, u.email, u.name, u.nickname, u.email_verified, u.image, u.password_hash,
 u.role, u.created_at, u.updated_at
FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.token_hash = `

// Sessions returns the session store.
func (db *DB) Sessions() *SessionStore {
	ph := "?"
	if db.dialect == Postgres {
		ph = "$1"
	}
	return &SessionStore{db: db, lookupSQL: lookupSessionSQL + ph}
}

// CreateUserWithSession implements auth.Store: sign-up writes the user and
// its first session together or not at all.
func (s *SessionStore) CreateUserWithSession(ctx context.Context, u *account.User, sess *auth.Session) error {
	return s.db.InTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if err := insertUser(ctx, tx, u); err != nil {
			return err
		}
		return insertSession(ctx, tx, sess)
	})
}

// InsertSession implements auth.Store.
func (s *SessionStore) InsertSession(ctx context.Context, sess *auth.Session) error {
	return insertSession(ctx, s.db.bun, sess)
}

func insertSession(ctx context.Context, idb bun.IDB, sess *auth.Session) error {
	_, err := idb.NewInsert().Model(sessionToRow(sess)).Exec(ctx)
	return mapError(err)
}

// SessionByTokenHash implements auth.Store with one indexed query that
// returns the session and its user together. It is the hot path of every
// signed-in request, so on PostgreSQL it runs on pgx directly (prepared
// once per connection, scanned without database/sql's per-row reflection).
func (s *SessionStore) SessionByTokenHash(ctx context.Context, tokenHash string) (*auth.Session, *account.User, error) {
	var r lookupRow
	var err error
	if s.db.dialect == Postgres {
		err = s.lookupPostgres(ctx, tokenHash, &r)
	} else {
		err = s.db.bun.DB.QueryRowContext(ctx, s.lookupSQL, tokenHash).Scan(
			&r.sessionID, &r.userID, &r.sessionRealm, &r.remember, &r.expiresAt, &r.sessionCreated, &r.sessionUpdated,
			&r.ip, &r.userAgent, &r.userRealm, &r.email, &r.name, &r.nickname, &r.emailVerified, &r.image,
			&r.passwordHash, &r.role, &r.userCreated, &r.userUpdated)
	}
	if errors.Is(err, sql.ErrNoRows) || errors.Is(err, pgx.ErrNoRows) {
		return nil, nil, auth.ErrSessionNotFound
	}
	if err != nil {
		return nil, nil, mapError(err)
	}
	sess, u := r.result(tokenHash)
	return sess, u, nil
}

// lookupRow holds the columns of lookupSessionSQL.
type lookupRow struct {
	sessionID, userID                         uuid.UUID
	sessionRealm, userRealm                   string
	remember, emailVerified                   bool
	expiresAt, sessionCreated, sessionUpdated time.Time
	userCreated, userUpdated                  time.Time
	ip, userAgent, email, name, passwordHash  string
	nickname, image, role                     sql.NullString
}

func (r *lookupRow) result(tokenHash string) (*auth.Session, *account.User) {
	sess := &auth.Session{
		ID: r.sessionID, UserID: r.userID, Realm: account.Realm(r.sessionRealm), Remember: r.remember,
		ExpiresAt: r.expiresAt.UTC(), CreatedAt: r.sessionCreated.UTC(), UpdatedAt: r.sessionUpdated.UTC(),
		IPAddress: r.ip, UserAgent: r.userAgent, TokenHash: tokenHash,
	}
	u := &account.User{
		ID: r.userID, Realm: account.Realm(r.userRealm), Email: r.email, Name: r.name,
		Nickname: r.nickname.String, EmailVerified: r.emailVerified, Role: r.role.String,
		PasswordHash: r.passwordHash, CreatedAt: r.userCreated.UTC(), UpdatedAt: r.userUpdated.UTC(),
	}
	if r.image.Valid {
		u.Image = &r.image.String
	}
	return sess, u
}

func (s *SessionStore) lookupPostgres(ctx context.Context, tokenHash string, r *lookupRow) error {
	return withPgx(ctx, s.db.bun.DB, func(pc *pgx.Conn) error {
		var sid, uid pgtype.UUID
		var nickname, image, role pgtype.Text
		err := pc.QueryRow(ctx, s.lookupSQL, tokenHash).Scan(
			&sid, &uid, &r.sessionRealm, &r.remember, &r.expiresAt, &r.sessionCreated, &r.sessionUpdated,
			&r.ip, &r.userAgent, &r.userRealm, &r.email, &r.name, &nickname, &r.emailVerified, &image,
			&r.passwordHash, &role, &r.userCreated, &r.userUpdated)
		if err != nil {
			return err
		}
		r.sessionID, r.userID = sid.Bytes, uid.Bytes
		r.nickname = sql.NullString{String: nickname.String, Valid: nickname.Valid}
		r.image = sql.NullString{String: image.String, Valid: image.Valid}
		r.role = sql.NullString{String: role.String, Valid: role.Valid}
		return nil
	})
}

// ExtendSession implements auth.Store; it reports false when the session
// no longer exists.
func (s *SessionStore) ExtendSession(ctx context.Context, id uuid.UUID, expiresAt, updatedAt time.Time) (bool, error) {
	res, err := s.db.bun.NewUpdate().Model((*sessionRow)(nil)).
		Set("expires_at = ?", expiresAt.UTC()).Set("updated_at = ?", updatedAt.UTC()).
		Where("id = ?", id).Exec(ctx)
	if err != nil {
		return false, mapError(err)
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

// DeleteSession implements auth.Store.
func (s *SessionStore) DeleteSession(ctx context.Context, id uuid.UUID) error {
	_, err := s.db.bun.NewDelete().Model((*sessionRow)(nil)).Where("id = ?", id).Exec(ctx)
	return mapError(err)
}

// DeleteUserSession implements auth.Store: it deletes the session only if
// it belongs to userID.
func (s *SessionStore) DeleteUserSession(ctx context.Context, userID, sessionID uuid.UUID) (bool, error) {
	res, err := s.db.bun.NewDelete().Model((*sessionRow)(nil)).
		Where("id = ? AND user_id = ?", sessionID, userID).Exec(ctx)
	if err != nil {
		return false, mapError(err)
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

// DeleteUserSessionByTokenHash implements auth.Store.
func (s *SessionStore) DeleteUserSessionByTokenHash(ctx context.Context, userID uuid.UUID, tokenHash string) (bool, error) {
	res, err := s.db.bun.NewDelete().Model((*sessionRow)(nil)).
		Where("token_hash = ? AND user_id = ?", tokenHash, userID).Exec(ctx)
	if err != nil {
		return false, mapError(err)
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

// DeleteUserSessions implements auth.Store: every session of userID except
// keep (uuid.Nil keeps none).
func (s *SessionStore) DeleteUserSessions(ctx context.Context, userID, keep uuid.UUID) (int, error) {
	return revokeSessionsExcept(ctx, s.db.bun, userID, keep)
}

// revokeSessionsTx deletes every session of userID inside the caller's
// transaction, so that a confirmed password change (or reset) and the
// revocation of the user's sessions commit together.
func revokeSessionsTx(ctx context.Context, idb bun.IDB, userID uuid.UUID) (int, error) {
	return revokeSessionsExcept(ctx, idb, userID, uuid.Nil)
}

func revokeSessionsExcept(ctx context.Context, idb bun.IDB, userID, keep uuid.UUID) (int, error) {
	q := idb.NewDelete().Model((*sessionRow)(nil)).Where("user_id = ?", userID)
	if keep != uuid.Nil {
		q = q.Where("id <> ?", keep)
	}
	res, err := q.Exec(ctx)
	if err != nil {
		return 0, mapError(err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// ListUserSessions implements auth.Store: live sessions, newest first.
func (s *SessionStore) ListUserSessions(ctx context.Context, userID uuid.UUID, now time.Time) ([]auth.Session, error) {
	var rows []sessionRow
	err := s.db.bun.NewSelect().Model(&rows).
		Where("user_id = ? AND expires_at > ?", userID, now.UTC()).
		OrderExpr("created_at DESC, id").Limit(1000).Scan(ctx)
	if err != nil {
		return nil, mapError(err)
	}
	out := make([]auth.Session, len(rows))
	for i := range rows {
		out[i] = rows[i].session()
	}
	return out, nil
}

// DeleteExpiredSessions implements auth.Store.
func (s *SessionStore) DeleteExpiredSessions(ctx context.Context, now time.Time) (int, error) {
	res, err := s.db.bun.NewDelete().Model((*sessionRow)(nil)).Where("expires_at <= ?", now.UTC()).Exec(ctx)
	if err != nil {
		return 0, mapError(err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

type authTokenRow struct {
	bun.BaseModel `bun:"table:auth_tokens"`

	ID        uuid.UUID `bun:"id,pk"`
	TokenHash string    `bun:"token_hash"`
	Purpose   string    `bun:"purpose"`
	Realm     string    `bun:"realm"`
	UserID    uuid.UUID `bun:"user_id"`
	Email     string    `bun:"email"`
	ExpiresAt time.Time `bun:"expires_at"`
	CreatedAt time.Time `bun:"created_at"`
}

func (r *authTokenRow) token() *auth.MailToken {
	return &auth.MailToken{
		ID: r.ID, Purpose: r.Purpose, Realm: account.Realm(r.Realm), UserID: r.UserID, Email: r.Email,
		TokenHash: r.TokenHash, ExpiresAt: r.ExpiresAt.UTC(), CreatedAt: r.CreatedAt.UTC(),
	}
}

// CreateMailToken implements auth.Store. Earlier tokens of the same
// purpose stop working, so only the newest mail's link is live.
func (s *SessionStore) CreateMailToken(ctx context.Context, t *auth.MailToken, m *mail.Outgoing) error {
	return s.db.InTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewDelete().Model((*authTokenRow)(nil)).
			Where("user_id = ? AND purpose = ?", t.UserID, t.Purpose).Exec(ctx); err != nil {
			return err
		}
		row := &authTokenRow{
			ID: t.ID, TokenHash: t.TokenHash, Purpose: t.Purpose, Realm: string(t.Realm), UserID: t.UserID,
			Email: t.Email, ExpiresAt: t.ExpiresAt.UTC(), CreatedAt: t.CreatedAt.UTC(),
		}
		if _, err := tx.NewInsert().Model(row).Exec(ctx); err != nil {
			return err
		}
		return enqueueMailTx(ctx, tx, m)
	})
}

// DeleteExpiredMailTokens implements auth.Store.
func (s *SessionStore) DeleteExpiredMailTokens(ctx context.Context, now time.Time) error {
	_, err := s.db.bun.NewDelete().Model((*authTokenRow)(nil)).Where("expires_at <= ?", now.UTC()).Exec(ctx)
	return mapError(err)
}

// PeekMailToken implements auth.Store.
func (s *SessionStore) PeekMailToken(ctx context.Context, purpose string, realm account.Realm, tokenHash string, now time.Time) (*auth.MailToken, error) {
	var row authTokenRow
	err := s.db.bun.NewSelect().Model(&row).
		Where("token_hash = ? AND purpose = ? AND realm = ? AND expires_at > ?", tokenHash, purpose, string(realm), now.UTC()).
		Limit(1).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, auth.ErrTokenNotFound
	}
	if err != nil {
		return nil, mapError(err)
	}
	return row.token(), nil
}

// consumeMailTokenTx deletes a live token and returns it. The DELETE is
// what makes the token single-use: of two concurrent consumers only one
// gets the row back.
func consumeMailTokenTx(ctx context.Context, tx bun.IDB, purpose string, realm account.Realm, tokenHash string, now time.Time) (*auth.MailToken, error) {
	var rows []authTokenRow
	err := tx.NewDelete().Model(&rows).
		Where("token_hash = ? AND purpose = ? AND realm = ?", tokenHash, purpose, string(realm)).
		Returning("*").Scan(ctx)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	if len(rows) == 0 || !rows[0].ExpiresAt.After(now) {
		return nil, auth.ErrTokenNotFound
	}
	return rows[0].token(), nil
}

// VerifyEmail implements auth.Store.
func (s *SessionStore) VerifyEmail(ctx context.Context, realm account.Realm, tokenHash string, now time.Time) (*account.User, error) {
	var u *account.User
	err := s.db.InTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		t, err := consumeMailTokenTx(ctx, tx, auth.PurposeVerifyEmail, realm, tokenHash, now)
		if err != nil {
			return err
		}
		res, err := tx.NewUpdate().Model((*userRow)(nil)).
			Set("email_verified = ?", true).Set("updated_at = ?", now.UTC()).
			Where("id = ? AND email = ?", t.UserID, t.Email).Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return auth.ErrTokenNotFound // the address changed since the mail went out
		}
		u, err = userWhere(ctx, tx, "id = ?", t.UserID)
		return err
	})
	if err != nil {
		return nil, err
	}
	return u, nil
}

// ResetPassword implements auth.Store.
func (s *SessionStore) ResetPassword(ctx context.Context, realm account.Realm, tokenHash, passwordHash string, now time.Time, notice *mail.Outgoing) error {
	return s.db.InTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		t, err := consumeMailTokenTx(ctx, tx, auth.PurposeResetPassword, realm, tokenHash, now)
		if err != nil {
			return err
		}
		if err := setPasswordHash(ctx, tx, t.UserID, passwordHash, now); err != nil {
			return err
		}
		if _, err := revokeSessionsTx(ctx, tx, t.UserID); err != nil {
			return err
		}
		if err := supersedePendingChanges(ctx, tx, t.UserID, now); err != nil {
			return err
		}
		if _, err := tx.NewDelete().Model((*authTokenRow)(nil)).
			Where("user_id = ? AND purpose = ?", t.UserID, auth.PurposeResetPassword).Exec(ctx); err != nil {
			return err
		}
		if notice != nil {
			return enqueueMailTx(ctx, tx, notice)
		}
		return nil
	})
}

// CreateUserAudited implements auth.SupportStore.
func (s *SessionStore) CreateUserAudited(ctx context.Context, u *account.User, e *audit.Entry) error {
	return s.db.InTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if err := insertUser(ctx, tx, u); err != nil {
			return err
		}
		return insertAudit(ctx, tx, e)
	})
}

// DeleteSessionsAudited implements auth.SupportStore. The entry's details
// get the number of sessions revoked; a named session that does not exist
// is ErrSessionNotFound, and nothing is recorded.
func (s *SessionStore) DeleteSessionsAudited(ctx context.Context, userID, sessionID uuid.UUID, e *audit.Entry) (int, error) {
	var n int
	err := s.db.InTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		q := tx.NewDelete().Model((*sessionRow)(nil)).Where("user_id = ?", userID)
		if sessionID != uuid.Nil {
			q = q.Where("id = ?", sessionID)
		}
		res, err := q.Exec(ctx)
		if err != nil {
			return err
		}
		affected, _ := res.RowsAffected()
		n = int(affected)
		if sessionID != uuid.Nil && n == 0 {
			return auth.ErrSessionNotFound // nothing done, nothing to record
		}
		if e.Details == nil {
			e.Details = map[string]string{}
		}
		e.Details["revoked"] = strconv.Itoa(n)
		return insertAudit(ctx, tx, e)
	})
	return n, err
}

// InsertAudit implements auth.SupportStore.
func (s *SessionStore) InsertAudit(ctx context.Context, e *audit.Entry) error {
	return insertAudit(ctx, s.db.bun, e)
}
