package store

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"

	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/migrations"
)

// Bookkeeping tables of the migrator. goose records applied versions;
// migration_checksums records the SHA-256 of each applied file so that
// `migrate validate` notices a file edited after it ran.
const (
	versionTable  = "goose_db_version"
	checksumTable = "migration_checksums"
)

// Migration is one migration file and its state in the database.
type Migration struct {
	Version   int64      `json:"version"`
	Name      string     `json:"name"`
	File      string     `json:"file"`
	Applied   bool       `json:"applied"`
	AppliedAt *time.Time `json:"appliedAt,omitempty"`
}

// Migrator applies the embedded goose migrations of the database's dialect.
// bun stays the query layer; goose only runs these files. Up, Down and Redo
// hold the migration lock (a PostgreSQL session advisory lock, or an OS
// lock on the SQLite file), which ends with the process that holds it.
type Migrator struct {
	db       *DB
	provider *goose.Provider
	versions database.Store
	fsys     fs.FS
	files    map[int64]string
	locker   *migrationLocker
	// LockTimeout bounds how long Up, Down and Redo wait for the lock.
	LockTimeout time.Duration
	// OnWait, when set, is told once who holds the lock this process waits for.
	OnWait func(holder string)
}

// Migrator returns the migrator for db's dialect.
func (db *DB) Migrator() (*Migrator, error) {
	fsys, err := migrations.FS(db.dialect)
	if err != nil {
		return nil, err
	}
	dialect := database.DialectSQLite3
	if db.dialect == Postgres {
		dialect = database.DialectPostgres
	}
	versions, err := database.NewStore(dialect, versionTable)
	if err != nil {
		return nil, err
	}
	m := &Migrator{db: db, versions: versions, fsys: fsys, LockTimeout: 2 * time.Minute}
	m.locker = &migrationLocker{m: m}
	m.provider, err = goose.NewProvider("", db.bun.DB, fsys,
		goose.WithStore(versions), goose.WithSessionLocker(m.locker), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return nil, fmt.Errorf("load migrations: %w", err)
	}
	m.files = make(map[int64]string)
	for _, src := range m.provider.ListSources() {
		m.files[src.Version] = filepath.Base(src.Path)
	}
	return m, nil
}

// Status lists every migration file with its state, oldest first.
func (m *Migrator) Status(ctx context.Context) ([]Migration, error) {
	if err := m.adoptOnce(ctx); err != nil {
		return nil, err
	}
	st, err := m.provider.Status(ctx)
	if err != nil {
		return nil, mapError(fmt.Errorf("read migration status: %w", err))
	}
	out := make([]Migration, 0, len(st))
	for _, s := range st {
		mg := m.migration(s.Source.Version)
		if s.State == goose.StateApplied {
			mg.Applied = true
			t := s.AppliedAt.UTC()
			mg.AppliedAt = &t
		}
		out = append(out, mg)
	}
	return out, nil
}

func (m *Migrator) migration(version int64) Migration {
	file := m.files[version]
	name := strings.TrimSuffix(file, ".sql")
	if _, after, ok := strings.Cut(name, "_"); ok {
		name = after
	}
	return Migration{Version: version, Name: name, File: file}
}

// Pending returns the migrations not yet applied, oldest first.
func (m *Migrator) Pending(ctx context.Context) ([]Migration, error) {
	st, err := m.Status(ctx)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(st, func(s Migration) bool { return s.Applied }), nil
}

// Applied returns the applied migrations, newest first: the order in which
// Down would undo them.
func (m *Migrator) Applied(ctx context.Context) ([]Migration, error) {
	st, err := m.Status(ctx)
	if err != nil {
		return nil, err
	}
	st = slices.DeleteFunc(st, func(s Migration) bool { return !s.Applied })
	slices.Reverse(st)
	return st, nil
}

// Up applies every pending migration, oldest first, each in its own
// transaction, and returns those it applied. Concurrent callers (two deploy
// jobs) serialise on the lock; the second finds nothing left to apply.
func (m *Migrator) Up(ctx context.Context) ([]Migration, error) {
	if err := m.adoptOnce(ctx); err != nil {
		return nil, err
	}
	res, err := m.provider.Up(ctx)
	var pe *goose.PartialError
	if errors.As(err, &pe) {
		res = pe.Applied
	}
	return m.results(res), m.stepError("apply", err)
}

// StepError says which migration failed and what had been done before it.
type StepError struct {
	Failed Migration
	Err    error
}

func (e *StepError) Error() string {
	return fmt.Sprintf("migration %d (%s) failed: %v", e.Failed.Version, e.Failed.File, e.Err)
}

func (e *StepError) Unwrap() error { return e.Err }

func (m *Migrator) stepError(verb string, err error) error {
	if err == nil {
		return nil
	}
	var pe *goose.PartialError
	if errors.As(err, &pe) && pe.Failed != nil {
		return &StepError{Failed: m.migration(pe.Failed.Source.Version), Err: mapError(pe.Err)}
	}
	if _, ok := platform.As(err); ok {
		return err
	}
	return mapError(fmt.Errorf("%s migrations: %w", verb, err))
}

func (m *Migrator) results(res []*goose.MigrationResult) []Migration {
	out := make([]Migration, 0, len(res))
	for _, r := range res {
		if r.Error == nil {
			out = append(out, m.migration(r.Source.Version))
		}
	}
	return out
}

