package store

import (
	"context"
	"encoding/json"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/lifecycle"
)

// exportAuditLimit bounds the audit entries an export carries, newest
// first.
const exportAuditLimit = 1000

// Export implements lifecycle.Store: each section in one query, each
// bounded by what one player can hold (the friend, deck and session
// limits; the audit section by exportAuditLimit).
func (s *LifecycleStore) Export(ctx context.Context, u *account.User) (*lifecycle.Export, error) {
	e := &lifecycle.Export{
		Sessions: []lifecycle.ExportSession{}, Decks: []lifecycle.ExportDeck{}, Social: []lifecycle.ExportEdge{},
		Lobbies: []lifecycle.ExportLobby{}, Pending: []lifecycle.ExportChange{}, Audit: []lifecycle.ExportAudit{},
		LinkedAccounts: []lifecycle.ExportLinked{}, SecondFactors: []lifecycle.ExportFactor{},
	}
	db := s.db.bun
	steps := []func() error{
		func() error {
			return db.NewSelect().TableExpr("sessions").
				ColumnExpr("id, created_at, updated_at, expires_at, ip_address, user_agent").
				Where("user_id = ?", u.ID).OrderExpr("created_at DESC, id").Scan(ctx, &e.Sessions)
		},
		func() error {
			return db.NewSelect().TableExpr("player_decks AS d").
				ColumnExpr("d.id, d.name, d.code, d.source, d.created_at, d.updated_at").
				ColumnExpr("(p.default_deck_id IS NOT NULL AND p.default_deck_id = d.id) AS \"default\"").
				Join("LEFT JOIN player_profiles AS p ON p.user_id = d.user_id").
				Where("d.user_id = ?", u.ID).OrderExpr("d.created_at, d.id").Scan(ctx, &e.Decks)
		},
		func() error {
			return db.NewSelect().TableExpr("social_edges").ColumnExpr("other_id, state, since").
				Where("user_id = ?", u.ID).OrderExpr("since, other_id").Scan(ctx, &e.Social)
		},
		func() error { return s.exportLobbies(ctx, u, e) },
		func() error {
			return db.NewSelect().TableExpr("profile_changes").
				ColumnExpr("id, type, status, new_name, new_nickname, new_email, created_at, updated_at").
				Where("user_id = ?", u.ID).OrderExpr("created_at, id").Scan(ctx, &e.Pending)
		},
		func() error { return s.exportAudit(ctx, u, e) },
		func() error {
			return db.NewSelect().TableExpr("user_identities").ColumnExpr("provider AS provider_id, created_at").
				Where("user_id = ?", u.ID).OrderExpr("created_at, id").Scan(ctx, &e.LinkedAccounts)
		},
		func() error { return s.exportFactors(ctx, u, e) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, mapError(err)
		}
	}
	susp, err := s.Suspension(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	e.Suspension = susp
	for i := range e.Sessions {
		x := &e.Sessions[i]
		x.CreatedAt, x.UpdatedAt, x.ExpiresAt = x.CreatedAt.UTC(), x.UpdatedAt.UTC(), x.ExpiresAt.UTC()
	}
	return e, nil
}

// exportLobbies lists the lobbies the user hosts or hosted and the one
// they are in.
func (s *LifecycleStore) exportLobbies(ctx context.Context, u *account.User, e *lifecycle.Export) error {
	return s.db.bun.NewSelect().TableExpr("lobbies AS l").
		ColumnExpr("l.id, l.queue_id, l.status, l.created_at, l.closed_at").
		ColumnExpr("l.host_id = ? AS host", u.ID).
		ColumnExpr("EXISTS (SELECT 1 FROM lobby_members m WHERE m.lobby_id = l.id AND m.user_id = ?) AS member", u.ID).
		Where("l.host_id = ? OR l.id IN (SELECT lobby_id FROM lobby_members WHERE user_id = ?)", u.ID, u.ID).
		OrderExpr("l.created_at DESC, l.id").Limit(exportAuditLimit).Scan(ctx, &e.Lobbies)
}

// exportAudit lists the audit entries by or about the user.
func (s *LifecycleStore) exportAudit(ctx context.Context, u *account.User, e *lifecycle.Export) error {
	var rows []auditRow
	err := s.db.bun.NewSelect().Model(&rows).
		Where("target = ? OR actor = ? OR target = ?", u.ID.String(), u.ID.String(), u.Email).
		OrderExpr("at DESC, id DESC").Limit(exportAuditLimit).Scan(ctx)
	if err != nil {
		return err
	}
	for _, r := range rows {
		a := lifecycle.ExportAudit{At: r.At.UTC(), Actor: r.Actor, Action: r.Action, Reason: r.Reason}
		if err := json.Unmarshal([]byte(r.Details), &a.Details); err != nil || a.Details == nil {
			a.Details = map[string]string{}
		}
		e.Audit = append(e.Audit, a)
	}
	return nil
}

// exportFactors lists the confirmed authenticator app and the passkeys by
// kind, name and date; never a secret, a code or a credential.
func (s *LifecycleStore) exportFactors(ctx context.Context, u *account.User, e *lifecycle.Export) error {
	db := s.db.bun
	var totp []lifecycle.ExportFactor
	err := db.NewSelect().TableExpr("two_factors").
		ColumnExpr("'totp' AS kind, 'authenticator app' AS name, created_at").
		Where("user_id = ? AND verified", u.ID).Scan(ctx, &totp)
	if err != nil {
		return err
	}
	var passkeys []lifecycle.ExportFactor
	err = db.NewSelect().TableExpr("passkeys").ColumnExpr("'passkey' AS kind, name, created_at").
		Where("user_id = ?", u.ID).OrderExpr("created_at, id").Scan(ctx, &passkeys)
	if err != nil {
		return err
	}
	e.SecondFactors = append(append(e.SecondFactors, totp...), passkeys...)
	return nil
}
