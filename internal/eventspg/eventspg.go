// Package eventspg is the PostgreSQL adapter of the players' event
// streams: it carries change notices between the serve processes sharing
// one database with LISTEN/NOTIFY. It is the one package besides the store
// that talks to PostgreSQL, because LISTEN needs a connection of its own
// outside the store's pool.
package eventspg

import (
	"context"
	"database/sql"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/towerdefence/platformctl/internal/events"
)

// Channel is the PostgreSQL notification channel of the events.
const Channel = "platform_events"

// ApplicationName names the listening connection in pg_stat_activity, so
// that an operator (or a test) finds it: its query column shows LISTEN
// only until the first probe, which runs SELECT 1 on it.
const ApplicationName = "platformctl events listener"

// Transport is the events.Transport across serve processes on one
// PostgreSQL database: Publish is a pg_notify on the shared pool after the
// change has committed, and Run holds one dedicated connection per process
// that LISTENs, however many streams the process serves.
type Transport struct {
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

// New returns the PostgreSQL transport: db publishes, url opens the
// listening connection.
func New(db *sql.DB, url string, log *slog.Logger) *Transport {
	return &Transport{db: db, url: url, log: log, Backoff: 100 * time.Millisecond, MaxBackoff: 5 * time.Second,
		Probe: time.Second}
}

// Publish implements events.Transport.
func (p *Transport) Publish(ctx context.Context, n events.Notice) error {
	b, err := n.Encode()
	if err != nil {
		return err
	}
	_, err = p.db.ExecContext(ctx, "SELECT pg_notify($1, $2)", Channel, string(b))
	return err
}

// Run implements events.Transport: it listens, and after a lost connection
// reconnects with backoff, until ctx is done.
func (p *Transport) Run(ctx context.Context, deliver func(events.Notice), listening, lost func()) error {
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

func (p *Transport) listen(ctx context.Context) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(p.url)
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["application_name"] = ApplicationName
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+Channel); err != nil {
		conn.Close(context.WithoutCancel(ctx)) //nolint:errcheck // failing anyway
		return nil, err
	}
	return conn, nil
}

func (p *Transport) receive(ctx context.Context, conn *pgx.Conn, deliver func(events.Notice)) error {
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
		n, err := events.DecodeNotice([]byte(msg.Payload))
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
func (p *Transport) probe(ctx context.Context, conn *pgx.Conn) error {
	ctx, cancel := context.WithTimeout(ctx, p.Probe)
	defer cancel()
	_, err := conn.Exec(ctx, "SELECT 1")
	return err
}
