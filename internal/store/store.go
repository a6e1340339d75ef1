// Package store is the only package that talks to the database, but for
// internal/eventspg, whose LISTEN needs a connection of its own. It opens
// the bun DB for the configured URL, chooses the dialect once, runs the
// migrations and implements the persistence interfaces the services
// declare, mapping driver errors to platform errors on the way out.
//
// # Transactions
//
// A store method never opens a transaction except through DB.InTx, and
// never takes a callback other than the function InTx runs. Each service
// declares the small Tx interface it needs; Tx, the one query type here,
// implements them all with steps over a bun.IDB, so the same steps run on
// the database or inside a transaction, and the rule that combines them
// stays in the service.
//
// # Two roads out of bun
//
// Every statement takes one of two roads, and only these two.
//
// The bun road is the default: bun's query builder (NewSelect, NewInsert,
// NewUpdate, NewDelete) for rows with a model, and NewRaw on the same
// handle for a statement the builder cannot say (a CTE, an upsert with a
// computed conflict rule, a dialect's own function). bun writes the values
// into the text and scans into models by their tags. Use it unless the
// statement qualifies for the raw road.
//
// The raw road (rawQ, raw.go) is for statements a benchmark showed bun's
// formatting or reflective scanning to cost about as much as the query
// itself, and for statements that run on every request or every worker
// poll with values that change each time (so that PostgreSQL prepares
// them once per connection instead of planning each new text): today the
// session lookup behind every signed-in request, sign-in's user lookup,
// the rate limiter, the player reads and the mail worker's claim,
// attempt and settlement. The migrator, backup and restore take it too,
// since they work on a dedicated connection, or a file of their own,
// before the schema exists. A raw statement
//   - is written with bun's ? placeholders, like every statement of the
//     store; numberPlaceholders, the one rewriter, numbers them $1, $2, …
//     for PostgreSQL. Its values travel as parameters on both dialects
//     (rawQ.bind); a time goes to SQLite as the text bun writes for it,
//     the one format stored values use;
//   - runs through rawQ.each or rawQ.one (reads), writeOne (a write that
//     returns a row) or exec, on the pool, a transaction (Tx embeds the
//     road) or a dedicated connection (DB.rawOn); a read on the pool runs
//     on PostgreSQL through eachPgx, the one place that reaches pgx;
//   - is scanned by hand through rowScanner into the destinations of
//     player_rows.go, which serve pgx and database/sql alike, so one list
//     of columns serves both dialects. Nothing scans a raw statement into
//     a bun model: hand-written destinations are what the road is for, and
//     one way to scan it keeps a column list and its Scan side by side.
package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/towerdefence/platformctl/internal/platform"
)

// Dialects.
const (
	Postgres = "postgres"
	SQLite   = "sqlite"
)

// DB is an open database with its dialect.
type DB struct {
	bun     *bun.DB
	dialect string
	// path is the SQLite database file; the migration lock is taken on it.
	path string
	// limitStamp is the latest time a SQLite rate-limit attempt was
	// counted at (Unix microseconds), shared by every RateLimits of db.
	limitStamp atomic.Int64
	// writes remembers a write refused for want of disk space.
	writes *writeHealth
}

// MissingDatabaseError is returned by OpenExisting when the database the
// URL names does not exist: commands that read or change existing data
// refuse to create an empty one.
type MissingDatabaseError struct {
	Dialect string
	// Where names the missing thing: a file path or a PostgreSQL database.
	Where string
}

func (e *MissingDatabaseError) Error() string {
	if e.Dialect == SQLite {
		return "the SQLite database " + e.Where + " does not exist"
	}
	return "the PostgreSQL database " + e.Where + " does not exist"
}

// Pool sizes the PostgreSQL connection pool and bounds its statements
// (config.DBPool). The embedded SQLite database keeps its own small pool.
type Pool struct {
	MaxConns, MaxIdleConns           int
	ConnMaxLifetime, ConnMaxIdleTime time.Duration
	// StatementTimeout is sent as statement_timeout unless the URL sets
	// one; 0 leaves the server's default.
	StatementTimeout time.Duration
	// ConnectWait is how long opening a connection keeps trying while no
	// server accepts it; 0 tries once.
	ConnectWait time.Duration
}

