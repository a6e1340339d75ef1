package store

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"
)

// The scan destinations are reused from row to row, so a NULL must clear
// what the previous row left, whichever driver fills them.
func TestScanDestinationsClearOnNull(t *testing.T) {
	id := uuid.New()
	now := time.Now()
	s := "text"

	u := id
	if err := (dbUUID{&u}).Scan(nil); err != nil || u != uuid.Nil {
		t.Errorf("dbUUID.Scan(nil) = %v, left %v", err, u)
	}
	u = id
	if err := (dbUUID{&u}).ScanUUID(pgtype.UUID{}); err != nil || u != uuid.Nil {
		t.Errorf("dbUUID.ScanUUID(NULL) = %v, left %v", err, u)
	}
	if err := (dbUUID{&u}).ScanUUID(pgtype.UUID{Bytes: id, Valid: true}); err != nil || u != id {
		t.Errorf("dbUUID.ScanUUID(%v) = %v, got %v", id, err, u)
	}

	tm := now
	if err := (dbTime{&tm}).ScanTimestamptz(pgtype.Timestamptz{}); err != nil || !tm.IsZero() {
		t.Errorf("dbTime.ScanTimestamptz(NULL) = %v, left %v", err, tm)
	}
	local := now.In(time.FixedZone("x", 3600))
	if err := (dbTime{&tm}).ScanTimestamptz(pgtype.Timestamptz{Time: local, Valid: true}); err != nil || !tm.Equal(now) || tm.Location() != time.UTC {
		t.Errorf("dbTime.ScanTimestamptz(%v) = %v, got %v", local, err, tm)
	}

	tp := &now
	if err := (nullTime{&tp}).ScanTimestamptz(pgtype.Timestamptz{}); err != nil || tp != nil {
		t.Errorf("nullTime.ScanTimestamptz(NULL) = %v, left %v", err, tp)
	}
	up := &id
	if err := (nullUUID{&up}).ScanUUID(pgtype.UUID{}); err != nil || up != nil {
		t.Errorf("nullUUID.ScanUUID(NULL) = %v, left %v", err, up)
	}
	sp := &s
	if err := (nullString{&sp}).ScanText(pgtype.Text{}); err != nil || sp != nil {
		t.Errorf("nullString.ScanText(NULL) = %v, left %v", err, sp)
	}
	str := s
	if err := (emptyString{&str}).ScanText(pgtype.Text{}); err != nil || str != "" {
		t.Errorf("emptyString.ScanText(NULL) = %v, left %q", err, str)
	}
}

// optString reports NULL as invalid whichever driver fills it, and a
// value as valid, clearing what the previous row left.
func TestOptStringScan(t *testing.T) {
	o := optString{String: "left over", Valid: true}
	if err := o.Scan(nil); err != nil || o.String != "" || o.Valid {
		t.Errorf("Scan(nil) = %v, left %+v", err, o)
	}
	if err := o.ScanText(pgtype.Text{String: "img", Valid: true}); err != nil || o.String != "img" || !o.Valid {
		t.Errorf("ScanText(img) = %v, left %+v", err, o)
	}
	if err := o.ScanText(pgtype.Text{}); err != nil || o.String != "" || o.Valid {
		t.Errorf("ScanText(NULL) = %v, left %+v", err, o)
	}
	if err := o.Scan([]byte("img")); err != nil || o.String != "img" || !o.Valid {
		t.Errorf("Scan(img) = %v, left %+v", err, o)
	}
}

// A stateRow scans the kind and then one destination per column of
// playerStateLayout; a column added to one and not the other would shift
// every column after it.
func TestStateRowMatchesLayout(t *testing.T) {
	want := 1
	for _, g := range playerStateLayout {
		want += len(g.cols)
	}
	if got := len((&stateRow{}).dest()); got != want {
		t.Errorf("stateRow has %d destinations, playerStateLayout %d columns and the kind", got, want)
	}
}
