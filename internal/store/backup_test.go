package store_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/store"
	"github.com/towerdefence/platformctl/internal/testwait"
)

// openMigratedSQLite opens a migrated SQLite database at dir/platform.db
// with a scratch table for the writers of these tests.
func openMigratedSQLite(t *testing.T, dir string) (*store.DB, string) {
	t.Helper()
	path := filepath.Join(dir, "platform.db")
	db, err := store.Open(t.Context(), "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	m, err := db.Migrator()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Up(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Bun().ExecContext(t.Context(), "CREATE TABLE backup_probe (writer INTEGER, seq INTEGER, PRIMARY KEY (writer, seq))"); err != nil {
		t.Fatal(err)
	}
	return db, path
}

// probeRows reads every (writer, seq) of the SQLite file at path, after
// checking its integrity.
func probeRows(t *testing.T, path string) map[[2]int64]bool {
	t.Helper()
	if _, err := store.InspectBackup(t.Context(), path); err != nil {
		t.Fatal(err)
	}
	conn, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rows, err := conn.Query("SELECT writer, seq FROM backup_probe")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := make(map[[2]int64]bool)
	for rows.Next() {
		var k [2]int64
		if err := rows.Scan(&k[0], &k[1]); err != nil {
			t.Fatal(err)
		}
		got[k] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestBackupHoldsEveryWriteAcknowledgedBeforeItBegan(t *testing.T) {
	dir := t.TempDir()
	db, _ := openMigratedSQLite(t, dir)
	ctx, stop := context.WithCancel(t.Context())
	const writers = 4
	var acked [writers]atomic.Int64 // the highest seq each writer saw committed
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for seq := int64(1); ctx.Err() == nil; seq++ {
				if _, err := db.Bun().ExecContext(ctx, "INSERT INTO backup_probe (writer, seq) VALUES (?, ?)", w, seq); err != nil {
					if ctx.Err() == nil {
						errs <- err
					}
					return
				}
				acked[w].Store(seq)
			}
		})
	}
	for round := range 3 {
		waitForWrites(t, &acked[0], int64(50*(round+1)))
		var before [writers]int64
		for w := range writers {
			before[w] = acked[w].Load()
		}
		to := filepath.Join(dir, "backup.db")
		info, err := db.Backup(t.Context(), to)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if info.Version == 0 || info.Bytes == 0 {
			t.Fatalf("round %d: backup info %+v", round, info)
		}
		got := probeRows(t, to)
		for w := range writers {
			for seq := int64(1); seq <= before[w]; seq++ {
				if !got[[2]int64{int64(w), seq}] {
					t.Fatalf("round %d: write (%d, %d), acknowledged before the backup began, is missing from it", round, w, seq)
				}
			}
		}
	}
	stop()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("writer: %v", err)
	}
	leftovers, err := filepath.Glob(filepath.Join(dir, "*.partial-*"))
	if err != nil || len(leftovers) > 0 {
		t.Fatalf("temporary files left behind: %v %v", leftovers, err)
	}
}

// waitForWrites waits until the writer has acknowledged n writes.
func waitForWrites(t *testing.T, acked *atomic.Int64, n int64) {
	t.Helper()
	testwait.Nil(t, 30*time.Second, func() error {
		if got := acked.Load(); got < n {
			return fmt.Errorf("the writer acknowledged %d writes, want %d", got, n)
		}
		return nil
	})
}

func TestRestoreRefusesWhileTheDatabaseIsOpen(t *testing.T) {
	dir := t.TempDir()
	db, path := openMigratedSQLite(t, dir)
	if _, err := db.Bun().ExecContext(t.Context(), "INSERT INTO backup_probe VALUES (1, 1)"); err != nil {
		t.Fatal(err)
	}
	backup := filepath.Join(dir, "backup.db")
	if _, err := db.Backup(t.Context(), backup); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Bun().ExecContext(t.Context(), "INSERT INTO backup_probe VALUES (1, 2)"); err != nil {
		t.Fatal(err)
	}
	_, err := store.Restore(t.Context(), backup, path)
	if pe, ok := platform.As(err); !ok || pe.Code != store.CodeDatabaseInUse {
		t.Fatalf("restore beside an open database: %v, want %s", err, store.CodeDatabaseInUse)
	}
	if got := probeRows(t, path); len(got) != 2 {
		t.Fatalf("the refused restore changed the database: %v", got)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	info, err := store.Restore(t.Context(), backup, path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Path != path || info.Version == 0 {
		t.Fatalf("restore info %+v", info)
	}
	if got := probeRows(t, path); len(got) != 1 || !got[[2]int64{1, 1}] {
		t.Fatalf("after restore the database holds %v, want only (1, 1)", got)
	}
}

func TestRestoreRefusesBadBackups(t *testing.T) {
	dir := t.TempDir()
	db, _ := openMigratedSQLite(t, dir)
	good := filepath.Join(dir, "good.db")
	if _, err := db.Backup(t.Context(), good); err != nil {
		t.Fatal(err)
	}
	newer := filepath.Join(dir, "newer.db")
	if _, err := db.Bun().ExecContext(t.Context(), "INSERT INTO goose_db_version (version_id, is_applied) VALUES (99991231000000, 1)"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Backup(t.Context(), newer); err != nil {
		t.Fatal(err)
	}
	db.Close()
	garbage := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(garbage, []byte("not a database, just bytes of some length"), 0o600); err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(dir, "truncated.db")
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(truncated, b[:len(b)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "platform.db")
	if err := os.WriteFile(target, b, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, from, to, code string
	}{
		{"garbage", garbage, target, store.CodeBackupCorrupt},
		{"truncated", truncated, target, store.CodeBackupCorrupt},
		{"newer schema", newer, target, store.CodeBackupTooNew},
		{"missing", filepath.Join(dir, "nope.db"), target, platform.CodeNotFound},
		{"directory as source", dir, target, platform.CodeInvalidArgument},
		{"directory as target", good, dir, platform.CodeInvalidArgument},
		{"the database itself", target, target, platform.CodeInvalidArgument},
		{"missing target directory", good, filepath.Join(dir, "no", "such.db"), platform.CodeInvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := store.Restore(t.Context(), tc.from, tc.to)
			if pe, ok := platform.As(err); !ok || pe.Code != tc.code {
				t.Fatalf("restore %s onto %s: %v, want %s", tc.from, tc.to, err, tc.code)
			}
			after, err := os.ReadFile(target)
			if err != nil || string(after) != string(b) {
				t.Fatalf("a refused restore touched the target (%v)", err)
			}
		})
	}
}

func TestBackupRefusesNonRegularTargets(t *testing.T) {
	dir := t.TempDir()
	db, path := openMigratedSQLite(t, dir)
	link := filepath.Join(dir, "link.db")
	if err := os.Symlink(filepath.Join(dir, "elsewhere.db"), link); err != nil {
		t.Fatal(err)
	}
	for _, to := range []string{dir, link, "/dev/null", filepath.Join(dir, "missing", "b.db"), path, filepath.Join(dir, ".", "platform.db")} {
		_, err := db.Backup(t.Context(), to)
		if pe, ok := platform.As(err); !ok || pe.Code != platform.CodeInvalidArgument {
			t.Fatalf("backup to %s: %v, want %s", to, err, platform.CodeInvalidArgument)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "elsewhere.db")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("backup followed the symbolic link: %v", err)
	}
}
