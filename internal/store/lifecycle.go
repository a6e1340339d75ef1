package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/uptrace/bun"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/lifecycle"
	"github.com/towerdefence/platformctl/internal/platform"
)

var _ lifecycle.Tx = Tx{}

// How a deletion treats the rows of one column that refers to a user.
const (
	// eraseRows deletes the rows.
	eraseRows = "delete"
	// endedByAuth: auth's EndUserSessionsTx has ended them, so that every
	// replica hears of it; the store never deletes them itself.
	endedByAuth = "auth"
	// leftByPlayer: player's LeaveForGoodTx has taken the user out,
	// handing a hosted lobby over; what remains is deleted.
	leftByPlayer = "player"
)

// UserReference is one column that refers to users(id) and what deleting
// the user does to its rows.
type UserReference struct {
	Table, Column, Rule string
}

// UserReferences is every column that refers to a user, in the order a
// deletion visits them. A table that refers to users gets its entry here
// in the change that adds it; TestEveryUserReferenceHasARule reads the
// schema's foreign keys and fails on a column missing from this list.
var UserReferences = []UserReference{
	{"sessions", "user_id", endedByAuth},
	{"lobby_members", "user_id", leftByPlayer},
	{"lobbies", "host_id", eraseRows}, // only closed lobbies remain hosted by the user
	{"auth_tokens", "user_id", eraseRows},
	{"profile_tokens", "user_id", eraseRows},
	{"profile_changes", "user_id", eraseRows},
	{"social_edges", "user_id", eraseRows},
	{"social_edges", "other_id", eraseRows},
	{"player_profiles", "user_id", eraseRows},
	{"player_decks", "user_id", eraseRows},
	{"deletion_tokens", "user_id", eraseRows},
	{"user_suspensions", "user_id", eraseRows},
	{"user_identities", "user_id", eraseRows},
	{"two_factor_challenges", "user_id", eraseRows},
	{"backup_codes", "user_id", eraseRows},
	{"two_factors", "user_id", eraseRows},
	{"passkey_ceremonies", "user_id", eraseRows},
	{"passkeys", "user_id", eraseRows},
}

// Lifecycle returns the store of account deletion, export and suspension.
func (db *DB) Lifecycle() *LifecycleStore { return &LifecycleStore{db: db} }

// LifecycleStore implements lifecycle.Store.
type LifecycleStore struct{ db *DB }

// InTx implements lifecycle.Store with DB.InTx, so fn may run more than once.
func (s *LifecycleStore) InTx(ctx context.Context, fn func(ctx context.Context, tx lifecycle.Tx) error) error {
	return s.db.InTx(ctx, func(ctx context.Context, tx Tx) error { return fn(ctx, tx) })
}

type suspensionRow struct {
	bun.BaseModel `bun:"table:user_suspensions"`

	UserID    uuid.UUID  `bun:"user_id,pk"`
	Reason    string     `bun:"reason"`
	Actor     string     `bun:"actor"`
	Until     *time.Time `bun:"until"`
	CreatedAt time.Time  `bun:"created_at"`
}

func (r *suspensionRow) suspension() *auth.Suspension {
	s := &auth.Suspension{UserID: r.UserID, Reason: r.Reason, Actor: r.Actor, CreatedAt: r.CreatedAt.UTC()}
	if r.Until != nil {
		t := r.Until.UTC()
		s.Until = &t
	}
	return s
}

type tombstoneRow struct {
	bun.BaseModel `bun:"table:user_tombstones"`

	ID        uuid.UUID `bun:"id,pk"`
	Realm     string    `bun:"realm"`
	DeletedAt time.Time `bun:"deleted_at"`
	Reason    string    `bun:"reason"`
	Actor     string    `bun:"actor"`
}

type quarantineRow struct {
	bun.BaseModel `bun:"table:identifier_quarantine"`

	KeyHash string    `bun:"key_hash,pk"`
	FreeAt  time.Time `bun:"free_at"`
}

type deletionTokenRow struct {
	bun.BaseModel `bun:"table:deletion_tokens"`

	TokenHash []byte    `bun:"token_hash,pk"`
	UserID    uuid.UUID `bun:"user_id"`
	ExpiresAt time.Time `bun:"expires_at"`
	CreatedAt time.Time `bun:"created_at"`
}

