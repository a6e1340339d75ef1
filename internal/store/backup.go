package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/pressly/goose/v3"
	"modernc.org/sqlite"

	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/migrations"
)

// Error codes of backup and restore.
const (
	// CodeDatabaseInUse: restore found a process holding the database open.
	CodeDatabaseInUse = "DATABASE_IN_USE"
	// CodeBackupCorrupt: the backup file fails PRAGMA integrity_check or is
	// not an SQLite database of this service.
	CodeBackupCorrupt = "BACKUP_CORRUPT"
	// CodeBackupTooNew: the backup holds migrations this binary does not know.
	CodeBackupTooNew = "BACKUP_TOO_NEW"
)

// BackupInfo describes a backup file: its size and the newest migration
// applied to it.
type BackupInfo struct {
	Path    string `json:"path"`
	Bytes   int64  `json:"bytes"`
	Version int64  `json:"version"`
}

// Backup writes a consistent copy of the embedded SQLite database to path
// while other connections and processes keep writing. SQLite's online
// backup copies every page in one step, inside one read transaction, so
// the copy is the database as of one instant and holds every write
// committed before the backup began; in WAL mode that reader blocks no
// writer. (VACUUM INTO would compact the copy too, but rebuilds every
// index: several times slower on a large database.) The copy is written
// beside path and renamed into place, so path is either the old file or
// the whole backup.
func (db *DB) Backup(ctx context.Context, path string) (BackupInfo, error) {
	if db.dialect != SQLite {
		return BackupInfo{}, platform.Errorf(platform.KindInvalid, platform.CodeInvalidArgument,
			"backup copies the embedded SQLite database; back up PostgreSQL with pg_dump or pg_basebackup")
	}
	if err := checkRegularTarget(path, "--to"); err != nil {
		return BackupInfo{}, err
	}
	if sameFile(path, db.path) {
		return BackupInfo{}, platform.Errorf(platform.KindInvalid, platform.CodeInvalidArgument,
			"--to: %s is the database itself; write the backup to another file", path)
	}
	tmp, err := tempSibling(path)
	if err != nil {
		return BackupInfo{}, err
	}
	defer os.Remove(tmp) // gone already once renamed
	if err := db.copyPages(ctx, tmp); err != nil {
		return BackupInfo{}, mapError(fmt.Errorf("copy the database: %w", err))
	}
	if err := syncFile(tmp); err != nil {
		return BackupInfo{}, err
	}
	info, err := readSQLiteFile(ctx, tmp, false) // restore checks it in full
	if err != nil {
		return BackupInfo{}, err
	}
	if err := renameDurably(tmp, path); err != nil {
		return BackupInfo{}, err
	}
	info.Path = path
	return info, nil
}

// copyPages copies the database page by page into the new file to, with
// the backup API of the modernc driver, on one connection of the pool.
func (db *DB) copyPages(ctx context.Context, to string) error {
	conn, err := db.bun.DB.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(driverConn any) error {
		src, ok := driverConn.(interface {
			NewBackup(dstURI string) (*sqlite.Backup, error)
		})
		if !ok {
			return fmt.Errorf("the SQLite driver offers no backup (%T)", driverConn)
		}
		b, err := src.NewBackup(to)
		if err != nil {
			return err
		}
		// -1: every page in one step, so the copy is one snapshot; steps
		// of a few pages would start over whenever serve writes.
		_, stepErr := b.Step(-1)
		return errors.Join(stepErr, b.Finish())
	})
}

// Restore replaces the SQLite database at dbPath with the backup at from.
// It refuses while any process holds the database open, and refuses a
// backup that fails PRAGMA integrity_check or carries migrations this
// binary does not know (an older backup is fine: serve migrates it). The
// backup is copied and checked beside dbPath first and then renamed over
// it, so dbPath is never half written.
func Restore(ctx context.Context, from, dbPath string) (BackupInfo, error) {
	if err := checkRegularSource(from); err != nil {
		return BackupInfo{}, err
	}
	if err := checkRegularTarget(dbPath, "the database"); err != nil {
		return BackupInfo{}, err
	}
	if sameFile(from, dbPath) {
		return BackupInfo{}, platform.Errorf(platform.KindInvalid, platform.CodeInvalidArgument,
			"--from: %s is the database itself", from)
	}
	if err := refuseIfInUse(dbPath); err != nil {
		return BackupInfo{}, err
	}
	tmp, err := tempSibling(dbPath)
	if err != nil {
		return BackupInfo{}, err
	}
	defer os.Remove(tmp)
	if err := copyFile(from, tmp); err != nil {
		return BackupInfo{}, err
	}
	info, err := InspectBackup(ctx, tmp)
	if err != nil {
		return BackupInfo{}, err
	}
	if err := refuseIfInUse(dbPath); err != nil { // a serve may have started meanwhile
		return BackupInfo{}, err
	}
	// The old database's write-ahead log and index belong to the old file:
	// left beside the new one, SQLite would replay them into it.
	for _, side := range []string{dbPath + "-wal", dbPath + "-shm"} {
		if err := os.Remove(side); err != nil && !errors.Is(err, os.ErrNotExist) {
			return BackupInfo{}, fmt.Errorf("remove the old database's %s: %w", filepath.Base(side), err)
		}
	}
	if err := renameDurably(tmp, dbPath); err != nil {
		return BackupInfo{}, err
	}
	info.Path = dbPath
	return info, nil
}

