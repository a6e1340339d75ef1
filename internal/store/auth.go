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

type sessionRow struct {
	bun.BaseModel `bun:"table:sessions"`

	ID        uuid.UUID `bun:"id,pk"`
	TokenHash []byte    `bun:"token_hash"`
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
		ID: s.ID, TokenHash: s.TokenHash[:], UserID: s.UserID, Realm: string(s.Realm), Remember: s.Remember,
		ExpiresAt: s.ExpiresAt.UTC(), CreatedAt: s.CreatedAt.UTC(), UpdatedAt: s.UpdatedAt.UTC(),
		IPAddress: s.IPAddress, UserAgent: s.UserAgent,
	}
}

func (r *sessionRow) session() auth.Session {
	return auth.Session{
		ID: r.ID, TokenHash: storedHash(r.TokenHash), UserID: r.UserID, Realm: account.Realm(r.Realm), Remember: r.Remember,
		ExpiresAt: r.ExpiresAt.UTC(), CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
		IPAddress: r.IPAddress, UserAgent: r.UserAgent,
	}
}

// SessionStore implements auth.Store.
type SessionStore struct{ db *DB }

// lookupSessionSQL reads a session and its user by the token's hash.
const lookupSessionSQL = `SELECT s.id, s.user_id, s.realm, s.remember, s.expires_at, s.created_at, s.updated_at,
 s.ip_address, s.user_agent, u.realm, u.email, u.name, u.nickname, u.email_verified, u.image, u.password_hash,
 u.role, u.created_at, u.updated_at, u.is_anonymous
FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.token_hash = ?`

// Sessions returns the session store.
func (db *DB) Sessions() *SessionStore { return &SessionStore{db: db} }

// InTx implements auth.Store with DB.InTx, so fn may run more than once.
func (s *SessionStore) InTx(ctx context.Context, fn func(ctx context.Context, tx auth.Tx) error) error {
	return s.db.InTx(ctx, func(ctx context.Context, tx Tx) error { return fn(ctx, tx) })
}

// storedHash is a token_hash column's value as the digest it holds. The
// columns' CHECK constraints hold them to 32 bytes.
func storedHash(b []byte) auth.TokenHash {
	var h auth.TokenHash
	copy(h[:], b)
	return h
}

// InsertSession implements auth.Store.
func (s *SessionStore) InsertSession(ctx context.Context, sess *auth.Session) error {
	return insertSession(ctx, s.db.bun, sess)
}

// InsertSession implements the insert-session step of auth.Tx.
func (t Tx) InsertSession(ctx context.Context, sess *auth.Session) error {
	return insertSession(ctx, t.idb, sess)
}

func insertSession(ctx context.Context, idb bun.IDB, sess *auth.Session) error {
	_, err := idb.NewInsert().Model(sessionToRow(sess)).Exec(ctx)
	return mapError(err)
}