// AdmitSession implements auth.Tx: it holds the user's row with a shared
// lock (PostgreSQL; SQLite's write transaction already excludes) and
// reads the suspension with it.
func (t Tx) AdmitSession(ctx context.Context, userID uuid.UUID) (*auth.Suspension, error) {
	var row struct {
		ID        uuid.UUID  `bun:"id"`
		Reason    *string    `bun:"reason"`
		Actor     *string    `bun:"actor"`
		Until     *time.Time `bun:"until"`
		CreatedAt *time.Time `bun:"created_at"`
	}
	q := t.idb.NewSelect().TableExpr("users AS u").
		ColumnExpr("u.id, s.reason, s.actor, s.until, s.created_at").
		Join("LEFT JOIN user_suspensions AS s ON s.user_id = u.id").
		Where("u.id = ?", userID)
	if t.postgres() {
		q = q.For("SHARE OF u")
	}
	err := q.Scan(ctx, &row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, auth.ErrUserGone
	}
	if err != nil {
		return nil, mapError(err)
	}
	if row.Reason == nil {
		return nil, nil
	}
	r := suspensionRow{UserID: userID, Reason: *row.Reason, Actor: deref(row.Actor), Until: row.Until}
	if row.CreatedAt != nil {
		r.CreatedAt = *row.CreatedAt
	}
	return r.suspension(), nil
}

// CountAdmins implements lifecycle.Tx.
func (t Tx) CountAdmins(ctx context.Context, r string) (int, error) {
	q := t.idb.NewSelect().Model((*userRow)(nil)).Where("realm = ?", string(account.RealmAdmin))
	if r == "" {
		q = q.Where("role IS NULL")
	} else {
		q = q.Where("role = ?", r)
	}
	n, err := q.Count(ctx)
	return int(n), mapError(err)
}

// EraseUser implements lifecycle.Tx: the rules of UserReferences, then
// the audit entries, rate-limit keys and queued mail, then the user.
func (t Tx) EraseUser(ctx context.Context, e lifecycle.Erasure) error {
	id := e.User.ID
	for _, ref := range UserReferences {
		if ref.Rule == endedByAuth {
			continue
		}
		_, err := t.idb.NewDelete().TableExpr(ref.Table).Where("? = ?", bun.Ident(ref.Column), id).Exec(ctx)
		if err != nil {
			return mapError(err)
		}
	}
	if err := t.scrubAudit(ctx, id, e.Personal); err != nil {
		return err
	}
	if len(e.LimitKeys) > 0 {
		keys := make([]string, len(e.LimitKeys))
		for i, k := range e.LimitKeys {
			keys[i] = limitKey(k)
		}
		if _, err := t.idb.NewDelete().TableExpr("rate_limits").Where("key IN (?)", bun.List(keys)).Exec(ctx); err != nil {
			return mapError(err)
		}
	}
	email := account.NormalizeEmail(e.User.Email)
	if _, err := t.idb.NewDelete().TableExpr("mail_outbox").Where("lower(recipient) = ?", email).Exec(ctx); err != nil {
		return mapError(err)
	}
	_, err := t.idb.NewDelete().Model((*userRow)(nil)).Where("id = ?", id).Exec(ctx)
	return mapError(err)
}

// personalKeys are the audit detail keys whose values are personal data
// whatever they hold.
var personalKeys = map[string]bool{
	"email": true, "name": true, "nickname": true, "newEmail": true, "oldEmail": true,
	"ip": true, "ipAddress": true, "userAgent": true, "address": true,
}

// erased stands in for personal data removed from an audit entry.
const erased = "[erased]"

// scrubAudit keeps the audit entries by or about the user but takes the
// personal data out of them: an email as actor or target becomes the id,
// and personal values in the reason and details are replaced.
func (t Tx) scrubAudit(ctx context.Context, id uuid.UUID, personal []string) error {
	var needles []string
	for _, p := range personal {
		if len(strings.TrimSpace(p)) >= 3 {
			needles = append(needles, p)
		}
	}
	var rows []auditRow
	q := t.idb.NewSelect().Model(&rows).Where("target = ? OR actor = ?", id.String(), id.String())
	if len(needles) > 0 {
		q = q.WhereOr("target IN (?) OR actor IN (?)", bun.List(needles), bun.List(needles))
	}
	if err := q.Scan(ctx); err != nil {
		return mapError(err)
	}
	for i := range rows {
		r := &rows[i]
		if changed := scrubRow(r, id.String(), needles); !changed {
			continue
		}
		if _, err := t.idb.NewUpdate().Model(r).Column("actor", "target", "reason", "details").WherePK().Exec(ctx); err != nil {
			return mapError(err)
		}
	}
	return nil
}

