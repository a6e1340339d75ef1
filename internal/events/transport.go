package events

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
)

// Transport carries notices between the processes sharing a database.
type Transport interface {
	// Publish sends a notice to every process, this one included.
	Publish(ctx context.Context, n Notice) error
	// Run hands every notice to deliver until ctx is done. It calls
	// listening each time it starts to receive: once at first, and again
	// after every gap in which notices may have been lost (a dropped
	// connection), so that streams can be brought up to date; and lost as
	// soon as such a gap begins, so that nothing is served on the belief
	// that no notice came.
	Run(ctx context.Context, deliver func(Notice), listening, lost func()) error
}

// Local is the in-process transport of the embedded SQLite database, which
// only one serve process opens. The PostgreSQL transport, across processes,
// is internal/eventspg.
type Local struct {
	ch      chan Notice
	dropped atomic.Bool
	// shared, when set (Share), carries session notices between the
	// processes opening the database file; process marks this one's.
	shared   NoticeLog
	interval time.Duration
	process  uuid.UUID
}

// NewLocal returns an in-process transport.
func NewLocal() *Local { return &Local{ch: make(chan Notice, 4096)} }

// Publish implements Transport. It never blocks: when Run falls behind by
// the whole buffer the notice is dropped and Run resyncs instead. A notice
// with an origin is left out: its process, the only serve, has it
// already. A session notice is also appended to the shared log, if any.
func (l *Local) Publish(ctx context.Context, n Notice) error {
	if n.Origin != uuid.Nil {
		return nil
	}
	select {
	case l.ch <- n:
	default:
		l.dropped.Store(true)
	}
	return l.append(ctx, n)
}

// Run implements Transport. With a shared log, it starts listening once
// it knows where the log ends, and polls it between local notices.
func (l *Local) Run(ctx context.Context, deliver func(Notice), listening, lost func()) error {
	var p *poller
	var tick <-chan time.Time
	if l.shared != nil {
		p = &poller{l: l}
		if err := l.waitForLog(ctx, p); err != nil {
			return nil // ctx is done
		}
		t := time.NewTicker(l.interval)
		defer t.Stop()
		tick = t.C
	}
	listening()
	for {
		select {
		case <-ctx.Done():
			return nil
		case n := <-l.ch:
			deliver(n)
		case <-tick:
			p.poll(ctx, deliver, listening, lost)
		}
		if l.dropped.Swap(false) {
			lost()
			listening()
		}
	}
}

// waitForLog retries finding where the shared log ends until it can, or
// ctx is done.
func (l *Local) waitForLog(ctx context.Context, p *poller) error {
	for {
		if err := p.start(ctx); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(l.interval):
		}
	}
}