// SessionByTokenHash implements auth.Store with one indexed query that
// returns the session and its user together. It is the hot path of every
// signed-in request, so it takes the raw road: on PostgreSQL it runs on
// pgx directly, prepared once per connection and scanned without
// database/sql's per-row reflection.
func (s *SessionStore) SessionByTokenHash(ctx context.Context, tokenHash auth.TokenHash) (*auth.Session, *account.User, error) {
	var r lookupRow
	err := s.db.raw().one(ctx, r.scan, lookupSessionSQL, tokenHash[:])
	if errors.Is(err, sql.ErrNoRows) {
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
	remember, emailVerified, anonymous        bool
	expiresAt, sessionCreated, sessionUpdated time.Time
	userCreated, userUpdated                  time.Time
	ip, userAgent, email, name, passwordHash  string
	nickname, role                            string
	image                                     optString
	// dests are the scan destinations, kept here because the row lives
	// on the heap anyway: a slice of its own would cost an allocation.
	dests [20]any
}

// scan reads one row of lookupSessionSQL into r.
func (r *lookupRow) scan(row rowScanner) error { return row.Scan(r.dest()...) }

// dest lists the scan destinations of lookupSessionSQL's columns; they
// serve pgx and database/sql alike.
func (r *lookupRow) dest() []any {
	r.dests = [...]any{dbUUID{&r.sessionID}, dbUUID{&r.userID}, &r.sessionRealm, &r.remember, &r.expiresAt,
		&r.sessionCreated, &r.sessionUpdated, &r.ip, &r.userAgent, &r.userRealm, &r.email, &r.name,
		emptyString{&r.nickname}, &r.emailVerified, &r.image, &r.passwordHash, emptyString{&r.role},
		&r.userCreated, &r.userUpdated, &r.anonymous}
	return r.dests[:]
}

func (r *lookupRow) result(tokenHash auth.TokenHash) (*auth.Session, *account.User) {
	sess := &auth.Session{
		ID: r.sessionID, UserID: r.userID, Realm: account.Realm(r.sessionRealm), Remember: r.remember,
		ExpiresAt: r.expiresAt.UTC(), CreatedAt: r.sessionCreated.UTC(), UpdatedAt: r.sessionUpdated.UTC(),
		IPAddress: r.ip, UserAgent: r.userAgent, TokenHash: tokenHash,
	}
	u := &account.User{
		ID: r.userID, Realm: account.Realm(r.userRealm), Email: r.email, Name: r.name,
		Nickname: r.nickname, EmailVerified: r.emailVerified, Role: r.role,
		PasswordHash: r.passwordHash, CreatedAt: r.userCreated.UTC(), UpdatedAt: r.userUpdated.UTC(),
		IsAnonymous: r.anonymous,
	}
	if r.image.Valid {
		u.Image = &r.image.String
	}
	return sess, u
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

// DeleteSessions implements auth.Store.
func (s *SessionStore) DeleteSessions(ctx context.Context, userID uuid.UUID, m auth.SessionMatch) (int, error) {
	return deleteSessions(ctx, s.db.bun, userID, m)
}

// DeleteSessions implements the revoke-sessions step of auth.Tx.
func (t Tx) DeleteSessions(ctx context.Context, userID uuid.UUID, m auth.SessionMatch) (int, error) {
	return deleteSessions(ctx, t.idb, userID, m)
}

// RevokeSessions implements the revoke-sessions step of profile.Tx: every
// session of the user, so that a confirmed password change and the
// revocation commit together.
func (t Tx) RevokeSessions(ctx context.Context, userID uuid.UUID) (int, error) {
	return deleteSessions(ctx, t.idb, userID, auth.SessionMatch{})
}

func deleteSessions(ctx context.Context, idb bun.IDB, userID uuid.UUID, m auth.SessionMatch) (int, error) {
	q := idb.NewDelete().Model((*sessionRow)(nil)).Where("user_id = ?", userID)
	if m.ID != uuid.Nil {
		q = q.Where("id = ?", m.ID)
	}
	if !m.TokenHash.IsZero() {
		q = q.Where("token_hash = ?", m.TokenHash[:])
	}
	if m.Except != uuid.Nil {
		q = q.Where("id <> ?", m.Except)
	}
	res, err := q.Exec(ctx)
	if err != nil {
		return 0, mapError(err)
	}
	n, err := res.RowsAffected()
	return int(n), err
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

type authTokenRow struct {
	bun.BaseModel `bun:"table:auth_tokens"`

	ID        uuid.UUID `bun:"id,pk"`
	TokenHash []byte    `bun:"token_hash"`
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
		TokenHash: storedHash(r.TokenHash), ExpiresAt: r.ExpiresAt.UTC(), CreatedAt: r.CreatedAt.UTC(),
	}
}

// InsertMailToken implements the store-mailed-token step of auth.Tx.
func (t Tx) InsertMailToken(ctx context.Context, tok *auth.MailToken) error {
	row := &authTokenRow{
		ID: tok.ID, TokenHash: tok.TokenHash[:], Purpose: tok.Purpose, Realm: string(tok.Realm), UserID: tok.UserID,
		Email: tok.Email, ExpiresAt: tok.ExpiresAt.UTC(), CreatedAt: tok.CreatedAt.UTC(),
	}
	_, err := t.idb.NewInsert().Model(row).Exec(ctx)
	return mapError(err)
}

// DeleteMailTokens implements auth.Tx.
func (t Tx) DeleteMailTokens(ctx context.Context, userID uuid.UUID, purpose string) error {
	_, err := t.idb.NewDelete().Model((*authTokenRow)(nil)).
		Where("user_id = ? AND purpose = ?", userID, purpose).Exec(ctx)
	return mapError(err)
}

// PeekMailToken implements auth.Store.
func (s *SessionStore) PeekMailToken(ctx context.Context, purpose string, realm account.Realm, tokenHash auth.TokenHash, now time.Time) (*auth.MailToken, error) {
	var row authTokenRow
	err := s.db.bun.NewSelect().Model(&row).
		Where("token_hash = ? AND purpose = ? AND realm = ? AND expires_at > ?", tokenHash[:], purpose, string(realm), now.UTC()).
		Limit(1).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, auth.ErrTokenNotFound
	}
	if err != nil {
		return nil, mapError(err)
	}
	return row.token(), nil
}

// TakeMailToken implements the consume-token step of auth.Tx: it deletes
// the token and returns it, expired or not. The DELETE is what makes the
// token single-use: of two concurrent consumers only one gets the row.
func (t Tx) TakeMailToken(ctx context.Context, purpose string, realm account.Realm, tokenHash auth.TokenHash) (*auth.MailToken, error) {
	var rows []authTokenRow
	err := t.idb.NewDelete().Model(&rows).
		Where("token_hash = ? AND purpose = ? AND realm = ?", tokenHash[:], purpose, string(realm)).
		Returning("*").Scan(ctx)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, mapError(err)
	}
	if len(rows) == 0 {
		return nil, auth.ErrTokenNotFound
	}
	return rows[0].token(), nil
}

// MarkEmailVerified implements auth.Tx.
func (t Tx) MarkEmailVerified(ctx context.Context, userID uuid.UUID, email string, at time.Time) (bool, error) {
	res, err := t.idb.NewUpdate().Model((*userRow)(nil)).
		Set("email_verified = ?", true).Set("updated_at = ?", at.UTC()).
		Where("id = ? AND email = ?", userID, email).Exec(ctx)
	if err != nil {
		return false, mapError(err)
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// SupersedeProfileChanges implements auth.Tx: every pending profile
// change of the user is superseded and its tokens stop working.
func (t Tx) SupersedeProfileChanges(ctx context.Context, userID uuid.UUID, at time.Time) error {
	return supersedePendingChanges(ctx, t.idb, userID, at)
}
