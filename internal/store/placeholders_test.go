package store

import (
	"path/filepath"
	"strings"
	"testing"
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

// The session lookup is the hottest query; on PostgreSQL it must carry
// exactly one parameter, $1, and on SQLite have its one value written in
// as the other raw statements do.
func TestSessionLookupPlaceholders(t *testing.T) {
	hash := []byte{0xab, 0xcd}
	pg, args := rawQ{dialect: Postgres}.bind(lookupSessionSQL, []any{hash})
	if strings.Count(pg, "$1") != 1 || strings.Contains(pg, "?") || strings.Contains(pg, "$2") || len(args) != 1 {
		t.Errorf("PostgreSQL lookup = %q with %d values, want one $1, no ? and one value", pg, len(args))
	}
	db, err := Open(t.Context(), "file:"+filepath.Join(t.TempDir(), "bind.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	lite, args := db.raw().bind(lookupSessionSQL, []any{hash})
	if strings.Contains(lite, "?") || !strings.Contains(lite, "X'abcd'") || len(args) != 0 {
		t.Errorf("SQLite lookup = %q with %d values, want X'abcd' written in and no values", lite, len(args))
	}
}
