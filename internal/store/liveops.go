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

	"github.com/towerdefence/platformctl/internal/admin"
	"github.com/towerdefence/platformctl/internal/liveops"
	"github.com/towerdefence/platformctl/internal/mail"
	"github.com/towerdefence/platformctl/internal/role"
)

// liveOpsRow is one published version in liveops_configs.
type liveOpsRow struct {
	bun.BaseModel `bun:"table:liveops_configs"`

	Version     int       `bun:"version,pk"`
	ETag        string    `bun:"etag"`
	ContentHash string    `bun:"content_hash"`
	Body        string    `bun:"body"`
	Source      string    `bun:"source"`
	PublishedAt time.Time `bun:"published_at"`
	PublishedBy string    `bun:"published_by"`
	Description string    `bun:"description"`
}

func (r *liveOpsRow) head() liveops.Head {
	return liveops.Head{Version: r.Version, ETag: r.ETag, Hash: r.ContentHash, Source: r.Source,
		PublishedAt: r.PublishedAt.UTC(), PublishedBy: r.PublishedBy, Description: r.Description}
}

// LiveOpsHistory implements liveops.Store.
func (s *LiveOpsStore) LiveOpsHistory(ctx context.Context, limit int) ([]liveops.Head, error) {
	var rows []liveOpsRow
	if err := s.db.bun.NewSelect().Model(&rows).ExcludeColumn("body").OrderExpr("version DESC").Limit(int64(limit)).
		Scan(ctx); err != nil {
		return nil, mapError(err)
	}
	out := make([]liveops.Head, 0, len(rows))
	for i := range rows {
		out = append(out, rows[i].head())
	}
	return out, nil
}

// InTx implements liveops.Store with DB.InTx, so fn may run more than once.
func (s *LiveOpsStore) InTx(ctx context.Context, fn func(ctx context.Context, tx liveops.Tx) error) error {
	return s.db.InTx(ctx, func(ctx context.Context, tx Tx) error { return fn(ctx, tx) })
}

// LockPublications implements liveops.Tx and seed.Tx. Live-ops
// publishers and the fixture seeder hold the advisory lock seedLockKey on
// PostgreSQL, and the write lock SQLite's IMMEDIATE transactions take up
// front, so they take turns and the newest version cannot move between
// reading it and inserting the next one.
func (t Tx) LockPublications(ctx context.Context) error {
	return t.advisoryLock(ctx, seedLockKey)
}

// LatestLiveOps implements liveops.Tx.
func (t Tx) LatestLiveOps(ctx context.Context) (*liveops.Head, *liveops.Config, error) {
	var row liveOpsRow
	err := t.idb.NewSelect().Model(&row).OrderExpr("version DESC").Limit(1).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, mapError(err)
	}
	h, cfg := row.head(), &liveops.Config{}
	if err := json.Unmarshal([]byte(row.Body), cfg); err != nil {
		return nil, nil, fmt.Errorf("decode live-ops version %d: %w", row.Version, err)
	}
	return &h, cfg, nil
}

// InsertLiveOps implements liveops.Tx.
func (t Tx) InsertLiveOps(ctx context.Context, p *liveops.Publication) error {
	body, err := json.Marshal(p.Config)
	if err != nil {
		return err
	}
	h := p.Head
	row := &liveOpsRow{Version: h.Version, ETag: h.ETag, ContentHash: h.Hash, Body: string(body), Source: h.Source,
		PublishedAt: h.PublishedAt.UTC(), PublishedBy: h.PublishedBy, Description: h.Description}
	_, err = t.idb.NewInsert().Model(row).Exec(ctx)
	return mapError(err)
}

// CatalogVersion implements liveops.CatalogVersioner with the player
// store's catalog head: 0 before a catalog is published.
func (s *LiveOpsStore) CatalogVersion(ctx context.Context) (int, error) {
	h, err := s.db.Player().CatalogHead(ctx)
	if err != nil || h == nil {
		return 0, err
	}
	return h.Version, nil
}

