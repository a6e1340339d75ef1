package store

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/uptrace/bun"
)

// rawQ is the store's one raw road out of bun (see the package doc): a
// statement written by hand with bun's ? placeholders, its values sent as
// parameters, each row scanned by hand through rowScanner
// into the destinations of player_rows.go. It runs on a database/sql
// handle: the pool, a transaction, or the dedicated connection of the
// migrator.
type rawQ struct {
	conn sqlQueryer
	// pool is conn when conn is the pool itself: reads then run on pgx on
	// PostgreSQL. A transaction's or a dedicated connection's statements
	// must stay on that connection, so they take database/sql.
	pool    *sql.DB
	dialect string
}

// sqlQueryer is what *sql.DB, *sql.Conn and *sql.Tx all offer.
type sqlQueryer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// rowScanner is one row of a read: *sql.Rows, or pgx.Rows on PostgreSQL.
type rowScanner interface {
	Scan(dest ...any) error
}

// raw is the raw road on the pool.
func (db *DB) raw() rawQ { return db.rawOn(db.bun.DB) }

// rawOn is the raw road on conn: the pool, a transaction or a connection
// of db.
func (db *DB) rawOn(conn sqlQueryer) rawQ {
	pool, _ := conn.(*sql.DB)
	return rawQ{conn: conn, pool: pool, dialect: db.dialect}
}

// sqlHandle is the database/sql handle behind a bun handle, so that a raw
// statement inside a transaction runs in that transaction.
func sqlHandle(idb bun.IDB) sqlQueryer {
	switch h := idb.(type) {
	case *bun.DB:
		return h.DB
	case bun.Tx:
		return h.Tx
	case bun.Conn:
		return h.Conn
	}
	panic(fmt.Sprintf("store: unsupported bun handle %T", idb))
}

// each runs a read and calls scan for every row.
//
// On PostgreSQL outside a transaction the read goes through pgx itself:
// pgx decodes each binary column straight into the destinations, where
// database/sql would first box it into a driver.Value (a formatted string
// for every UUID) and then convert that by reflection. A read that loses
// its connection there runs once more on another (withPgx), so each is
// for reads only; a statement that writes uses exec or writeOne.
func (r rawQ) each(ctx context.Context, scan func(rowScanner) error, query string, args ...any) error {
	if r.pool != nil && r.dialect == Postgres {
		return eachPgx(ctx, r.pool, scan, numberPlaceholders(query), args)
	}
	rows, err := r.rows(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	if err := scanEach(rows, scan); err != nil {
		return err
	}
	return mapError(rows.Err())
}

// scanEach calls scan for every row of rows: *sql.Rows, or pgx.Rows.
func scanEach(rows interface {
	rowScanner
	Next() bool
}, scan func(rowScanner) error) error {
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return nil
}

// one runs a read of at most one row and scans it; sql.ErrNoRows when
// there is none.
func (r rawQ) one(ctx context.Context, scan func(rowScanner) error, query string, args ...any) error {
	found := false
	err := r.each(ctx, func(row rowScanner) error {
		found = true
		return scan(row)
	}, query, args...)
	if err == nil && !found {
		return sql.ErrNoRows
	}
	return err
}

// writeOne runs a statement that writes and returns one row, and scans
// that row; sql.ErrNoRows when it returns none. It goes through
// database/sql, which sends a statement again only when the server never
// received it.
func (r rawQ) writeOne(ctx context.Context, scan func(rowScanner) error, query string, args ...any) error {
	rows, err := r.rows(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return mapError(err)
		}
		return sql.ErrNoRows
	}
	if err := scan(rows); err != nil {
		return err
	}
	return mapError(rows.Close())
}

// eachPgx runs a read on a pooled connection's pgx.Conn and calls scan for
// every row. It is the store's one way from database/sql to pgx. Like
// database/sql's pgx driver, pgx prepares each statement once per
// connection and binds the values as parameters; query takes PostgreSQL's
// $n placeholders (numberPlaceholders).
func eachPgx(ctx context.Context, db *sql.DB, scan func(rowScanner) error, query string, args []any) error {
	// pgx would send a uuid.UUID through its driver.Valuer, as text.
	bound := make([]any, len(args))
	for i, a := range args {
		if id, ok := a.(uuid.UUID); ok {
			a = pgtype.UUID{Bytes: id, Valid: true}
		}
		bound[i] = a
	}
	return mapError(withPgx(ctx, db, func(pc *pgx.Conn) error {
		rows, err := pc.Query(ctx, query, bound...)
		if err != nil {
			return err
		}
		defer rows.Close()
		if err := scanEach(rows, scan); err != nil {
			return err
		}
		return rows.Err()
	}))
}

// rows runs a statement through database/sql on r's handle, with its
// values bound as bind does.
func (r rawQ) rows(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	query, args = r.bind(query, args)
	rows, err := r.conn.QueryContext(ctx, query, args...)
	return rows, mapError(err)
}

// exec runs a statement that returns no rows through database/sql on r's
// handle, with its values bound as bind does. Statements that run on
// every poll or every delivery (the mail worker's) use it, so that
// PostgreSQL keeps one prepared statement for each instead of parsing a
// new text, with new literals, every time.
func (r rawQ) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	query, args = r.bind(query, args)
	res, err := r.conn.ExecContext(ctx, query, args...)
	return res, mapError(err)
}

// bind readies query, written with bun's ? placeholders, and its values
// for database/sql. The values travel as bind parameters on both
// dialects: on PostgreSQL the server then reuses the plan of each hot
// statement; on SQLite nothing formats the text on every call. A time is
// sent to SQLite as the text bun writes for it, the one format stored
// values use, so that comparisons with stored times hold.
func (r rawQ) bind(query string, args []any) (string, []any) {
	if r.dialect == Postgres {
		return numberPlaceholders(query), args
	}
	copied := false
	for i, a := range args {
		t, ok := timeArg(a)
		if !ok {
			continue
		}
		if !copied { // the caller's slice stays as it was
			args, copied = append([]any(nil), args...), true
		}
		args[i] = t.UTC().Format(sqliteTimeLayout)
	}
	return query, args
}

// timeArg is the time a value holds, if it is a time or a non-nil pointer
// to one.
func timeArg(a any) (time.Time, bool) {
	switch v := a.(type) {
	case time.Time:
		return v, true
	case *time.Time:
		if v != nil {
			return *v, true
		}
	}
	return time.Time{}, false
}

// sqliteTimeLayout is how bun writes a time into a SQLite statement, and
// so the format of every stored time.
const sqliteTimeLayout = "2006-01-02 15:04:05.999999-07:00"

// numberPlaceholders turns each ? into PostgreSQL's $1, $2, … It is the
// store's one placeholder rewriter. It leaves alone a ? inside a string
// literal ('…'), a quoted identifier ("…") or a line comment (-- …), so a
// literal question mark cannot shift the numbering. (PostgreSQL's jsonb ?
// operators are not used by the store.)
func numberPlaceholders(query string) string {
	var b strings.Builder
	b.Grow(len(query) + 16)
	n := 0
	var quote byte // the quote or '-' (line comment) we are inside, or 0
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case quote == '-':
			if c == '\n' {
				quote = 0
			}
		case quote != 0:
			if c == quote {
				quote = 0 // a doubled quote closes and reopens: same result
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '-' && i+1 < len(query) && query[i+1] == '-':
			quote = '-'
		case c == '?':
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}