// DefaultPool is the pool of operator commands and tests.
var DefaultPool = Pool{MaxConns: 20, MaxIdleConns: 20, ConnMaxLifetime: time.Hour, ConnMaxIdleTime: 5 * time.Minute}

// Open connects to the database named by rawURL with DefaultPool.
func Open(ctx context.Context, rawURL string) (*DB, error) {
	return OpenPool(ctx, rawURL, DefaultPool)
}

// OpenPool connects to the database named by rawURL: postgres:// or
// postgresql:// for PostgreSQL, with pool p; sqlite://PATH or file:PATH for
// the embedded SQLite, whose parent directory is created when missing.
func OpenPool(ctx context.Context, rawURL string, p Pool) (*DB, error) {
	return open(ctx, rawURL, p, true)
}

// OpenExisting is Open for commands that work on existing data: it returns
// a *MissingDatabaseError instead of creating a database or its directory.
func OpenExisting(ctx context.Context, rawURL string) (*DB, error) {
	return open(ctx, rawURL, DefaultPool, false)
}

func open(ctx context.Context, rawURL string, p Pool, create bool) (*DB, error) {
	var db *DB
	switch {
	case strings.HasPrefix(rawURL, "postgres://"), strings.HasPrefix(rawURL, "postgresql://"):
		sqldb, err := openPostgres(withStatementTimeout(rawURL, p.StatementTimeout), p.ConnectWait)
		if err != nil {
			return nil, err
		}
		sqldb.SetMaxOpenConns(p.MaxConns)
		sqldb.SetMaxIdleConns(min(p.MaxIdleConns, p.MaxConns))
		sqldb.SetConnMaxLifetime(p.ConnMaxLifetime)
		sqldb.SetConnMaxIdleTime(p.ConnMaxIdleTime)
		db = &DB{bun: bun.NewDB(sqldb, pgdialect.New()), dialect: Postgres, writes: &writeHealth{}}
	default:
		path, err := sqlitePath(rawURL)
		if err != nil {
			return nil, err
		}
		if !create {
			if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
				return nil, &MissingDatabaseError{Dialect: SQLite, Where: path}
			}
		} else if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("create database directory: %w", err)
		}
		// WAL lets readers run beside the writer; IMMEDIATE transactions take
		// the write lock up front so concurrent writers queue on the busy
		// timeout instead of failing with SQLITE_BUSY on lock upgrade.
		dsn := "file:" + path + "?_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)" +
			"&_pragma=busy_timeout(10000)&_pragma=synchronous(NORMAL)&_txlock=immediate"
		sqldb, err := sql.Open("sqlite", dsn)
		if err != nil {
			return nil, fmt.Errorf("open sqlite: %w", err)
		}
		sqldb.SetMaxOpenConns(4)
		sqldb.SetMaxIdleConns(4)
		// A full disk fails SQLite's writes, while its ping still passes;
		// the health check learns of it from the writes themselves.
		writes := &writeHealth{}
		db = &DB{bun: bun.NewDB(sqldb, sqlitedialect.New()).WithQueryHook(writeWatch{writes}), dialect: SQLite, path: path, writes: writes}
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.bun.PingContext(pingCtx); err != nil {
		db.bun.Close()
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "3D000" { // invalid_catalog_name
			return nil, &MissingDatabaseError{Dialect: Postgres, Where: postgresDBName(rawURL)}
		}
		return nil, mapError(fmt.Errorf("connect to %s database: %w", db.dialect, err))
	}
	return db, nil
}

