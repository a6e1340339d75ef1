package events

import (
	"context"
	"database/sql"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
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
// only one serve process opens.
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

// Channel is the PostgreSQL notification channel of the events.
const Channel = "platform_events"

// Postgres is the transport across serve processes on one PostgreSQL
// database: Publish is a pg_notify on the shared pool after the change has
// committed, and Run holds one dedicated connection per process that
// LISTENs, however many streams the process serves.
type Postgres struct {
	db  *sql.DB
	url string
	log *slog.Logger
	// Backoff is the first wait before reconnecting the listener; it
	// doubles up to MaxBackoff.
	Backoff, MaxBackoff time.Duration
	// Probe is how long the listener waits quietly before it makes sure
	// its connection still answers, and how long it gives that answer: a
	// connection lost without a word (a network partition) counts as a
	// gap after at most twice this, not after TCP gives up on it.
	Probe time.Duration
}

// NewPostgres returns the PostgreSQL transport: db publishes, url opens the
// listening connection.
func NewPostgres(db *sql.DB, url string, log *slog.Logger) *Postgres {
	return &Postgres{db: db, url: url, log: log, Backoff: 100 * time.Millisecond, MaxBackoff: 5 * time.Second,
		Probe: time.Second}
}

// Publish implements Transport.
func (p *Postgres) Publish(ctx context.Context, n Notice) error {
	b, err := n.encode()
	if err != nil {
		return err
	}
	_, err = p.db.ExecContext(ctx, "SELECT pg_notify($1, $2)", Channel, string(b))
	return err
}

// Run implements Transport: it listens, and after a lost connection
// reconnects with backoff, until ctx is done.
func (p *Postgres) Run(ctx context.Context, deliver func(Notice), listening, lost func()) error {
	wait := p.Backoff
	for {
		conn, err := p.listen(ctx)
		if err == nil {
			wait = p.Backoff
			listening()
			err = p.receive(ctx, conn, deliver)
			lost()
			conn.Close(context.WithoutCancel(ctx)) //nolint:errcheck // the connection is being dropped
		}
		if ctx.Err() != nil {
			return nil
		}
		p.log.Warn("event listener lost its connection; reconnecting", "error", err, "wait", wait)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		wait = min(2*wait, p.MaxBackoff)
	}
}

func (p *Postgres) listen(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.Connect(ctx, p.url)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+Channel); err != nil {
		conn.Close(context.WithoutCancel(ctx)) //nolint:errcheck // failing anyway
		return nil, err
	}
	return conn, nil
}

func (p *Postgres) receive(ctx context.Context, conn *pgx.Conn, deliver func(Notice)) error {
	for {
		wait, cancel := context.WithTimeout(ctx, p.Probe)
		msg, err := conn.WaitForNotification(wait)
		cancel()
		if err != nil && pgconn.Timeout(err) && ctx.Err() == nil {
			if err := p.probe(ctx, conn); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		n, err := decodeNotice([]byte(msg.Payload))
		if err != nil {
			p.log.Warn("ignoring a malformed event notice", "error", err)
			continue
		}
		deliver(n)
	}
}

// probe makes sure a quiet listening connection still answers. A wait
// that timed out leaves the connection usable (pgx only closes it on
// other errors).
func (p *Postgres) probe(ctx context.Context, conn *pgx.Conn) error {
	ctx, cancel := context.WithTimeout(ctx, p.Probe)
	defer cancel()
	_, err := conn.Exec(ctx, "SELECT 1")
	return err
}
