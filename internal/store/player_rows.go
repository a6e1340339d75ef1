package store

import (
	"database/sql"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"
)

// The scan destinations of the raw road (raw.go). Its reads scan each row
// by hand into these, so that one list of destinations serves pgx's binary
// decoding on PostgreSQL and database/sql on SQLite.

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