// withStatementTimeout adds statement_timeout (a run-time parameter pgx
// sends at connect) to a PostgreSQL URL that does not set it.
func withStatementTimeout(rawURL string, d time.Duration) string {
	u, err := url.Parse(rawURL)
	if err != nil || d <= 0 || u.Query().Has("statement_timeout") {
		return rawURL // a malformed URL fails in sql.Open's parser with its own message
	}
	q := u.Query()
	q.Set("statement_timeout", fmt.Sprint(d.Milliseconds()))
	u.RawQuery = q.Encode()
	return u.String()
}

// postgresDBName names the database of a PostgreSQL URL without its
// credentials.
func postgresDBName(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(unparsable URL)"
	}
	return strings.TrimPrefix(u.Path, "/") + " on " + u.Host
}

func sqlitePath(rawURL string) (string, error) {
	var path string
	switch {
	case strings.HasPrefix(rawURL, "sqlite://"):
		path = strings.TrimPrefix(rawURL, "sqlite://")
	case strings.HasPrefix(rawURL, "file:"):
		path = strings.TrimPrefix(rawURL, "file:")
	default:
		return "", fmt.Errorf("unsupported database URL scheme")
	}
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	path, err := url.PathUnescape(path)
	if err != nil || path == "" {
		return "", fmt.Errorf("database URL has no file path")
	}
	return path, nil
}

// Dialect returns Postgres or SQLite.
func (db *DB) Dialect() string { return db.dialect }

// Bun exposes the bun handle to this package's stores and tests.
func (db *DB) Bun() *bun.DB { return db.bun }

// Ping checks that the database answers. A pooled connection found dead
// is dropped and the ping tried once more, on a connection checked first,
// so health recovers at the next check after a failover.
func (db *DB) Ping(ctx context.Context) error {
	err := db.bun.PingContext(ctx)
	if errors.Is(err, driver.ErrBadConn) {
		err = db.bun.PingContext(ctx)
	}
	return err
}

// Close closes every connection.
func (db *DB) Close() error { return db.bun.Close() }

// SQL returns the underlying pool, for pool statistics.
func (db *DB) SQL() *sql.DB { return db.bun.DB }

// uniqueViolation reports whether err is a unique-constraint violation whose
// constraint (PostgreSQL) or index/column description (SQLite) mentions
// key. Unique constraints are named <table>_<column>_key so one key matches
// on both dialects.
func uniqueViolation(err error, key string) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "23505" && strings.Contains(pgErr.ConstraintName, key)
	}
	var sqlErr *sqlite.Error
	if errors.As(err, &sqlErr) {
		code := sqlErr.Code()
		return (code == sqlite3.SQLITE_CONSTRAINT_UNIQUE || code == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY) &&
			strings.Contains(sqlErr.Error(), key)
	}
	return false
}

// mapError turns connection failures into SERVICE_UNAVAILABLE so callers
// answer 503 instead of 500 while the database is down; other errors pass
// through unchanged.
func mapError(err error) error {
	if err == nil || errors.Is(err, sql.ErrNoRows) {
		return err
	}
	if _, ok := platform.As(err); ok {
		return err
	}
	if fk := foreignKeyGone(err); fk != nil {
		return fk
	}
	if diskFull(err) {
		return errDiskFull(err)
	}
	if isConnectionError(err) {
		return (&platform.Error{Kind: platform.KindUnavailable, Code: platform.CodeUnavailable,
			Message: "the database is unavailable; try again shortly"}).Wrap(err)
	}
	return err
}

func isConnectionError(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// Class 08: connection exception; 57P01-57P03: shutdown/cannot connect now.
		return strings.HasPrefix(pgErr.Code, "08") || strings.HasPrefix(pgErr.Code, "57P0")
	}
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) {
		return true
	}
	// A connection the server (or the network) closed mid-conversation
	// surfaces from pgx as a bare EOF.
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, driver.ErrBadConn) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "connection refused") || strings.Contains(msg, "broken pipe") ||
		strings.Contains(msg, "connection reset") || strings.Contains(msg, "failed to connect") ||
		strings.Contains(msg, "conn closed") || errors.Is(err, context.DeadlineExceeded)
}
