package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/towerdefence/platformctl/internal/store"
	"github.com/towerdefence/platformctl/internal/storetest"
	"github.com/towerdefence/platformctl/internal/testwait"
)

// A transaction whose backend is terminated (a failover, an idle-kill)
// before COMMIT committed nothing, so InTx runs it again on another
// connection instead of failing the request.
func TestInTxRetriesATransactionWhoseBackendWasTerminated(t *testing.T) {
	db := storetest.Open(t)
	if db.Dialect() != store.Postgres {
		t.Skip("backends are PostgreSQL's")
	}
	for _, next := range []string{"SELECT 1", "SELECT count(*) FROM users"} {
		attempts := 0
		err := db.InTx(t.Context(), func(ctx context.Context, tx store.Tx) error {
			attempts++
			pid, err := tx.QueryInt(ctx, "SELECT pg_backend_pid()")
			if err != nil {
				return err
			}
			if attempts == 1 {
				terminate(t, db, pid)
			}
			_, err = tx.QueryInt(ctx, next)
			return err
		})
		if err != nil || attempts != 2 {
			t.Fatalf("%s after the backend was terminated: %v after %d attempts; want success on the 2nd", next, err, attempts)
		}
	}
}

// A backend terminated while it runs a statement fails the statement as
// its rows are read, not as it is sent; the transaction is retried all
// the same.
func TestInTxRetriesATransactionTerminatedMidStatement(t *testing.T) {
	db := storetest.Open(t)
	if db.Dialect() != store.Postgres {
		t.Skip("backends are PostgreSQL's")
	}
	attempts := 0
	err := db.InTx(t.Context(), func(ctx context.Context, tx store.Tx) error {
		attempts++
		pid, err := tx.QueryInt(ctx, "SELECT pg_backend_pid()")
		if err != nil || attempts > 1 {
			return err
		}
		// Rows stream out before the statement sleeps, so the error
		// arrives as they are read.
		read := make(chan error, 1)
		go func() {
			_, err := tx.QueryInts(ctx, `SELECT g FROM generate_series(1, 5000) g,
				LATERAL (SELECT CASE WHEN g = 4000 THEN pg_sleep(30) END) s`)
			read <- err
		}()
		waitUntilSleeping(t, db, pid)
		terminate(t, db, pid)
		return <-read
	})
	if err != nil || attempts != 2 {
		t.Fatalf("terminated mid-statement: %v after %d attempts; want success on the 2nd", err, attempts)
	}
}

// waitUntilSleeping waits until backend pid runs pg_sleep.
func waitUntilSleeping(t *testing.T, db *store.DB, pid int64) {
	t.Helper()
	testwait.For(t, 10*time.Second, "the backend to sleep", func() bool {
		return backends(t, db, "pid = $1 AND wait_event = 'PgSleep'", pid) == 1
	})
}

// terminate ends the backend pid from another connection and waits until
// it is gone.
func terminate(t *testing.T, db *store.DB, pid int64) {
	t.Helper()
	if _, err := db.SQL().ExecContext(t.Context(), "SELECT pg_terminate_backend($1)", pid); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 10*time.Second, "the backend to end", func() bool {
		return backends(t, db, "pid = $1", pid) == 0
	})
}

// backends counts the rows of pg_stat_activity that match where.
func backends(t *testing.T, db *store.DB, where string, args ...any) int {
	t.Helper()
	var n int
	if err := db.SQL().QueryRowContext(t.Context(), "SELECT count(*) FROM pg_stat_activity WHERE "+where, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
