package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/uptrace/bun"

	"github.com/towerdefence/platformctl/internal/audit"
)

type auditRow struct {
	bun.BaseModel `bun:"table:audit_log"`

	ID      int64     `bun:"id,pk,autoincrement"`
	At      time.Time `bun:"at"`
	Actor   string    `bun:"actor"`
	Action  string    `bun:"action"`
	Target  string    `bun:"target"`
	Reason  string    `bun:"reason"`
	Details string    `bun:"details"`
}

// AuditStore implements audit.Store.
type AuditStore struct{ db *DB }

// Audit returns the audit store.
func (db *DB) Audit() *AuditStore { return &AuditStore{db: db} }

// InsertAudit implements audit.Store.
func (s *AuditStore) InsertAudit(ctx context.Context, e *audit.Entry) error {
	return insertAudit(ctx, s.db.bun, e)
}

// InsertAudit implements the record-audit-entry step of every service's
// Tx, so that an audited change and its entry commit together.
func (t Tx) InsertAudit(ctx context.Context, e *audit.Entry) error {
	return insertAudit(ctx, t.idb, e)
}

func insertAudit(ctx context.Context, db bun.IDB, e *audit.Entry) error {
	details, err := json.Marshal(e.Details)
	if err != nil {
		return err
	}
	row := &auditRow{At: e.At, Actor: e.Actor, Action: e.Action, Target: e.Target, Reason: e.Reason, Details: string(details)}
	if _, err := db.NewInsert().Model(row).Returning("id").Exec(ctx); err != nil {
		return mapError(err)
	}
	e.ID = row.ID
	return nil
}

// ListAudit implements audit.Store.
func (s *AuditStore) ListAudit(ctx context.Context, f audit.Filter) ([]audit.Entry, error) {
	var rows []auditRow
	q := s.db.bun.NewSelect().Model(&rows).OrderExpr("at DESC, id DESC").Limit(int64(f.Limit))
	if f.Actor != "" {
		q = q.Where("actor = ?", f.Actor)
	}
	if f.Target != "" {
		q = q.Where("target = ?", f.Target)
	}
	if f.Action != "" {
		q = q.Where("action = ?", f.Action)
	}
	if !f.Since.IsZero() {
		q = q.Where("at >= ?", f.Since.UTC())
	}
	if b := f.Before; b != nil {
		q = q.Where("(at < ? OR (at = ? AND id < ?))", b.At.UTC(), b.At.UTC(), b.ID)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, mapError(err)
	}
	out := make([]audit.Entry, len(rows))
	for i, r := range rows {
		out[i] = audit.Entry{ID: r.ID, At: r.At.UTC(), Actor: r.Actor, Action: r.Action, Target: r.Target, Reason: r.Reason}
		if err := json.Unmarshal([]byte(r.Details), &out[i].Details); err != nil || out[i].Details == nil {
			out[i].Details = map[string]string{}
		}
	}
	return out, nil
}
