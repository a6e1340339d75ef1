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

// The player routes are the hottest reads of the service, and bun's
// reflective scanning cost as much CPU as the queries themselves, so these
// reads bypass bun and scan by hand.

// rowScanner is one row of a read: *sql.Rows, or pgx.Rows on PostgreSQL.
type rowScanner interface {
	Scan(dest ...any) error
}

// each runs a read and calls scan for every row.
//
// On PostgreSQL outside a transaction the read goes through pgx itself:
// pgx decodes each binary column straight into the destinations below,
// where database/sql would first box it into a driver.Value (a formatted
// string for every UUID) and then convert that by reflection. A
// transaction's connection is not reachable through database/sql, so reads
// inside one take that road.
func (q playerQ) each(ctx context.Context, scan func(rowScanner) error, query string, args ...any) error {
	if db, ok := q.idb.(*bun.DB); ok && q.dialect == Postgres {
		return eachPgx(ctx, db.DB, scan, numberPlaceholders(query), args)
	}
	rows, err := q.rows(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return mapError(rows.Err())
}

// eachPgx runs a read on a pooled connection's pgx.Conn and calls scan for
// every row. It is the store's one way from database/sql to pgx (see the
// package doc). Like database/sql's pgx driver, pgx prepares each
// statement once per connection and binds the values as parameters; query
// takes PostgreSQL's $n placeholders (DB.placeholders).
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
		for rows.Next() {
			if err := scan(rows); err != nil {
				return err
			}
		}
		return rows.Err()
	}))
}

// rows runs a read through database/sql on the connection or transaction
// behind q, with its values bound as bind does.
func (q playerQ) rows(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	conn, err := q.sqlConn()
	if err != nil {
		return nil, err
	}
	query, args = q.bind(query, args)
	rows, err := conn.QueryContext(ctx, query, args...)
	return rows, mapError(err)
}

// exec runs a statement through database/sql on the connection or
// transaction behind q, with its values bound as bind does. Statements
// that run on every poll or every delivery (the mail worker's) use it, so
// that PostgreSQL keeps one prepared statement for each instead of
// parsing a new text, with new literals, every time.
func (q playerQ) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	conn, err := q.sqlConn()
	if err != nil {
		return nil, err
	}
	query, args = q.bind(query, args)
	res, err := conn.ExecContext(ctx, query, args...)
	return res, mapError(err)
}

// bind readies query, written with bun's ? placeholders, and its values
// for database/sql. On PostgreSQL the values travel as bind parameters,
// so the server reuses the plan of each hot statement; on SQLite bun
// inlines them, as every other query of the store does, so that times
// are written in the one format stored values use.
func (q playerQ) bind(query string, args []any) (string, []any) {
	if q.dialect == Postgres {
		return numberPlaceholders(query), args
	}
	return q.idb.NewRaw(query, args...).String(), nil
}

// sqlConn is the database/sql handle behind q: the pool, or the
// transaction's *sql.Tx, so that a statement sent with parameters still
// runs inside the transaction.
func (q playerQ) sqlConn() (sqlQueryer, error) {
	switch db := q.idb.(type) {
	case *bun.DB:
		return db.DB, nil
	case bun.Tx:
		return db.Tx, nil
	}
	return nil, fmt.Errorf("store: unsupported handle %T", q.idb)
}

// placeholders returns query, written with bun's ? placeholders, with
// the dialect's own: $1, $2, … on PostgreSQL, unchanged on SQLite.
func (db *DB) placeholders(query string) string {
	if db.dialect == Postgres {
		return numberPlaceholders(query)
	}
	return query
}

// numberPlaceholders turns each ? into PostgreSQL's $1, $2, … It leaves
// alone a ? inside a string literal ('…'), a quoted identifier ("…") or a
// line comment (-- …), so a literal question mark cannot shift the
// numbering. (PostgreSQL's jsonb ? operators are not used by the store.)
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

// timeLayouts are the forms a timestamp comes back in: pgx and the SQLite
// driver hand back time.Time for declared timestamp columns, but SQLite
// gives the stored text for computed columns.
var timeLayouts = []string{
	"2006-01-02 15:04:05.999999999-07:00",
	"2006-01-02 15:04:05.999999999Z07:00",
	time.RFC3339Nano,
	"2006-01-02 15:04:05.999999999",
}