// SQLitePath returns the file of an embedded-database URL (sqlite:// or
// file:).
func SQLitePath(rawURL string) (string, error) { return sqlitePath(rawURL) }

// InspectBackup opens the SQLite file at path on its own, runs
// PRAGMA integrity_check and reads the newest applied migration, which must
// be one this binary knows: what restore checks before it replaces anything.
func InspectBackup(ctx context.Context, path string) (BackupInfo, error) {
	return readSQLiteFile(ctx, path, true)
}

// readSQLiteFile reads the size and newest migration of the SQLite file at
// path; with check, it also runs PRAGMA integrity_check and refuses
// migrations this binary does not know.
func readSQLiteFile(ctx context.Context, path string, check bool) (BackupInfo, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return BackupInfo{}, fmt.Errorf("inspect the backup: %w", err)
	}
	sqldb, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return BackupInfo{}, fmt.Errorf("open the backup: %w", err)
	}
	defer sqldb.Close()
	conn := (&DB{dialect: SQLite}).rawOn(sqldb)
	if check {
		var verdict string
		if err := conn.one(ctx, func(row rowScanner) error { return row.Scan(&verdict) }, "PRAGMA integrity_check(1)"); err != nil {
			return BackupInfo{}, corrupt("it is not a readable SQLite database (%v)", err)
		}
		if verdict != "ok" {
			return BackupInfo{}, corrupt("PRAGMA integrity_check says %q", verdict)
		}
	}
	versions, err := appliedVersions(ctx, conn)
	if err != nil {
		return BackupInfo{}, err
	}
	known, err := knownVersions()
	if err != nil {
		return BackupInfo{}, err
	}
	info := BackupInfo{Bytes: fi.Size()}
	for _, v := range versions {
		if check && !known[v] {
			return BackupInfo{}, platform.Errorf(platform.KindUnprocessable, CodeBackupTooNew,
				"the backup has migration %d, which this platformctl does not know; restore it with the release that wrote it", v)
		}
		info.Version = max(info.Version, v)
	}
	if info.Version == 0 {
		return BackupInfo{}, corrupt("no migration was ever applied to it")
	}
	return info, nil
}

func appliedVersions(ctx context.Context, conn rawQ) ([]int64, error) {
	rows, err := conn.rows(ctx, "SELECT version_id FROM "+versionTable+" WHERE is_applied AND version_id > 0")
	if err != nil {
		return nil, corrupt("it has no migration history (%v)", err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			return nil, fmt.Errorf("read the backup's migrations: %w", err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the backup's migrations: %w", err)
	}
	return out, nil
}

// knownVersions are the versions of the SQLite migrations embedded in this
// binary, read from their file names as goose does.
func knownVersions() (map[int64]bool, error) {
	fsys, err := migrations.FS(SQLite)
	if err != nil {
		return nil, err
	}
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, err
	}
	known := make(map[int64]bool, len(entries))
	for _, e := range entries {
		if v, err := goose.NumericComponent(e.Name()); err == nil {
			known[v] = true
		}
	}
	return known, nil
}

func corrupt(format string, args ...any) error {
	return platform.Errorf(platform.KindUnprocessable, CodeBackupCorrupt, "the backup is unusable: "+format, args...)
}

// checkRegularTarget refuses a path that exists and is not a regular file
// (a directory, a device, a symbolic link), and one whose directory is
// missing.
func checkRegularTarget(path, what string) error {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if _, err := os.Stat(filepath.Dir(path)); err != nil {
			return platform.Errorf(platform.KindInvalid, platform.CodeInvalidArgument,
				"%s: the directory %s does not exist", what, filepath.Dir(path))
		}
		return nil
	case err != nil:
		return fmt.Errorf("%s: %w", what, err)
	case !fi.Mode().IsRegular():
		return platform.Errorf(platform.KindInvalid, platform.CodeInvalidArgument,
			"%s: %s is not a regular file", what, path)
	}
	return nil
}

func checkRegularSource(path string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return platform.Errorf(platform.KindNotFound, platform.CodeNotFound, "--from: %s does not exist", path)
	case err != nil:
		return fmt.Errorf("--from: %w", err)
	case !fi.Mode().IsRegular():
		return platform.Errorf(platform.KindInvalid, platform.CodeInvalidArgument, "--from: %s is not a regular file", path)
	}
	return nil
}

// sameFile reports whether a and b name one existing file.
func sameFile(a, b string) bool {
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}

// tempSibling names a file that does not exist yet in path's directory, so
// that renaming it onto path stays on one file system.
func tempSibling(path string) (string, error) {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return path + ".partial-" + hex.EncodeToString(b), nil
}

func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return fmt.Errorf("open the backup: %w", err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("create %s: %w", to, err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return fmt.Errorf("copy the backup: %w", err)
	}
	if err := dst.Sync(); err != nil {
		dst.Close()
		return fmt.Errorf("copy the backup: %w", err)
	}
	return dst.Close()
}

func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync %s: %w", path, err)
	}
	return f.Close()
}

// renameDurably renames from onto to and syncs the directory, so that after
// a crash to is either the old file or the new one.
func renameDurably(from, to string) error {
	if err := os.Rename(from, to); err != nil {
		return fmt.Errorf("move the copy into place: %w", err)
	}
	dir, err := os.Open(filepath.Dir(to))
	if err != nil {
		return err
	}
	defer dir.Close()
	if err := dir.Sync(); err != nil && !strings.Contains(err.Error(), "invalid argument") {
		return fmt.Errorf("sync %s: %w", filepath.Dir(to), err)
	}
	return nil
}
