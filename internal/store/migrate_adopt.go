package store

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"github.com/pressly/goose/v3/database"
)

// Tables of the migrator this one replaced (bun's). A database migrated by
// it is adopted once: its history is copied into goose's table and its
// table renamed, kept for the record.
const (
	bunMigrationsTable = "bun_migrations"
	bunLocksTable      = "bun_migration_locks"
	bunAdoptedTable    = "bun_migrations_adopted"
)

// The migrator works on goose's dedicated connection (or its
// transaction), before the schema exists, so its statements take the raw
// road on that handle (DB.rawOn) rather than bun's models.

func (m *Migrator) tableExists(ctx context.Context, q sqlQueryer, name string) (bool, error) {
	var exists bool
	query := "SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = ?"
	if m.db.dialect == Postgres {
		query = "SELECT to_regclass(?) IS NOT NULL"
	}
	err := m.db.rawOn(q).one(ctx, func(row rowScanner) error { return row.Scan(&exists) }, query, name)
	return exists, mapError(err)
}

// adoptOnce adopts a bun history before a command reads the status. The
// check is one cheap query; the adoption itself runs under the lock.
func (m *Migrator) adoptOnce(ctx context.Context) error {
	exists, err := m.tableExists(ctx, m.db.bun.DB, bunMigrationsTable)
	if err != nil || !exists {
		return err
	}
	conn, err := m.db.bun.DB.Conn(ctx)
	if err != nil {
		return mapError(err)
	}
	defer conn.Close()
	if err := m.locker.SessionLock(ctx, conn); err != nil {
		return err
	}
	return m.locker.SessionUnlock(context.WithoutCancel(ctx), conn)
}

// prepare runs under the lock before goose looks at its table: it creates
// the checksum table and adopts a bun history.
func (m *Migrator) prepare(ctx context.Context, conn *sql.Conn) error {
	if _, err := m.db.rawOn(conn).exec(ctx, "CREATE TABLE IF NOT EXISTS "+checksumTable+
		" (version BIGINT PRIMARY KEY, file TEXT NOT NULL, sha256 TEXT NOT NULL)"); err != nil {
		return mapError(fmt.Errorf("create %s: %w", checksumTable, err))
	}
	exists, err := m.tableExists(ctx, conn, bunMigrationsTable)
	if err != nil || !exists {
		return err
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return mapError(err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if err := m.adopt(ctx, tx); err != nil {
		return mapError(fmt.Errorf("adopt the history of bun's migrator: %w", err))
	}
	return mapError(tx.Commit())
}

// adopt copies the versions bun recorded into goose's table (created here
// when missing), then renames bun's table so that this happens once.
func (m *Migrator) adopt(ctx context.Context, tx *sql.Tx) error {
	versions, err := bunVersions(ctx, m.db.rawOn(tx))
	if err != nil {
		return err
	}
	exists, err := m.tableExists(ctx, tx, versionTable)
	if err != nil {
		return err
	}
	if !exists {
		if err := m.versions.CreateVersionTable(ctx, tx); err != nil {
			return err
		}
		versions = append([]int64{0}, versions...)
	}
	recorded, err := m.versions.ListMigrations(ctx, tx)
	if err != nil {
		return err
	}
	have := make(map[int64]bool, len(recorded))
	for _, r := range recorded {
		have[r.Version] = true
	}
	for _, v := range versions {
		if have[v] {
			continue
		}
		if err := m.versions.Insert(ctx, tx, database.InsertRequest{Version: v}); err != nil {
			return err
		}
	}
	if _, err := m.db.rawOn(tx).exec(ctx, "ALTER TABLE "+bunMigrationsTable+" RENAME TO "+bunAdoptedTable); err != nil {
		return err
	}
	_, err = m.db.rawOn(tx).exec(ctx, "DROP TABLE IF EXISTS "+bunLocksTable)
	return err
}

// bunVersions reads the applied versions from bun's table, oldest first.
// bun names a migration by the digits before the first underscore.
func bunVersions(ctx context.Context, q rawQ) ([]int64, error) {
	var versions []int64
	err := q.each(ctx, func(row rowScanner) error {
		var name string
		if err := row.Scan(&name); err != nil {
			return err
		}
		digits, _, _ := strings.Cut(name, "_")
		v, err := strconv.ParseInt(digits, 10, 64)
		if err != nil {
			return fmt.Errorf("bun migration %q has no numeric version", name)
		}
		versions = append(versions, v)
		return nil
	}, "SELECT name FROM "+bunMigrationsTable+" ORDER BY id")
	return versions, err
}

// syncChecksums runs under the lock after goose changed the history: it
// records the checksum of each newly applied file and forgets those of
// rolled-back ones.
func (m *Migrator) syncChecksums(ctx context.Context, conn *sql.Conn) error {
	exists, err := m.tableExists(ctx, conn, versionTable)
	if err != nil || !exists {
		return err
	}
	applied, err := m.versions.ListMigrations(ctx, conn)
	if err != nil {
		return mapError(err)
	}
	recorded, err := m.recordedChecksums(ctx, conn)
	if err != nil {
		return err
	}
	isApplied := make(map[int64]bool, len(applied))
	for _, a := range applied {
		isApplied[a.Version] = a.IsApplied
	}
	for v := range recorded {
		if !isApplied[v] {
			if _, err := m.db.rawOn(conn).exec(ctx, "DELETE FROM "+checksumTable+" WHERE version = ?", v); err != nil {
				return err
			}
		}
	}
	for v, ok := range isApplied {
		_, known := m.files[v]
		if _, has := recorded[v]; !ok || has || !known || v == 0 {
			continue
		}
		sum, err := m.checksum(v)
		if err != nil {
			return err
		}
		if _, err := m.db.rawOn(conn).exec(ctx, "INSERT INTO "+checksumTable+" (version, file, sha256) VALUES (?, ?, ?)",
			v, m.files[v], sum); err != nil {
			return err
		}
	}
	return nil
}

// recordedChecksums maps version to recorded SHA-256; empty when the table
// does not exist yet.
func (m *Migrator) recordedChecksums(ctx context.Context, q sqlQueryer) (map[int64]string, error) {
	sums := make(map[int64]string)
	exists, err := m.tableExists(ctx, q, checksumTable)
	if err != nil || !exists {
		return sums, err
	}
	err = m.db.rawOn(q).each(ctx, func(row rowScanner) error {
		var v int64
		var sum string
		if err := row.Scan(&v, &sum); err != nil {
			return err
		}
		sums[v] = sum
		return nil
	}, "SELECT version, sha256 FROM "+checksumTable)
	return sums, err
}
