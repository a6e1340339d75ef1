package store

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// The player routes are the hottest reads of the service, and bun's
// reflective scanning cost as much CPU as the queries themselves, so these
// reads go through database/sql directly and scan by hand.

// rows runs a read on the connection or transaction behind q. On
// PostgreSQL the values travel as bind parameters, so pgx's per-connection
// statement cache lets the server reuse the plan of each hot statement; on
// SQLite bun inlines them, as every other query of the store does, so that
// times are written in the one format stored values use.
func (q playerQ) rows(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if q.dialect == Postgres {
		query = numberPlaceholders(query)
	} else {
		query, args = q.idb.NewRaw(query, args...).String(), nil
	}
	var (
		rows *sql.Rows
		err  error
	)
	switch db := q.idb.(type) {
	case *bun.DB:
		rows, err = db.DB.QueryContext(ctx, query, args...)
	case bun.Tx:
		rows, err = db.Tx.QueryContext(ctx, query, args...)
	default:
		return nil, fmt.Errorf("store: unsupported handle %T", q.idb)
	}
	return rows, mapError(err)
}

// each runs a read and calls scan for every row.
func (q playerQ) each(ctx context.Context, scan func(*sql.Rows) error, query string, args ...any) error {
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

// numberPlaceholders turns ? into PostgreSQL's $1, $2, … The player
// queries hold no ? inside string literals.
func numberPlaceholders(query string) string {
	var b strings.Builder
	b.Grow(len(query) + 16)
	n := 0
	for i := 0; i < len(query); i++ {
		if query[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(query[i])
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

// dbTime scans a timestamp, NULL as the zero time, into a UTC time.
type dbTime struct{ t *time.Time }

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

func (e emptyString) Scan(src any) error {
	var v sql.NullString
	if err := v.Scan(src); err != nil {
		return err
	}
	*e.s = v.String
	return nil
}
