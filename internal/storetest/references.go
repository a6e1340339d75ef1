package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/store"
)

// UserForeignKeys reads from the schema itself (information_schema on
// PostgreSQL, pragma_foreign_key_list on SQLite) every column that
// refers to users(id), as "table.column", sorted.
func UserForeignKeys(tb testing.TB, db *store.DB) []string {
	tb.Helper()
	q := `SELECT kcu.table_name || '.' || kcu.column_name
		FROM information_schema.referential_constraints rc
		JOIN information_schema.key_column_usage kcu
			ON kcu.constraint_name = rc.constraint_name AND kcu.constraint_schema = rc.constraint_schema
		JOIN information_schema.constraint_column_usage ccu
			ON ccu.constraint_name = rc.unique_constraint_name AND ccu.constraint_schema = rc.unique_constraint_schema
		WHERE ccu.table_name = 'users' AND ccu.column_name = 'id' AND kcu.table_schema = current_schema()`
	if db.Dialect() == store.SQLite {
		q = `SELECT m.name || '.' || f."from" FROM sqlite_master m, pragma_foreign_key_list(m.name) f
			WHERE m.type = 'table' AND f."table" = 'users' AND f."to" = 'id'`
	}
	rows, err := db.SQL().QueryContext(tb.Context(), q)
	if err != nil {
		tb.Fatalf("read foreign keys: %v", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			tb.Fatalf("read foreign keys: %v", err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		tb.Fatalf("read foreign keys: %v", err)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// RowsReferencing counts, for every column UserForeignKeys finds, the rows
// whose column holds id; only non-zero counts are returned.
func RowsReferencing(tb testing.TB, db *store.DB, id uuid.UUID) map[string]int {
	tb.Helper()
	out := map[string]int{}
	for _, ref := range UserForeignKeys(tb, db) {
		table, column, _ := strings.Cut(ref, ".")
		if n := Count(tb, db, fmt.Sprintf(`SELECT COUNT(*) FROM %q WHERE %q = ?`, table, column), id); n > 0 {
			out[ref] = n
		}
	}
	return out
}

// AgeSessions moves the start of every session of userID back to d ago,
// as if the user had signed in that long ago.
func AgeSessions(tb testing.TB, db *store.DB, userID uuid.UUID, d time.Duration) {
	tb.Helper()
	_, err := db.Bun().NewUpdate().TableExpr("sessions").Set("created_at = ?", time.Now().Add(-d).UTC()).
		Where("user_id = ?", userID).Exec(tb.Context())
	if err != nil {
		tb.Fatalf("age sessions: %v", err)
	}
}

// ExpireDeletionTokens moves the expiry of every deletion token of userID
// into the past.
func ExpireDeletionTokens(tb testing.TB, db *store.DB, userID uuid.UUID) {
	tb.Helper()
	_, err := db.Bun().NewUpdate().TableExpr("deletion_tokens").Set("expires_at = ?", time.Now().Add(-time.Minute).UTC()).
		Where("user_id = ?", userID).Exec(tb.Context())
	if err != nil {
		tb.Fatalf("expire deletion tokens: %v", err)
	}
}