// DownPlan returns the applied migrations a rollback would undo, in the
// order it undoes them (newest first): the last steps of them, or every one
// newer than version to when to is not negative.
func (m *Migrator) DownPlan(ctx context.Context, steps int, to int64) ([]Migration, error) {
	applied, err := m.Applied(ctx)
	if err != nil {
		return nil, err
	}
	if to >= 0 {
		if _, known := m.files[to]; !known && to != 0 {
			return nil, platform.Errorf(platform.KindInvalid, "UNKNOWN_MIGRATION", "no migration has version %d", to)
		}
		i := slices.IndexFunc(applied, func(mg Migration) bool { return mg.Version <= to })
		if i < 0 {
			i = len(applied)
		}
		return applied[:i], nil
	}
	return applied[:min(steps, len(applied))], nil
}

// Down undoes the planned migrations one at a time in the order given and
// stops at the first failure. It returns those it rolled back; on failure
// the error is a *StepError and the rest of plan was not touched.
func (m *Migrator) Down(ctx context.Context, plan []Migration) ([]Migration, error) {
	var done []Migration
	for _, mg := range plan {
		if _, err := m.provider.ApplyVersion(ctx, mg.Version, false); err != nil {
			return done, m.versionError(mg, err)
		}
		done = append(done, mg)
	}
	return done, nil
}

// Redo rolls back the newest applied migration and applies it again. It
// reports whether the rollback happened, so that a failed re-apply is not
// mistaken for nothing done.
func (m *Migrator) Redo(ctx context.Context, mg Migration) (rolledBack bool, err error) {
	if _, err := m.provider.ApplyVersion(ctx, mg.Version, false); err != nil {
		return false, m.versionError(mg, err)
	}
	if _, err := m.provider.ApplyVersion(ctx, mg.Version, true); err != nil {
		return true, m.versionError(mg, err)
	}
	return true, nil
}

func (m *Migrator) versionError(mg Migration, err error) error {
	if _, ok := platform.As(err); ok {
		return err
	}
	var pe *goose.PartialError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return &StepError{Failed: mg, Err: mapError(err)}
}

// checksum is the SHA-256 of a migration file as embedded in this binary.
func (m *Migrator) checksum(version int64) (string, error) {
	b, err := fs.ReadFile(m.fsys, m.files[version])
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

var migrationName = regexp.MustCompile(`^[a-z0-9_]+$`)

// migrationTemplate is a new migration: goose splits each section into
// statements at the semicolons that end lines.
const migrationTemplate = `-- +goose Up
-- %[1]s (%[2]s): write the change here.

-- +goose Down
-- %[1]s (%[2]s): undo the change here.
`

// CreateMigration writes an empty goose migration named NAME for both
// dialects under dir (the repository's migrations folder) and returns the
// paths. The timestamp prefix is the version and orders migrations.
func CreateMigration(dir, name string, now time.Time) ([]string, error) {
	if !migrationName.MatchString(name) {
		return nil, fmt.Errorf("migration name %q: use lower-case letters, digits and underscores", name)
	}
	base := now.UTC().Format("20060102150405") + "_" + name + ".sql"
	var paths []string
	for _, dialect := range []string{Postgres, SQLite} {
		d := filepath.Join(dir, dialect)
		if _, err := os.Stat(d); err != nil {
			return nil, fmt.Errorf("migrations folder: %w (run from the repository root or pass --dir)", err)
		}
		p := filepath.Join(d, base)
		if err := os.WriteFile(p, []byte(fmt.Sprintf(migrationTemplate, name, dialect)), 0o644); err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// Mismatch is one way the database's history and this binary's migration
// files disagree; Reason says which.
type Mismatch struct {
	Version int64  `json:"version"`
	File    string `json:"file,omitempty"`
	Reason  string `json:"problem"`
}

// Validate compares the applied history with the embedded files: every
// applied version has its file, unchanged since it was applied (by
// SHA-256), and no pending file is older than an applied one (goose would
// refuse to apply it). It changes nothing, except adopting a bun history.
func (m *Migrator) Validate(ctx context.Context) ([]Mismatch, error) {
	if err := m.adoptOnce(ctx); err != nil {
		return nil, err
	}
	db := m.db.bun.DB
	exists, err := m.tableExists(ctx, db, versionTable)
	if err != nil || !exists {
		return nil, err
	}
	history, err := m.versions.ListMigrations(ctx, db)
	if err != nil {
		return nil, mapError(err)
	}
	sums, err := m.recordedChecksums(ctx, db)
	if err != nil {
		return nil, err
	}
	var problems []Mismatch
	applied := make(map[int64]bool)
	var newest int64
	for _, h := range history {
		if !h.IsApplied || h.Version == 0 {
			continue
		}
		applied[h.Version] = true
		newest = max(newest, h.Version)
		problems = append(problems, m.checkApplied(h.Version, sums)...)
	}
	for _, src := range m.provider.ListSources() {
		if !applied[src.Version] && src.Version < newest {
			problems = append(problems, Mismatch{Version: src.Version, File: m.files[src.Version],
				Reason: fmt.Sprintf("pending but older than applied version %d; it would not be applied", newest)})
		}
	}
	slices.SortFunc(problems, func(a, b Mismatch) int { return cmp.Compare(a.Version, b.Version) })
	return problems, nil
}

func (m *Migrator) checkApplied(version int64, sums map[int64]string) []Mismatch {
	file, ok := m.files[version]
	if !ok {
		return []Mismatch{{Version: version, Reason: "applied in the database, but this binary has no migration file for it"}}
	}
	recorded, ok := sums[version]
	if !ok {
		return nil // applied before checksums were kept; recorded by the next migrate up
	}
	sum, err := m.checksum(version)
	if err != nil {
		return []Mismatch{{Version: version, File: file, Reason: "cannot read the file: " + err.Error()}}
	}
	if sum != recorded {
		return []Mismatch{{Version: version, File: file,
			Reason: "changed after it was applied (sha256 " + recorded[:12] + "… when applied, " + sum[:12] + "… now)"}}
	}
	return nil
}
