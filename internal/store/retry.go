package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
)

// openPostgres opens a pool whose connections report a backend that was
// terminated (a failover, a pooler recycling connections, an idle-kill)
// as driver.ErrBadConn when it fails a statement before running it, so
// database/sql retries the statement on another connection, a new one at
// the last try, instead of failing the request.
//
// Once one connection is found dead, its siblings probably are too (a
// failover ends them all): for a few seconds every connection is pinged
// as it leaves the pool, so the retry lands on a live or a new one.
func openPostgres(rawURL string, connectWait time.Duration) (*sql.DB, error) {
	cfg, err := pgx.ParseConfig(rawURL)
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	s := &suspicion{}
	connector := stdlib.GetConnector(*cfg, stdlib.OptionShouldPing(func(_ context.Context, p stdlib.ShouldPingParams) bool {
		return p.IdleDuration > time.Second || s.active()
	}))
	return sql.OpenDB(retryConnector{Connector: waitingConnector{Connector: connector, wait: connectWait}, suspicion: s}), nil
}

// suspicion is the time until which pooled connections are pinged before use.
type suspicion struct{ until atomic.Int64 }

func (s *suspicion) raise()       { s.until.Store(time.Now().Add(5 * time.Second).UnixNano()) }
func (s *suspicion) active() bool { return time.Now().UnixNano() < s.until.Load() }

type retryConnector struct {
	driver.Connector
	suspicion *suspicion
}

func (c retryConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return retryConn{Conn: conn.(*stdlib.Conn), suspicion: c.suspicion}, nil
}

// retryConn is a pgx connection whose statements and BEGINs turn a lost
// connection into driver.ErrBadConn. Everything else is pgx's own.
type retryConn struct {
	*stdlib.Conn
	suspicion *suspicion
}

func (c retryConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	res, err := c.Conn.ExecContext(ctx, query, args)
	return res, c.check(err)
}

func (c retryConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	rows, err := c.Conn.QueryContext(ctx, query, args)
	return rows, c.check(err)
}

func (c retryConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := c.Conn.BeginTx(ctx, opts)
	return tx, c.check(err)
}

// Ping is pgx's, raising the suspicion when the connection is dead.
func (c retryConn) Ping(ctx context.Context) error {
	err := c.Conn.Ping(ctx)
	if err != nil {
		c.suspicion.raise()
	}
	return err
}

// check maps err with badConn and, for a lost connection, raises the
// suspicion on the others.
func (c retryConn) check(err error) error {
	err = badConn(err)
	if errors.Is(err, driver.ErrBadConn) {
		c.suspicion.raise()
	}
	return err
}

// withPgx runs fn on the pgx connection behind a pooled connection, for
// the hot reads that skip database/sql's row scanning. When fn failed
// because the connection was lost, before its statement ran or while its
// rows were read, the connection is dropped and fn (a read, so safe to
// repeat) runs once more on another.
func withPgx(ctx context.Context, db *sql.DB, fn func(*pgx.Conn) error) error {
	err := withPgxOnce(ctx, db, fn)
	if connectionLost(err) {
		err = withPgxOnce(ctx, db, fn)
	}
	return err
}

func withPgxOnce(ctx context.Context, db *sql.DB, fn func(*pgx.Conn) error) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(driverConn any) error {
		rc, ok := driverConn.(retryConn)
		if !ok {
			return fmt.Errorf("store: unexpected driver connection %T", driverConn)
		}
		// ErrBadConn from Raw also makes database/sql close the connection.
		return rc.check(fn(rc.Conn.Conn()))
	})
}

// badConn maps an error that proves the statement never ran on the server
// to driver.ErrBadConn: the server said it is shutting the session down
// (57P01-57P03) or the connection is broken (class 08), or pgx knows it
// sent nothing.
func badConn(err error) error {
	if err == nil {
		return nil
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		if strings.HasPrefix(pgErr.Code, "08") || strings.HasPrefix(pgErr.Code, "57P0") {
			return driver.ErrBadConn
		}
		return err
	}
	if pgconn.SafeToRetry(err) {
		return driver.ErrBadConn
	}
	return err
}

// retryable reports whether a failed transaction may run again from the
// start: PostgreSQL rolled it back as a serialization failure or deadlock
// victim, or its connection was lost before COMMIT was sent. A lost
// connection counts however it shows: refused before a statement ran
// (driver.ErrBadConn), or as the server's 57P01 or a bare EOF while rows
// were read, since a transaction that never committed left nothing behind.
func retryable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "40001" || pgErr.Code == "40P01") {
		return true
	}
	return connectionLost(err)
}

// connectionLost reports whether err shows the connection itself failed,
// as opposed to the statement or the caller's deadline.
func connectionLost(err error) bool {
	return err != nil && isConnectionError(err) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled)
}

// txAttempts bounds how often InTx runs a transaction that keeps failing
// with a retryable error.
const txAttempts = 4

// InTx runs fn in one transaction, committing when it returns nil and
// rolling back otherwise. It is the only way the store opens a
// transaction; the stores' InTx methods hand the same Tx to the service
// as the interface that service declared.
//
// fn may run more than once: a transaction that fails with a
// serialization failure or deadlock, or loses its connection before
// COMMIT, runs again (at most txAttempts times, after a short jittered
// pause). So fn must have no side effects outside the transaction (no
// mail sent, no event published, no shared counter moved) and leave
// nothing behind but its results. A failed COMMIT is never retried:
// whether it committed is unknown.
func (db *DB) InTx(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error {
	var err error
	for attempt := range txAttempts {
		var committing bool
		err = db.bun.RunInTx(ctx, nil, func(ctx context.Context, btx bun.Tx) error {
			if err := fn(ctx, db.on(btx)); err != nil {
				return err
			}
			committing = true
			return nil
		})
		if err == nil || committing || !retryable(err) || attempt == txAttempts-1 {
			break
		}
		pause := time.Duration(1<<attempt) * 5 * time.Millisecond
		select {
		case <-ctx.Done():
			return mapError(err)
		case <-time.After(pause/2 + rand.N(pause)):
		}
	}
	db.writes.note(err)
	return mapError(err)
}
