package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

type sessionNoticeRow struct {
	bun.BaseModel `bun:"table:session_notices"`

	ID      int64  `bun:"id,pk,autoincrement"`
	Process string `bun:"process"`
	UserID  string `bun:"user_id"`
	Reason  string `bun:"reason"`
	At      int64  `bun:"at"`
}

// SessionNotice is news that sessions of a user ended or changed, as the
// processes on one SQLite database file tell each other.
type SessionNotice struct {
	ID int64
	// Process published it; UserID's sessions changed (uuid.Nil for a row
	// that is not a notice, which readers pass over).
	Process, UserID uuid.UUID
	Reason          string
	// At is when it was published, in Unix microseconds.
	At int64
}

// SessionNoticeStore is the session_notices table (see events.NoticeLog).
type SessionNoticeStore struct{ db *DB }

// SessionNotices returns the log of session notices shared by the
// processes on one SQLite database.
func (db *DB) SessionNotices() *SessionNoticeStore { return &SessionNoticeStore{db: db} }

// Append records n; its ID is assigned.
func (s *SessionNoticeStore) Append(ctx context.Context, n SessionNotice) error {
	row := &sessionNoticeRow{Process: n.Process.String(), UserID: n.UserID.String(), Reason: n.Reason, At: n.At}
	_, err := s.db.bun.NewInsert().Model(row).Exec(ctx)
	return mapError(err)
}

// Last returns the id of the newest notice, 0 when there is none.
func (s *SessionNoticeStore) Last(ctx context.Context) (int64, error) {
	var last int64
	err := s.db.bun.NewSelect().Model((*sessionNoticeRow)(nil)).ColumnExpr("COALESCE(MAX(id), 0)").Scan(ctx, &last)
	return last, mapError(err)
}

// After returns at most limit notices with ids above id, oldest first.
func (s *SessionNoticeStore) After(ctx context.Context, id int64, limit int) ([]SessionNotice, error) {
	var rows []sessionNoticeRow
	err := s.db.bun.NewSelect().Model(&rows).Where("id > ?", id).Order("id").Limit(int64(limit)).Scan(ctx)
	if err != nil {
		return nil, mapError(err)
	}
	out := make([]SessionNotice, len(rows))
	for i, r := range rows {
		out[i] = SessionNotice{ID: r.ID, Reason: r.Reason, At: r.At}
		process, perr := uuid.Parse(r.Process)
		user, uerr := uuid.Parse(r.UserID)
		if perr == nil && uerr == nil {
			out[i].Process, out[i].UserID = process, user
		}
	}
	return out, nil
}

// Prune deletes the notices published before before.
func (s *SessionNoticeStore) Prune(ctx context.Context, before time.Time) error {
	_, err := s.db.bun.NewDelete().Model((*sessionNoticeRow)(nil)).Where("at < ?", before.UnixMicro()).Exec(ctx)
	return mapError(err)
}