// CountOutbox implements admin.OutboxCounter: every status of the
// outbox with its count (0 included), and the age of the oldest message
// still pending.
func (s *LiveOpsStore) CountOutbox(ctx context.Context, now time.Time) (admin.OutboxCounts, error) {
	out := admin.OutboxCounts{ByStatus: make(map[string]int64, len(mail.Statuses))}
	for _, st := range mail.Statuses {
		out.ByStatus[string(st)] = 0
	}
	var rows []struct {
		Status string `bun:"status"`
		N      int64  `bun:"n"`
	}
	if err := s.db.bun.NewSelect().Table("mail_outbox").ColumnExpr("status, COUNT(*) AS n").GroupExpr("status").
		Scan(ctx, &rows); err != nil {
		return out, mapError(err)
	}
	for _, r := range rows {
		out.ByStatus[r.Status] = r.N
	}
	var oldest time.Time
	err := s.db.bun.NewSelect().Table("mail_outbox").Column("created_at").Where("status = ?", string(mail.StatusPending)).
		OrderExpr("created_at").Limit(1).Scan(ctx, &oldest)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return out, mapError(err)
	default:
		out.OldestPendingAgeSeconds = max(0, int64(now.Sub(oldest).Seconds()))
	}
	return out, nil
}

// CountPendingChanges implements admin.PendingChangeCounter: profile
// changes still waiting for a confirmation that can arrive, that is with
// a token that is neither used, superseded nor expired at now. A change
// whose last token expired stays 'pending' in its table but waits for
// nothing, so it is not counted.
func (s *LiveOpsStore) CountPendingChanges(ctx context.Context, now time.Time) (int64, error) {
	n, err := s.db.bun.NewSelect().TableExpr("profile_changes AS c").
		Where("c.status = 'pending'").
		Where("EXISTS (SELECT 1 FROM profile_tokens t WHERE t.change_id = c.id AND t.consumed_at IS NULL AND t.superseded_at IS NULL AND t.expires_at > ?)", now.UTC()).
		Count(ctx)
	return int64(n), mapError(err)
}

// CountOpenLobbies implements admin.LobbyCounter.
func (s *LiveOpsStore) CountOpenLobbies(ctx context.Context, _ time.Time) (int64, error) {
	n, err := s.db.bun.NewSelect().Table("lobbies").Where("status = 'open'").Count(ctx)
	return int64(n), mapError(err)
}

// CountAccounts implements admin.ConsoleStore.
func (s *LiveOpsStore) CountAccounts(ctx context.Context, now time.Time) (admin.AccountCounts, error) {
	var out admin.AccountCounts
	type realmCount struct {
		Realm string `bun:"realm"`
		N     int64  `bun:"n"`
	}
	var users, sessions []realmCount
	if err := s.db.bun.NewSelect().Table("users").ColumnExpr("realm, COUNT(*) AS n").GroupExpr("realm").
		Scan(ctx, &users); err != nil {
		return out, mapError(err)
	}
	if err := s.db.bun.NewSelect().Table("sessions").ColumnExpr("realm, COUNT(*) AS n").
		Where("expires_at > ?", now.UTC()).GroupExpr("realm").Scan(ctx, &sessions); err != nil {
		return out, mapError(err)
	}
	for _, c := range users {
		switch c.Realm {
		case "player":
			out.Players = c.N
		case "admin":
			out.Administrators = c.N
		}
	}
	for _, c := range sessions {
		switch c.Realm {
		case "player":
			out.PlayerSessions = c.N
		case "admin":
			out.AdminSessions = c.N
		}
	}
	return out, nil
}

type adminRow struct {
	ID    uuid.UUID      `bun:"id"`
	Email string         `bun:"email"`
	Name  string         `bun:"name"`
	Role  sql.NullString `bun:"role"`
}

// LockAdmins implements role.Tx: every administrator in id order, under
// FOR UPDATE on PostgreSQL (SQLite serialises write transactions), so the
// locks are always taken in the same order.
func (t Tx) LockAdmins(ctx context.Context) ([]role.AdminAccount, error) {
	var rows []adminRow
	q := t.idb.NewSelect().Table("users").Column("id", "email", "name", "role").Where("realm = 'admin'").OrderExpr("id")
	if err := t.forUpdate(q).Scan(ctx, &rows); err != nil {
		return nil, mapError(err)
	}
	return adminAccounts(rows), nil
}

// SetAdminRole implements role.Tx.
func (t Tx) SetAdminRole(ctx context.Context, id uuid.UUID, to role.Role, at time.Time) error {
	_, err := t.idb.NewUpdate().Table("users").Set("role = ?", string(to)).Set("updated_at = ?", at.UTC()).
		Where("id = ?", id).Exec(ctx)
	return mapError(err)
}
