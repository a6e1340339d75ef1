package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/uptrace/bun/migrate"

	"github.com/towerdefence/platformctl/migrations"
)

// MigrationStatus is one migration and whether it has been applied.
type MigrationStatus struct {
	Name      string     `json:"name"`
	Comment   string     `json:"comment"`
	Applied   bool       `json:"applied"`
	GroupID   int64      `json:"groupId,omitempty"`
	AppliedAt *time.Time `json:"appliedAt,omitempty"`
}

// Migrator applies the embedded migrations of the database's dialect with
// bun's migrator and its lock table.
type Migrator struct {
	db *DB
	m  *migrate.Migrator
	// LockTimeout bounds how long Up and Down wait for another process's lock.
	LockTimeout time.Duration
}

// Migrator returns the migrator for db's dialect.
func (db *DB) Migrator() (*Migrator, error) {
	fsys, err := migrations.FS(db.dialect)
	if err != nil {
		return nil, err
	}
	ms := migrate.NewMigrations()
	if err := ms.Discover(fsys); err != nil {
		return nil, fmt.Errorf("discover migrations: %w", err)
	}
	return &Migrator{
		db:          db,
		m:           migrate.NewMigrator(db.bun, ms, migrate.WithMarkAppliedOnSuccess(true)),
		LockTimeout: 2 * time.Minute,
	}, nil
}

// Status lists every known migration with its state, oldest first.
func (m *Migrator) Status(ctx context.Context) ([]MigrationStatus, error) {
	if err := m.init(ctx); err != nil {
		return nil, err
	}
	ms, err := m.m.MigrationsWithStatus(ctx)
	if err != nil {
		return nil, mapError(fmt.Errorf("read migration status: %w", err))
	}
	out := make([]MigrationStatus, 0, len(ms))
	for _, mg := range ms {
		s := MigrationStatus{Name: mg.Name, Comment: mg.Comment, Applied: mg.IsApplied(), GroupID: mg.GroupID}
		if s.Applied {
			t := mg.MigratedAt.UTC()
			s.AppliedAt = &t
		}
		out = append(out, s)
	}
	return out, nil
}

// Pending returns the names of migrations not yet applied.
func (m *Migrator) Pending(ctx context.Context) ([]string, error) {
	st, err := m.Status(ctx)
	if err != nil {
		return nil, err
	}
	var pending []string
	for _, s := range st {
		if !s.Applied {
			pending = append(pending, s.Name)
		}
	}
	return pending, nil
}

// Up applies every pending migration as one group and returns their names.
// Concurrent callers (two deploy jobs) serialise on the lock; the second
// finds nothing left to apply.
func (m *Migrator) Up(ctx context.Context) ([]string, error) {
	var applied []string
	err := m.locked(ctx, func() error {
		group, err := m.m.Migrate(ctx)
		for _, mg := range group.Migrations {
			applied = append(applied, mg.Name)
		}
		if err != nil && len(applied) > 0 {
			applied = applied[:len(applied)-1] // the last one failed and was not marked
		}
		return err
	})
	return applied, err
}

// Down rolls back the most recently applied group and returns its names.
func (m *Migrator) Down(ctx context.Context) ([]string, error) {
	var rolled []string
	err := m.locked(ctx, func() error {
		group, err := m.m.Rollback(ctx)
		for _, mg := range group.Migrations {
			rolled = append(rolled, mg.Name)
		}
		return err
	})
	return rolled, err
}

// Unlock releases a lock left behind by a migration process that died.
func (m *Migrator) Unlock(ctx context.Context) error {
	if err := m.init(ctx); err != nil {
		return err
	}
	return mapError(m.m.Unlock(ctx))
}

// ErrLocked is returned when another migration holds the lock for longer
// than the lock timeout.
var ErrLocked = errors.New("another migration holds the lock; if none is running, release it with `platformctl migrate unlock`")

func (m *Migrator) locked(ctx context.Context, fn func() error) error {
	if err := m.init(ctx); err != nil {
		return err
	}
	deadline := time.Now().Add(m.LockTimeout)
	for {
		err := m.m.Lock(ctx)
		if err == nil {
			break
		}
		if isConnectionError(err) {
			return mapError(err)
		}
		if time.Now().After(deadline) {
			return ErrLocked
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	// Unlock with a fresh context: a cancelled caller must not leave the lock behind.
	defer m.m.Unlock(context.WithoutCancel(ctx)) //nolint:errcheck // best effort; Unlock exists for the rare leftover
	return mapError(fn())
}

// init creates bun's bookkeeping tables. On PostgreSQL, CREATE TABLE IF
// NOT EXISTS is not safe against a concurrent twin, so it runs under a
// session advisory lock, which the server releases even if this process dies.
func (m *Migrator) init(ctx context.Context) error {
	if m.db.dialect == Postgres {
		unlock, err := m.advisoryLock(ctx)
		if err != nil {
			return err
		}
		defer unlock()
	}
	if err := m.m.Init(ctx); err != nil {
		return mapError(fmt.Errorf("init migration tables: %w", err))
	}
	return nil
}

// migrationLockKey is an arbitrary constant naming the advisory lock.
const migrationLockKey = 7_202_611_210_001

func (m *Migrator) advisoryLock(ctx context.Context) (unlock func(), err error) {
	lockCtx, cancel := context.WithTimeout(ctx, m.LockTimeout)
	defer cancel()
	conn, err := m.db.bun.Conn(lockCtx)
	if err != nil {
		return nil, mapError(err)
	}
	if _, err := conn.ExecContext(lockCtx, "SELECT pg_advisory_lock(?)", migrationLockKey); err != nil {
		conn.Close()
		if errors.Is(lockCtx.Err(), context.DeadlineExceeded) {
			return nil, ErrLocked
		}
		return nil, mapError(err)
	}
	return func() {
		conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock(?)", migrationLockKey) //nolint:errcheck // closing the conn releases it anyway
		conn.Close()
	}, nil
}

var migrationName = regexp.MustCompile(`^[a-z0-9_]+$`)

// CreateMigration writes empty up and down files named NAME for both
// dialects under dir (the repository's migrations folder) and returns
// their paths. The timestamp prefix orders migrations.
func CreateMigration(dir, name string, now time.Time) ([]string, error) {
	if !migrationName.MatchString(name) {
		return nil, fmt.Errorf("migration name %q: use lower-case letters, digits and underscores", name)
	}
	base := now.UTC().Format("20060102150405") + "_" + name
	var paths []string
	for _, dialect := range []string{Postgres, SQLite} {
		d := filepath.Join(dir, dialect)
		if _, err := os.Stat(d); err != nil {
			return nil, fmt.Errorf("migrations folder: %w (run from the repository root or pass --dir)", err)
		}
		for _, suffix := range []string{".tx.up.sql", ".tx.down.sql"} {
			p := filepath.Join(d, base+suffix)
			body := fmt.Sprintf("-- %s (%s)\n", name, dialect)
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				return nil, err
			}
			paths = append(paths, p)
		}
	}
	return paths, nil
}
