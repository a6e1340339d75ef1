package events

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// NoticeLog is a table of session notices in the embedded SQLite
// database, which every process opening the file reads: the way news of a
// revocation made by a command (`platformctl sessions revoke`) reaches a
// running serve, whose in-process transport would not hear it.
type NoticeLog interface {
	// Append records n, published by process.
	Append(ctx context.Context, process uuid.UUID, n Notice) error
	// Last returns the id of the newest notice, 0 when there is none.
	Last(ctx context.Context) (int64, error)
	// After returns at most limit notices with ids above id, oldest first.
	// A row that is not a notice comes with a zero Notice.
	After(ctx context.Context, id int64, limit int) ([]LoggedNotice, error)
	// Prune deletes the notices published before before.
	Prune(ctx context.Context, before time.Time) error
}

// LoggedNotice is a notice read back from a NoticeLog.
type LoggedNotice struct {
	ID      int64
	Process uuid.UUID
	Notice  Notice
}

// Shared polling of the log: how often, how many notices a poll takes,
// and how long notices are kept (a process that falls further behind
// than that has been failing to poll, and starts over from the newest).
const (
	DefaultPollInterval = 200 * time.Millisecond
	pollBatch           = 500
	noticeRetention     = 10 * time.Minute
	pruneEvery          = time.Minute
)

// Share has the transport also write session notices to log and read
// those of other processes from it every interval (DefaultPollInterval
// when zero).
func (l *Local) Share(log NoticeLog, interval time.Duration) {
	if interval <= 0 {
		interval = DefaultPollInterval
	}
	l.shared, l.interval, l.process = log, interval, uuid.New()
}

// append records a session notice for the other processes; other notices
// concern the streams of this process alone.
func (l *Local) append(ctx context.Context, n Notice) error {
	if l.shared == nil || n.Kind != KindSession {
		return nil
	}
	return l.shared.Append(ctx, l.process, n)
}

// poller reads the notices other processes appended to the shared log.
type poller struct {
	l         *Local
	last      int64
	failing   bool
	lastPrune time.Time
}

// start finds where the log ends: notices from before this process
// listened are history.
func (p *poller) start(ctx context.Context) error {
	last, err := p.l.shared.Last(ctx)
	p.last = last
	return err
}

// poll delivers the other processes' new notices. A failed read loses
// nothing (the next poll reads from the same place) but delays the news,
// so it counts as a gap: lost, then listening once a read succeeds again.
func (p *poller) poll(ctx context.Context, deliver func(Notice), listening, lost func()) {
	list, err := p.l.shared.After(ctx, p.last, pollBatch)
	if err != nil {
		if !p.failing && ctx.Err() == nil {
			p.failing = true
			lost()
		}
		return
	}
	if p.failing {
		p.failing = false
		listening()
	}
	for _, ln := range list {
		p.last = ln.ID
		if ln.Process != p.l.process && ln.Notice.Subject != uuid.Nil {
			deliver(ln.Notice)
		}
	}
	if now := time.Now(); now.Sub(p.lastPrune) >= pruneEvery {
		p.lastPrune = now
		p.l.shared.Prune(ctx, now.Add(-noticeRetention)) //nolint:errcheck // kept until the next prune
	}
}
