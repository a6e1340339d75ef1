package events

import (
	"context"
	"sync/atomic"

	"github.com/google/uuid"
)

// Transport carries notices between the processes sharing a database.
type Transport interface {
	// Publish sends a notice to every process, this one included.
	Publish(ctx context.Context, n Notice) error
	// Run hands every notice to deliver until ctx is done. It calls
	// listening each time it starts to receive: once at first, and again
	// after every gap in which notices may have been lost (a dropped
	// connection), so that streams can be brought up to date.
	Run(ctx context.Context, deliver func(Notice), listening func()) error
}

// Local is the in-process transport of the embedded SQLite database, which
// only one serve process opens. The PostgreSQL transport, across processes,
// is internal/eventspg.
type Local struct {
	ch      chan Notice
	dropped atomic.Bool
}

// NewLocal returns an in-process transport.
func NewLocal() *Local { return &Local{ch: make(chan Notice, 4096)} }

// Publish implements Transport. It never blocks: when Run falls behind by
// the whole buffer the notice is dropped and Run resyncs instead. A notice
// with an origin is left out: its process, the only one, has it already.
func (l *Local) Publish(_ context.Context, n Notice) error {
	if n.Origin != uuid.Nil {
		return nil
	}
	select {
	case l.ch <- n:
	default:
		l.dropped.Store(true)
	}
	return nil
}

// Run implements Transport.
func (l *Local) Run(ctx context.Context, deliver func(Notice), listening func()) error {
	listening()
	for {
		select {
		case <-ctx.Done():
			return nil
		case n := <-l.ch:
			deliver(n)
		}
		if l.dropped.Swap(false) {
			listening()
		}
	}
}
