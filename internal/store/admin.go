package store

import (
	"context"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/towerdefence/platformctl/internal/admin"
	"github.com/towerdefence/platformctl/internal/role"
)

// AdminStore implements admin.Store.
type AdminStore struct{ db *DB }

// Admin returns the administrator plane's store.
func (db *DB) Admin() *AdminStore { return &AdminStore{db: db} }

var (
	_ admin.Store = (*AdminStore)(nil)
	_ role.Store  = (*AdminStore)(nil)
)

// InTx implements role.Store.
func (s *AdminStore) InTx(ctx context.Context, fn func(ctx context.Context, tx role.Tx) error) error {
	return s.db.InTx(ctx, func(ctx context.Context, tx Tx) error { return fn(ctx, tx) })
}

// prefixEnd is appended to a prefix to make the exclusive end of the
// range of keys that start with it: no valid UTF-8 text sorts byte-wise
// after the prefix and this code point while still starting with the
// prefix.
const prefixEnd = "\U0010FFFF"

// SearchUsers implements admin.Store: one range of the unique index on
// (realm, email) or (realm, nickname_key), both compared byte-wise (see
// migration 20261127002400_user_search), read in index order.
func (s *AdminStore) SearchUsers(ctx context.Context, q admin.Search) ([]admin.UserSummary, error) {
	column := "email"
	if q.Field == admin.FieldNickname {
		column = "nickname_key"
	}
	from := q.Prefix
	if q.After > from {
		from = q.After
	}
	var rows []userRow
	sel := s.db.bun.NewSelect().Model(&rows).
		Column("id", "email", "name", "nickname", "email_verified", "created_at").
		Where("realm = 'player'").
		Where("? < ?", bun.Ident(column), q.Prefix+prefixEnd).
		OrderExpr("? ASC", bun.Ident(column)).
		Limit(int64(q.Limit))
	if q.After != "" {
		sel = sel.Where("? > ?", bun.Ident(column), from)
	} else {
		sel = sel.Where("? >= ?", bun.Ident(column), from)
	}
	if err := sel.Scan(ctx); err != nil {
		return nil, mapError(err)
	}
	out := make([]admin.UserSummary, len(rows))
	for i, r := range rows {
		out[i] = admin.UserSummary{ID: r.ID, Email: r.Email, Name: r.Name, Nickname: deref(r.Nickname),
			EmailVerified: r.EmailVerified, CreatedAt: r.CreatedAt.UTC()}
	}
	return out, nil
}

// UserCounts implements admin.Store: counts over the player's own rows,
// each read from an index on user_id.
func (s *AdminStore) UserCounts(ctx context.Context, userID uuid.UUID) (admin.Counts, error) {
	var c admin.Counts
	decks, err := s.db.bun.NewSelect().Table("player_decks").Where("user_id = ?", userID).Count(ctx)
	if err != nil {
		return c, mapError(err)
	}
	c.Decks = int64(decks)
	var edges []struct {
		State string `bun:"state"`
		N     int64  `bun:"n"`
	}
	err = s.db.bun.NewSelect().Table("social_edges").ColumnExpr("state, COUNT(*) AS n").
		Where("user_id = ?", userID).Group("state").Scan(ctx, &edges)
	if err != nil {
		return c, mapError(err)
	}
	for _, e := range edges {
		switch e.State {
		case "friend":
			c.Friends = e.N
		case "incoming":
			c.IncomingRequests = e.N
		case "outgoing":
			c.OutgoingRequests = e.N
		case "blocked":
			c.Blocked = e.N
		}
	}
	return c, nil
}

// ListAdmins implements admin.Store.
func (s *AdminStore) ListAdmins(ctx context.Context, limit int) ([]role.AdminAccount, error) {
	var rows []adminRow
	err := s.db.bun.NewSelect().Table("users").Column("id", "email", "name", "role").
		Where("realm = 'admin'").OrderExpr("email").Limit(int64(limit)).Scan(ctx, &rows)
	if err != nil {
		return nil, mapError(err)
	}
	return adminAccounts(rows), nil
}

func adminAccounts(rows []adminRow) []role.AdminAccount {
	out := make([]role.AdminAccount, len(rows))
	for i, a := range rows {
		out[i] = role.AdminAccount{ID: a.ID, Email: a.Email, Name: a.Name, Role: role.Role(a.Role.String)}
	}
	return out
}
