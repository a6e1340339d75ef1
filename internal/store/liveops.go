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

	"github.com/towerdefence/platformctl/internal/audit"
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

// PublishLiveOps implements liveops.Store. Publishers hold the advisory
// lock fixture seeding holds (seedLockKey) on PostgreSQL, and the write
// lock SQLite's IMMEDIATE transactions take up front, so operators and
// the seeder take turns and the newest version cannot move between
// reading it and inserting the next one.
func (s *LiveOpsStore) PublishLiveOps(ctx context.Context, next func(head *liveops.Head, cfg *liveops.Config) (*liveops.Publication, *audit.Entry, error)) (*liveops.Head, error) {
	var out *liveops.Head
	err := s.db.InTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if s.db.dialect == Postgres {
			if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(?)", seedLockKey); err != nil {
				return err
			}
		}
		var head *liveops.Head
		var cfg *liveops.Config
		var row liveOpsRow
		err := tx.NewSelect().Model(&row).OrderExpr("version DESC").Limit(1).Scan(ctx)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return err
		default:
			h := row.head()
			head, cfg = &h, &liveops.Config{}
			if err := json.Unmarshal([]byte(row.Body), cfg); err != nil {
				return fmt.Errorf("decode live-ops version %d: %w", row.Version, err)
			}
		}
		p, e, err := next(head, cfg)
		if err != nil || p == nil {
			return err
		}
		body, err := json.Marshal(p.Config)
		if err != nil {
			return err
		}
		h := p.Head
		ins := &liveOpsRow{Version: h.Version, ETag: h.ETag, ContentHash: h.Hash, Body: string(body), Source: h.Source,
			PublishedAt: h.PublishedAt.UTC(), PublishedBy: h.PublishedBy, Description: h.Description}
		if _, err := tx.NewInsert().Model(ins).Exec(ctx); err != nil {
			return err
		}
		if err := insertAudit(ctx, tx, e); err != nil {
			return err
		}
		out = &h
		return nil
	})
	if err != nil {
		return nil, mapError(err)
	}
	return out, nil
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

// CountOutbox implements liveops.OutboxCounter: every status of the
// outbox with its count (0 included), and the age of the oldest message
// still pending.
func (s *LiveOpsStore) CountOutbox(ctx context.Context, now time.Time) (liveops.OutboxCounts, error) {
	out := liveops.OutboxCounts{ByStatus: make(map[string]int64, len(mail.Statuses))}
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

// CountPendingChanges implements liveops.PendingChangeCounter: profile
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

// CountOpenLobbies implements liveops.LobbyCounter.
func (s *LiveOpsStore) CountOpenLobbies(ctx context.Context, _ time.Time) (int64, error) {
	n, err := s.db.bun.NewSelect().Table("lobbies").Where("status = 'open'").Count(ctx)
	return int64(n), mapError(err)
}

// CountAccounts implements liveops.ConsoleStore.
func (s *LiveOpsStore) CountAccounts(ctx context.Context, now time.Time) (liveops.AccountCounts, error) {
	var out liveops.AccountCounts
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

// SetAdminRole implements liveops.RoleStore. It reads every administrator
// in id order under FOR UPDATE on PostgreSQL (SQLite serialises write
// transactions), so two concurrent demotions cannot both see a second
// admin, and the locks are always taken in the same order.
func (s *LiveOpsStore) SetAdminRole(ctx context.Context, ref liveops.AdminRef, to role.Role, guard liveops.RoleGuard, e *audit.Entry) (*liveops.AdminAccount, error) {
	var prev *liveops.AdminAccount
	err := s.db.InTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var admins []adminRow
		q := tx.NewSelect().Table("users").Column("id", "email", "name", "role").
			Where("realm = 'admin'").OrderExpr("id")
		if s.db.dialect == Postgres {
			q = q.For("UPDATE")
		}
		if err := q.Scan(ctx, &admins); err != nil {
			return err
		}
		holders := 0
		for _, a := range admins {
			if a.Role.String == string(role.Admin) {
				holders++
			}
			if (ref.ID != uuid.Nil && a.ID == ref.ID) || (ref.ID == uuid.Nil && a.Email == ref.Email) {
				prev = &liveops.AdminAccount{ID: a.ID, Email: a.Email, Name: a.Name, Role: role.Role(a.Role.String)}
			}
		}
		if prev == nil {
			return liveops.ErrAdminNotFound
		}
		if err := guard(*prev, to, holders); err != nil {
			return err
		}
		if prev.Role == to {
			return nil
		}
		if _, err := tx.NewUpdate().Table("users").Set("role = ?", string(to)).Set("updated_at = ?", e.At.UTC()).
			Where("id = ?", prev.ID).Exec(ctx); err != nil {
			return err
		}
		e.Target = "admin:" + prev.ID.String()
		e.Details = map[string]string{"email": prev.Email, "from": string(prev.Role), "to": string(to)}
		return insertAudit(ctx, tx, e)
	})
	if err != nil {
		return nil, mapError(err)
	}
	return prev, nil
}
