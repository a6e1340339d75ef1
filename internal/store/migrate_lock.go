package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/towerdefence/platformctl/internal/platform"
)

// migrationLockKey is an arbitrary constant naming the PostgreSQL advisory lock.
const migrationLockKey int64 = 7_202_611_210_001

// lockPoll is how often a waiting migrator tries the lock again.
const lockPoll = 250 * time.Millisecond

// CodeMigrationLocked is the error code of a migration that gave up
// waiting for the lock.
const CodeMigrationLocked = "MIGRATION_LOCKED"

// migrationLocker is goose's session locker. On PostgreSQL it takes a
// session advisory lock on the migration's own connection, which the
// server drops when that connection ends, so a killed job leaves nothing
// behind. On SQLite it takes an exclusive flock(2) on the database file,
// which the kernel drops when the process dies (SQLite itself uses POSIX
// record locks, which flock does not touch). Holding the lock, it adopts a
// history left by bun's migrator, and before releasing it records the
// checksums of the files applied.
type migrationLocker struct {
	m    *Migrator
	file *os.File // the SQLite lock, while held
}

// SessionLock implements goose's lock.SessionLocker.
func (l *migrationLocker) SessionLock(ctx context.Context, conn *sql.Conn) error {
	if err := l.acquire(ctx, conn); err != nil {
		return err
	}
	if err := l.m.prepare(ctx, conn); err != nil {
		l.release(context.WithoutCancel(ctx), conn) //nolint:errcheck // the prepare error is the one to report
		return err
	}
	return nil
}

// SessionUnlock implements goose's lock.SessionLocker.
func (l *migrationLocker) SessionUnlock(ctx context.Context, conn *sql.Conn) error {
	err := l.m.syncChecksums(ctx, conn)
	return errors.Join(err, l.release(ctx, conn))
}

func (l *migrationLocker) acquire(ctx context.Context, conn *sql.Conn) error {
	deadline := time.Now().Add(l.m.LockTimeout)
	told := false
	for {
		ok, err := l.try(ctx, conn)
		if err != nil || ok {
			return err
		}
		holder := l.holder(ctx, conn)
		if !told && l.m.OnWait != nil {
			l.m.OnWait(holder)
			told = true
		}
		if time.Now().After(deadline) {
			return platform.Errorf(platform.KindUnavailable, CodeMigrationLocked,
				"gave up after %s waiting for the migration lock held by %s", l.m.LockTimeout, holder)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(lockPoll):
		}
	}
}

func (l *migrationLocker) try(ctx context.Context, conn *sql.Conn) (bool, error) {
	if l.m.db.dialect == Postgres {
		// application_name lets a waiting job say who holds the lock.
		q := l.m.db.rawOn(conn)
		if _, err := q.exec(ctx, "SELECT set_config('application_name', ?, false)", lockHolderName()); err != nil {
			return false, err
		}
		var ok bool
		err := q.one(ctx, func(row rowScanner) error { return row.Scan(&ok) }, "SELECT pg_try_advisory_lock(?)", migrationLockKey)
		return ok, mapError(err)
	}
	if l.m.db.path == "" || l.m.db.path == ":memory:" {
		return true, nil // nobody else can open an in-memory database
	}
	f, err := os.Open(l.m.db.path)
	if err != nil {
		return false, fmt.Errorf("open database file to lock it: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return false, nil
		}
		return false, fmt.Errorf("lock database file: %w", err)
	}
	l.file = f
	return true, nil
}

func (l *migrationLocker) release(ctx context.Context, conn *sql.Conn) error {
	if l.m.db.dialect == Postgres {
		_, err := l.m.db.rawOn(conn).exec(ctx, "SELECT pg_advisory_unlock(?), set_config('application_name', '', false)", migrationLockKey)
		return err
	}
	if l.file == nil {
		return nil
	}
	err := l.file.Close() // closing the last descriptor drops the flock
	l.file = nil
	return err
}

// lockHolderName identifies this process to a job waiting for its lock.
func lockHolderName() string {
	host, _ := os.Hostname()
	name := fmt.Sprintf("platformctl migrate pid %d on %s", os.Getpid(), host)
	return name[:min(len(name), 63)] // PostgreSQL's limit for application_name
}

// holder describes who holds the lock, as well as can be found out.
func (l *migrationLocker) holder(ctx context.Context, conn *sql.Conn) string {
	if l.m.db.dialect == Postgres {
		var pid int
		var app, client string
		var since time.Time
		err := l.m.db.rawOn(conn).one(ctx, func(row rowScanner) error { return row.Scan(&pid, &app, &client, &since) },
			`SELECT a.pid, a.application_name, coalesce(host(a.client_addr), 'local socket'), a.backend_start
			FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
			WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
			  AND l.classid::bigint = ? AND l.objid::bigint = ?`,
			migrationLockKey>>32, migrationLockKey&0xffffffff)
		if err != nil {
			return "another session"
		}
		if app == "" {
			app = "an unnamed client"
		}
		return fmt.Sprintf("%s (server pid %d, from %s, connected %s)", app, pid, client, since.UTC().Format(time.RFC3339))
	}
	if pid := flockHolder(l.m.db.path); pid > 0 {
		return fmt.Sprintf("pid %d (%s) on this host", pid, processName(pid))
	}
	return "another process on this host"
}

// flockHolder finds the process holding a flock on path in /proc/locks
// (Linux); 0 when it cannot tell.
func flockHolder(path string) int {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0
	}
	b, err := os.ReadFile("/proc/locks")
	if err != nil {
		return 0
	}
	suffix := ":" + strconv.FormatUint(st.Ino, 10)
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		// 1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF
		if len(f) >= 6 && f[1] == "FLOCK" && strings.HasSuffix(f[5], suffix) {
			pid, _ := strconv.Atoi(f[4])
			return pid
		}
	}
	return 0
}

func processName(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(b) == 0 {
		return "unknown command"
	}
	args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	args[0] = args[0][strings.LastIndexByte(args[0], '/')+1:]
	return strings.Join(args[:min(len(args), 3)], " ")
}
