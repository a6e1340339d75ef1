package app

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/events"
	"github.com/towerdefence/platformctl/internal/store"
)

// noticeLog is the store's session_notices table as the event transport
// reads and writes it (events.NoticeLog).
type noticeLog struct{ s *store.SessionNoticeStore }

func (l noticeLog) Append(ctx context.Context, process uuid.UUID, n events.Notice) error {
	return l.s.Append(ctx, store.SessionNotice{Process: process, UserID: n.Subject, Reason: n.Change, At: n.At})
}

func (l noticeLog) Last(ctx context.Context) (int64, error) { return l.s.Last(ctx) }

func (l noticeLog) After(ctx context.Context, id int64, limit int) ([]events.LoggedNotice, error) {
	list, err := l.s.After(ctx, id, limit)
	if err != nil {
		return nil, err
	}
	out := make([]events.LoggedNotice, len(list))
	for i, n := range list {
		out[i] = events.LoggedNotice{ID: n.ID, Process: n.Process,
			Notice: events.Notice{Kind: events.KindSession, Subject: n.UserID, Change: n.Reason, At: n.At}}
	}
	return out, nil
}

func (l noticeLog) Prune(ctx context.Context, before time.Time) error { return l.s.Prune(ctx, before) }
