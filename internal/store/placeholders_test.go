package store

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The reads that leave bun are written with bun's ? placeholders and
// numbered for PostgreSQL; a question mark inside quoted text or a comment
// is not a placeholder and must neither be numbered nor shift the numbers.
func TestNumberPlaceholders(t *testing.T) {
	cases := []struct{ in, want string }{
		{"SELECT 1", "SELECT 1"},
		{"a = ? AND b = ?", "a = $1 AND b = $2"},
		{"a = '?' AND b = ?", "a = '?' AND b = $1"},
		{"a = 'it''s ?' AND b = ?", "a = 'it''s ?' AND b = $1"},
		{`SELECT "odd?name" FROM t WHERE x = ?`, `SELECT "odd?name" FROM t WHERE x = $1`},
		{"SELECT ? -- why?\nFROM t WHERE x = ?", "SELECT $1 -- why?\nFROM t WHERE x = $2"},
		{"a = 1 - ? AND b = ?", "a = 1 - $1 AND b = $2"},
		{"LIMIT ?", "LIMIT $1"},
	}
	for _, c := range cases {
		if got := numberPlaceholders(c.in); got != c.want {
			t.Errorf("numberPlaceholders(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

// The session lookup is the hottest query: it must carry exactly one
// parameter, $1 on PostgreSQL and ? on SQLite, with its value sent apart.
func TestSessionLookupPlaceholders(t *testing.T) {
	hash := []byte{0xab, 0xcd}
	pg, args := rawQ{dialect: Postgres}.bind(lookupSessionSQL, []any{hash})
	if strings.Count(pg, "$1") != 1 || strings.Contains(pg, "?") || strings.Contains(pg, "$2") || len(args) != 1 {
		t.Errorf("PostgreSQL lookup = %q with %d values, want one $1, no ? and one value", pg, len(args))
	}
	lite, args := rawQ{dialect: SQLite}.bind(lookupSessionSQL, []any{hash})
	if lite != lookupSessionSQL || len(args) != 1 {
		t.Errorf("SQLite lookup = %q with %d values, want it as written with one value", lite, len(args))
	}
}

// A raw statement's times reach SQLite as the text bun writes for them,
// the format of every stored time, so that they compare with stored
// times as text; the caller's values are left alone.
func TestSQLiteBindsTimesAsBunWritesThem(t *testing.T) {
	at := time.Date(2026, 11, 27, 7, 8, 9, 123456789, time.FixedZone("X", 3600))
	db, err := Open(t.Context(), "file:"+filepath.Join(t.TempDir(), "bind.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	want := strings.Trim(db.bun.NewRaw("?", at).String(), "'")
	in := []any{at, &at, (*time.Time)(nil), "x"}
	_, got := db.raw().bind("SELECT ?, ?, ?, ?", in)
	if got[0] != want || got[1] != want || got[2] != (*time.Time)(nil) || got[3] != "x" {
		t.Errorf("bound %#v, want %q twice, a nil *time.Time and x", got, want)
	}
	if in[0] != at {
		t.Errorf("bind changed the caller's values: %#v", in)
	}
}
