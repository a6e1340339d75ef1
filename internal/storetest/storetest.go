// Package storetest opens a migrated database for a test: SQLite in the
// test's temporary directory by default, or a fresh PostgreSQL database on
// the server named by PLATFORM_TEST_DATABASE_URL, dropped when the test ends.
package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // "pgx" driver for creating databases

	"github.com/towerdefence/platformctl/internal/eventspg"
	"github.com/towerdefence/platformctl/internal/store"
)

// EnvURL names the PostgreSQL server tests use when set.
const EnvURL = "PLATFORM_TEST_DATABASE_URL"

// URL returns a database URL for a new, empty database that is removed
// when tb ends.
func URL(tb testing.TB) string {
	tb.Helper()
	base := os.Getenv(EnvURL)
	if base == "" {
		return "file:" + filepath.Join(tb.TempDir(), "platform.db")
	}
	u, err := url.Parse(base)
	if err != nil {
		tb.Fatalf("%s: %v", EnvURL, err)
	}
	admin, err := sql.Open("pgx", base)
	if err != nil {
		tb.Fatalf("open %s: %v", EnvURL, err)
	}
	defer admin.Close()
	raw := make([]byte, 6)
	rand.Read(raw)
	name := "platformctl_test_" + hex.EncodeToString(raw)
	if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
		tb.Fatalf("create test database: %v", err)
	}
	tb.Cleanup(func() {
		admin, err := sql.Open("pgx", base)
		if err != nil {
			return
		}
		defer admin.Close()
		if _, err := admin.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"); err != nil {
			tb.Logf("drop test database %s: %v", name, err)
		}
	})
	u.Path = "/" + name
	return u.String()
}

// Open returns a migrated database for tb, closed when tb ends.
func Open(tb testing.TB) *store.DB {
	tb.Helper()
	db := OpenEmpty(tb)
	m, err := db.Migrator()
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := m.Up(tb.Context()); err != nil {
		tb.Fatalf("migrate: %v", err)
	}
	return db
}

// OpenEmpty returns an unmigrated database for tb, closed when tb ends.
func OpenEmpty(tb testing.TB) *store.DB {
	tb.Helper()
	db, err := store.Open(tb.Context(), URL(tb))
	if err != nil {
		tb.Fatalf("open test database: %v", err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// The helpers below are the tests' one door to the tables themselves, for
// a test that must look at rows no service shows (a hash, a lease) or put
// the database into a state no service reaches (a lapsed lease, an expired
// token). The query is written with ? placeholders on either database. They
// run under tb's context without its cancellation, so a cleanup may use
// them too, and fail tb on any error.

// Count returns the integer query answers: a count, usually.
func Count(tb testing.TB, db *store.DB, query string, args ...any) int {
	tb.Helper()
	var n int
	Scan(tb, db, &n, query, args...)
	return n
}

// Scan runs query and scans its first row into dest: one value, or a
// struct whose bun tags name the columns.
func Scan(tb testing.TB, db *store.DB, dest any, query string, args ...any) {
	tb.Helper()
	if err := db.Bun().NewRaw(query, args...).Scan(context.WithoutCancel(tb.Context()), dest); err != nil {
		tb.Fatalf("%s: %v", query, err)
	}
}

// Exec runs a statement and returns how many rows it changed.
func Exec(tb testing.TB, db *store.DB, query string, args ...any) int64 {
	tb.Helper()
	res, err := db.Bun().ExecContext(context.WithoutCancel(tb.Context()), query, args...)
	if err != nil {
		tb.Fatalf("%s: %v", query, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		tb.Fatalf("%s: %v", query, err)
	}
	return n
}

// ExpireOAuthStates moves the expiry of every pending social sign-in
// state into the past, as if its user had taken too long at the provider.
func ExpireOAuthStates(tb testing.TB, db *store.DB) {
	tb.Helper()
	Exec(tb, db, "UPDATE oauth_states SET expires_at = ?", time.Now().UTC().Add(-time.Second))
}

// MarkEmailVerified marks the email of the accounts with that address
// verified, as following the verification mail would.
func MarkEmailVerified(tb testing.TB, db *store.DB, email string) {
	tb.Helper()
	if Exec(tb, db, "UPDATE users SET email_verified = ? WHERE email = ?", true, email) == 0 {
		tb.Fatalf("mark %s verified: no such account", email)
	}
}

// CountMail counts the messages of template to the address in the outbox.
func CountMail(tb testing.TB, db *store.DB, to, template string) int {
	tb.Helper()
	return Count(tb, db, "SELECT count(*) FROM mail_outbox WHERE recipient = ? AND template = ?", to, template)
}

// listening selects the PostgreSQL backends of this database that
// LISTEN for events, by the name the listener gives its connection (its
// query column says SELECT 1 once it has probed a quiet connection).
const listening = "FROM pg_stat_activity WHERE datname = current_database() AND application_name = '" +
	eventspg.ApplicationName + "'"

// Listeners counts the connections that LISTEN on a PostgreSQL database.
func Listeners(tb testing.TB, db *store.DB) int {
	tb.Helper()
	return Count(tb, db, "SELECT count(*) "+listening)
}

// TerminateListeners ends, on the server, every connection that LISTENs
// on a PostgreSQL database, and returns how many it ended.
func TerminateListeners(tb testing.TB, db *store.DB) int {
	tb.Helper()
	return Count(tb, db, "SELECT count(pg_terminate_backend(pid)) "+listening)
}