// scrubRow takes the personal data out of one audit row and reports
// whether anything changed.
func scrubRow(r *auditRow, id string, needles []string) bool {
	before := *r
	for _, n := range needles {
		if strings.EqualFold(r.Actor, n) {
			r.Actor = id
		}
		if strings.EqualFold(r.Target, n) {
			r.Target = id
		}
		r.Reason = replaceFold(r.Reason, n)
	}
	var details map[string]string
	if err := json.Unmarshal([]byte(r.Details), &details); err == nil {
		for k, v := range details {
			if personalKeys[k] {
				details[k] = erased
				continue
			}
			for _, n := range needles {
				v = replaceFold(v, n)
			}
			details[k] = v
		}
		if b, err := json.Marshal(details); err == nil {
			r.Details = string(b)
		}
	}
	return *r != before
}

// replaceFold replaces every case-insensitive occurrence of n in s.
func replaceFold(s, n string) string {
	if n == "" {
		return s
	}
	lower, ln := strings.ToLower(s), strings.ToLower(n)
	if !strings.Contains(lower, ln) || len(lower) != len(s) {
		return strings.ReplaceAll(s, n, erased)
	}
	var b strings.Builder
	for {
		i := strings.Index(lower, ln)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		b.WriteString(erased)
		s, lower = s[i+len(n):], lower[i+len(n):]
	}
}

// InsertTombstone implements lifecycle.Tx.
func (t Tx) InsertTombstone(ctx context.Context, ts *lifecycle.Tombstone) error {
	row := &tombstoneRow{ID: ts.ID, Realm: string(ts.Realm), DeletedAt: ts.DeletedAt.UTC(), Reason: ts.Reason, Actor: ts.Actor}
	_, err := t.idb.NewInsert().Model(row).Exec(ctx)
	return mapError(err)
}

// Quarantine implements lifecycle.Tx; a hash already reserved (the same
// address deleted twice within the quarantine) is reserved anew until
// freeAt.
func (t Tx) Quarantine(ctx context.Context, keyHashes []string, freeAt time.Time) error {
	for _, h := range keyHashes {
		row := &quarantineRow{KeyHash: h, FreeAt: freeAt.UTC()}
		_, err := t.idb.NewInsert().Model(row).
			On("CONFLICT (key_hash) DO UPDATE").Set("free_at = EXCLUDED.free_at").Exec(ctx)
		if err != nil {
			return mapError(err)
		}
	}
	return nil
}

// InsertDeletionToken implements lifecycle.Tx.
func (t Tx) InsertDeletionToken(ctx context.Context, d *lifecycle.DeletionToken) error {
	row := &deletionTokenRow{TokenHash: d.TokenHash[:], UserID: d.UserID, ExpiresAt: d.ExpiresAt.UTC(), CreatedAt: d.CreatedAt.UTC()}
	_, err := t.idb.NewInsert().Model(row).Exec(ctx)
	return mapError(err)
}

// TakeDeletionToken implements lifecycle.Tx with one DELETE … RETURNING,
// so of concurrent callers at most one gets the row.
func (t Tx) TakeDeletionToken(ctx context.Context, h auth.TokenHash) (*lifecycle.DeletionToken, error) {
	var rows []deletionTokenRow
	_, err := t.idb.NewDelete().Model(&rows).Where("token_hash = ?", h[:]).Returning("*").Exec(ctx, &rows)
	if err != nil {
		return nil, mapError(err)
	}
	if len(rows) == 0 {
		return nil, lifecycle.ErrTokenNotFound
	}
	r := rows[0]
	return &lifecycle.DeletionToken{TokenHash: h, UserID: r.UserID, ExpiresAt: r.ExpiresAt.UTC(), CreatedAt: r.CreatedAt.UTC()}, nil
}

