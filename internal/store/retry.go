package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
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
func openPostgres(rawURL string) (*sql.DB, error) {
	cfg, err := pgx.ParseConfig(rawURL)
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	return sql.OpenDB(retryConnector{stdlib.GetConnector(*cfg)}), nil
}

type retryConnector struct{ driver.Connector }

func (c retryConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return retryConn{conn.(*stdlib.Conn)}, nil
}

// retryConn is a pgx connection whose statements and BEGINs turn a lost
// connection into driver.ErrBadConn. Everything else is pgx's own.
type retryConn struct{ *stdlib.Conn }

func (c retryConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	res, err := c.Conn.ExecContext(ctx, query, args)
	return res, badConn(err)
}

func (c retryConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	rows, err := c.Conn.QueryContext(ctx, query, args)
	return rows, badConn(err)
}

func (c retryConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := c.Conn.BeginTx(ctx, opts)
	return tx, badConn(err)
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
// victim, or its connection died before COMMIT was sent.
func retryable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "40001" || pgErr.Code == "40P01"
	}
	return errors.Is(err, driver.ErrBadConn)
}

// txAttempts bounds how often InTx runs a transaction that keeps failing
// with a retryable error.
const txAttempts = 4

// InTx runs fn in a transaction, committing when it returns nil. A
// transaction that fails with a serialization failure or deadlock, or
// loses its connection before COMMIT, runs again (at most txAttempts
// times, after a short jittered pause), so fn must leave nothing behind
// outside the transaction but its results. A failed COMMIT is never
// retried: whether it committed is unknown.
func (db *DB) InTx(ctx context.Context, fn func(ctx context.Context, tx bun.Tx) error) error {
	var err error
	for attempt := range txAttempts {
		var committing bool
		err = db.bun.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			if err := fn(ctx, tx); err != nil {
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
	return mapError(err)
}