// The destinations below implement both sql.Scanner and pgx's Scan*
// interfaces for the binary format, so that one list of destinations
// serves either road of each.

// dbUUID scans a UUID, NULL as the zero UUID.
type dbUUID struct{ id *uuid.UUID }

func (d dbUUID) Scan(src any) error {
	if src == nil {
		*d.id = uuid.Nil // uuid.UUID.Scan would leave the old value
		return nil
	}
	return d.id.Scan(src)
}

func (d dbUUID) ScanUUID(v pgtype.UUID) error {
	*d.id = v.Bytes // the zero UUID when NULL
	return nil
}

// dbTime scans a timestamp, NULL as the zero time, into a UTC time.
type dbTime struct{ t *time.Time }

func (d dbTime) ScanTimestamptz(v pgtype.Timestamptz) error {
	*d.t = time.Time{}
	if v.Valid {
		*d.t = v.Time.UTC()
	}
	return nil
}

func (d dbTime) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*d.t = time.Time{}
		return nil
	case time.Time:
		*d.t = v.UTC()
		return nil
	case []byte:
		return d.parse(string(v))
	case string:
		return d.parse(v)
	}
	return fmt.Errorf("store: cannot scan %T into a time", src)
}

func (d dbTime) parse(s string) error {
	for _, layout := range timeLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			*d.t = t.UTC()
			return nil
		}
	}
	return fmt.Errorf("store: cannot parse time %q", s)
}

// nullTime scans a nullable timestamp.
type nullTime struct{ t **time.Time }

func (n nullTime) ScanTimestamptz(v pgtype.Timestamptz) error {
	*n.t = nil
	if v.Valid {
		t := v.Time.UTC()
		*n.t = &t
	}
	return nil
}

func (n nullTime) Scan(src any) error {
	if src == nil {
		*n.t = nil
		return nil
	}
	var t time.Time
	if err := (dbTime{&t}).Scan(src); err != nil {
		return err
	}
	*n.t = &t
	return nil
}

// nullUUID scans a nullable UUID.
type nullUUID struct{ id **uuid.UUID }

func (n nullUUID) ScanUUID(v pgtype.UUID) error {
	*n.id = nil
	if v.Valid {
		id := uuid.UUID(v.Bytes)
		*n.id = &id
	}
	return nil
}

func (n nullUUID) Scan(src any) error {
	var v uuid.NullUUID
	if err := v.Scan(src); err != nil {
		return err
	}
	*n.id = nil
	if v.Valid {
		*n.id = &v.UUID
	}
	return nil
}

// nullString scans a nullable string into a pointer.
type nullString struct{ s **string }

func (n nullString) ScanText(v pgtype.Text) error {
	*n.s = nil
	if v.Valid {
		s := v.String // a copy, so that only a value costs an allocation
		*n.s = &s
	}
	return nil
}

func (n nullString) Scan(src any) error {
	var v sql.NullString
	if err := v.Scan(src); err != nil {
		return err
	}
	*n.s = nil
	if v.Valid {
		*n.s = &v.String
	}
	return nil
}

// emptyString scans a nullable string, NULL as "".
type emptyString struct{ s *string }

func (e emptyString) ScanText(v pgtype.Text) error {
	*e.s = v.String
	return nil
}

func (e emptyString) Scan(src any) error {
	var valid bool
	return scanText(src, e.s, &valid)
}

// optString is a nullable string that scans from either driver without
// allocating: a pointer to it is all a scan destination holds.
type optString struct {
	String string
	Valid  bool
}

func (o *optString) ScanText(v pgtype.Text) error {
	o.String, o.Valid = v.String, v.Valid
	return nil
}

func (o *optString) Scan(src any) error { return scanText(src, &o.String, &o.Valid) }

// scanText scans a nullable text column from database/sql into s and
// valid. The driver's string or []byte is taken as it is, without the
// heap-allocated sql.NullString a conversion would take.
func scanText(src any, s *string, valid *bool) error {
	switch v := src.(type) {
	case nil:
		*s, *valid = "", false
	case string:
		*s, *valid = v, true
	case []byte:
		*s, *valid = string(v), true
	default:
		var ns sql.NullString
		if err := ns.Scan(src); err != nil {
			return err
		}
		*s, *valid = ns.String, ns.Valid
	}
	return nil
}