// SetSuspension implements lifecycle.Tx.
func (t Tx) SetSuspension(ctx context.Context, s *auth.Suspension) error {
	row := &suspensionRow{UserID: s.UserID, Reason: s.Reason, Actor: s.Actor, Until: s.Until, CreatedAt: s.CreatedAt.UTC()}
	_, err := t.idb.NewInsert().Model(row).On("CONFLICT (user_id) DO UPDATE").
		Set("reason = EXCLUDED.reason, actor = EXCLUDED.actor, until = EXCLUDED.until, created_at = EXCLUDED.created_at").Exec(ctx)
	return mapError(err)
}

// DeleteSuspension implements lifecycle.Tx.
func (t Tx) DeleteSuspension(ctx context.Context, userID uuid.UUID) (bool, error) {
	res, err := t.idb.NewDelete().Model((*suspensionRow)(nil)).Where("user_id = ?", userID).Exec(ctx)
	if err != nil {
		return false, mapError(err)
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// Tombstone implements lifecycle.Store.
func (s *LifecycleStore) Tombstone(ctx context.Context, id uuid.UUID) (*lifecycle.Tombstone, error) {
	var row tombstoneRow
	err := s.db.bun.NewSelect().Model(&row).Where("id = ?", id).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, account.ErrNotFound
	}
	if err != nil {
		return nil, mapError(err)
	}
	return &lifecycle.Tombstone{ID: row.ID, Realm: account.Realm(row.Realm), DeletedAt: row.DeletedAt.UTC(), Reason: row.Reason, Actor: row.Actor}, nil
}

// Quarantined implements lifecycle.Store.
func (s *LifecycleStore) Quarantined(ctx context.Context, keyHashes []string, now time.Time) (bool, error) {
	if len(keyHashes) == 0 {
		return false, nil
	}
	ok, err := s.db.bun.NewSelect().Model((*quarantineRow)(nil)).
		Where("key_hash IN (?)", bun.List(keyHashes)).Where("free_at > ?", now.UTC()).Exists(ctx)
	return ok, mapError(err)
}

// Suspension implements lifecycle.Store: the user's suspension, live or
// not, or nil.
func (s *LifecycleStore) Suspension(ctx context.Context, userID uuid.UUID) (*auth.Suspension, error) {
	var row suspensionRow
	err := s.db.bun.NewSelect().Model(&row).Where("user_id = ?", userID).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, mapError(err)
	}
	return row.suspension(), nil
}

// foreignKeyGone maps a foreign-key violation to NOT_FOUND: a row that
// refers to a user (or lobby) deleted a moment before, such as a friend
// request racing the target's deletion, is a request about something
// that no longer exists, not a fault.
func foreignKeyGone(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23503" || strings.Contains(err.Error(), "FOREIGN KEY constraint failed") {
		return (&platform.Error{Kind: platform.KindNotFound, Code: platform.CodeNotFound,
			Message: "What this refers to no longer exists"}).Wrap(err)
	}
	return nil
}

// FindUsers implements lifecycle.Store: accounts of realm whose email or
// nickname starts with prefix, at most limit, by email. Both are ranges
// on the unique (realm, email) and (realm, nickname_key) indexes.
func (s *LifecycleStore) FindUsers(ctx context.Context, realm account.Realm, prefix string, limit int) ([]*account.User, error) {
	email, nick := strings.ToLower(prefix), account.NicknameKey(prefix)
	var rows []userRow
	err := s.db.bun.NewSelect().Model(&rows).Where("realm = ?", string(realm)).
		WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
			q = q.Where("email >= ? AND email < ?", email, email+"\uffff")
			if nick != "" {
				q = q.WhereOr("nickname_key >= ? AND nickname_key < ?", nick, nick+"\uffff")
			}
			return q
		}).OrderExpr("email").Limit(int64(limit)).Scan(ctx)
	if err != nil {
		return nil, mapError(err)
	}
	out := make([]*account.User, len(rows))
	for i := range rows {
		out[i] = rows[i].user()
	}
	return out, nil
}

// Quarantined implements auth.Tx.
func (t Tx) Quarantined(ctx context.Context, key string, now time.Time) (bool, error) {
	ok, err := t.idb.NewSelect().Model((*quarantineRow)(nil)).
		Where("key_hash = ?", key).Where("free_at > ?", now.UTC()).Exists(ctx)
	return ok, mapError(err)
}
