package store

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/uptrace/bun"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/towerdefence/platformctl/internal/platform"
)

// diskFullRetry is the wait a refused write suggests: space is not freed
// in a second.
const diskFullRetry = 30 * time.Second

// writeFailureWindow is how long after a failed write the health check
// still reports it, unless a write succeeds first.
const writeFailureWindow = time.Minute

// diskFull reports whether err is SQLite's "database or disk is full"
// (SQLITE_FULL: the disk, or the page limit, has no room for the write)
// or PostgreSQL's disk_full (53100).
func diskFull(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code()&0xff == sqlite3.SQLITE_FULL
	}
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "53100"
}

// errDiskFull is what a write that found no room answers: a dependency
// failure (503 with Retry-After), not a fault of the service.
func errDiskFull(err error) error {
	return (&platform.Error{Kind: platform.KindUnavailable, Code: platform.CodeUnavailable,
		Message: "the database cannot write: its disk is full; try again later", RetryAfter: diskFullRetry}).Wrap(err)
}

// writeHealth remembers the last write that failed for want of room, for
// the health check, until a later write succeeds or writeFailureWindow
// passes.
type writeHealth struct {
	failedAt atomic.Int64 // Unix nanoseconds; 0 when the last write succeeded
}

func (h *writeHealth) note(err error) {
	switch {
	case err == nil:
		if h.failedAt.Load() != 0 {
			h.failedAt.Store(0)
		}
	case diskFull(err):
		h.failedAt.Store(time.Now().UnixNano())
	}
}

// WriteFailure reports a write that failed because the database's disk is
// full, within the last minute and with no write succeeding since, as an
// error for the health check; nil when writes are going through.
func (db *DB) WriteFailure(context.Context) error {
	at := db.writes.failedAt.Load()
	if at == 0 || time.Since(time.Unix(0, at)) > writeFailureWindow {
		return nil
	}
	return errors.New("database or disk is full")
}

// writeWatch is the query hook that tells writeHealth how each statement
// outside a transaction went (InTx reports its own commits).
type writeWatch struct{ h *writeHealth }

func (writeWatch) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context { return ctx }

func (w writeWatch) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	if e.Err != nil || isWrite(e) {
		w.h.note(e.Err)
	}
}

// isWrite reports whether e ran a statement that changes data.
func isWrite(e *bun.QueryEvent) bool {
	switch e.Operation() {
	case "INSERT", "UPDATE", "DELETE":
		return true
	}
	return false
}
