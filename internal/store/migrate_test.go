package store_test

import (
	"errors"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/towerdefence/platformctl/internal/store"
	"github.com/towerdefence/platformctl/internal/storetest"
	"github.com/towerdefence/platformctl/migrations"
)

func migrationFiles(t *testing.T, dialect string) []string {
	t.Helper()
	fsys, err := migrations.FS(dialect)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := fs.Glob(fsys, "*")
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

func TestDialectMigrationsInStep(t *testing.T) {
	pg, lite := migrationFiles(t, store.Postgres), migrationFiles(t, store.SQLite)
	if len(pg) == 0 {
		t.Fatal("no migrations found")
	}
	if !slices.Equal(pg, lite) {
		t.Fatalf("postgres and sqlite migrations differ:\npostgres: %v\nsqlite:   %v", pg, lite)
	}
	for _, dialect := range []string{store.Postgres, store.SQLite} {
		fsys, _ := migrations.FS(dialect)
		for _, n := range pg {
			b, err := fs.ReadFile(fsys, n)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(n, ".sql") || strings.Contains(n, ".tx.") {
				t.Errorf("%s/%s: old file format; convert it with scripts/convert-migrations.sh", dialect, n)
			}
			if !strings.Contains(string(b), "-- +goose Up") || !strings.Contains(string(b), "-- +goose Down") {
				t.Errorf("%s/%s: needs both -- +goose Up and -- +goose Down sections", dialect, n)
			}
		}
	}
}

func versions(ms []store.Migration) []int64 {
	out := make([]int64, len(ms))
	for i, m := range ms {
		out[i] = m.Version
	}
	return out
}

func TestMigrateUpDownRedoStatus(t *testing.T) {
	ctx := t.Context()
	db := storetest.OpenEmpty(t)
	m, err := db.Migrator()
	if err != nil {
		t.Fatal(err)
	}
	pending, err := m.Pending(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != len(migrationFiles(t, db.Dialect())) {
		t.Fatalf("fresh database reports %d pending migrations, want every file", len(pending))
	}
	applied, err := m.Up(ctx)
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	if !slices.Equal(versions(applied), versions(pending)) {
		t.Fatalf("applied %v, want %v", versions(applied), versions(pending))
	}
	if again, err := m.Up(ctx); err != nil || len(again) != 0 {
		t.Fatalf("second up applied %v (err %v), want nothing", again, err)
	}
	if problems, err := m.Validate(ctx); err != nil || len(problems) != 0 {
		t.Fatalf("validate after up: %v %v", problems, err)
	}
	plan, err := m.DownPlan(ctx, 2, -1)
	if err != nil {
		t.Fatal(err)
	}
	n := len(applied)
	if want := []int64{applied[n-1].Version, applied[n-2].Version}; !slices.Equal(versions(plan), want) {
		t.Fatalf("plan for two steps %v, want newest first %v", versions(plan), want)
	}
	rolled, err := m.Down(ctx, plan)
	if err != nil || !slices.Equal(versions(rolled), versions(plan)) {
		t.Fatalf("down rolled back %v (err %v), want %v", versions(rolled), err, versions(plan))
	}
	if p, _ := m.Pending(ctx); !slices.Equal(versions(p), versions(applied[n-2:])) {
		t.Fatalf("after down pending %v, want %v", versions(p), versions(applied[n-2:]))
	}
	if _, err := m.Up(ctx); err != nil {
		t.Fatalf("up after down: %v", err)
	}
	if _, err := m.Redo(ctx, applied[n-1]); err != nil {
		t.Fatalf("redo: %v", err)
	}
	all, err := m.DownPlan(ctx, 0, 0)
	if err != nil || len(all) != n {
		t.Fatalf("plan down to 0: %d migrations (err %v), want %d", len(all), err, n)
	}
	if _, err := m.Down(ctx, all); err != nil {
		t.Fatalf("down to 0: %v", err)
	}
	// Up again proves the down migrations really removed everything.
	if again, err := m.Up(ctx); err != nil || len(again) != n {
		t.Fatalf("up after full down applied %d (err %v), want %d", len(again), err, n)
	}
}

// Two deploy jobs running `migrate up` at once: each migration is applied
// exactly once and neither job fails.
func TestConcurrentMigrateUp(t *testing.T) {
	ctx := t.Context()
	url := storetest.URL(t)
	const jobs = 4
	var wg sync.WaitGroup
	results := make([][]store.Migration, jobs)
	errs := make([]error, jobs)
	for i := range jobs {
		wg.Go(func() {
			db, err := store.Open(ctx, url)
			if err != nil {
				errs[i] = err
				return
			}
			defer db.Close()
			m, err := db.Migrator()
			if err != nil {
				errs[i] = err
				return
			}
			results[i], errs[i] = m.Up(ctx)
		})
	}
	wg.Wait()
	total := 0
	for i := range jobs {
		if errs[i] != nil {
			t.Fatalf("job %d: %v", i, errs[i])
		}
		total += len(results[i])
	}
	if want := len(migrationFiles(t, store.SQLite)); total != want {
		t.Fatalf("jobs applied %d migrations in total, want %d", total, want)
	}
}

func TestOpenExistingRefusesToCreate(t *testing.T) {
	dir := t.TempDir() + "/missing"
	_, err := store.OpenExisting(t.Context(), "file:"+dir+"/platform.db")
	var missing *store.MissingDatabaseError
	if !errors.As(err, &missing) {
		t.Fatalf("OpenExisting on a missing file: %v, want MissingDatabaseError", err)
	}
	if _, statErr := os.Stat(dir); !errors.Is(statErr, os.ErrNotExist) {
		t.Fatalf("OpenExisting created the directory %s (stat: %v)", dir, statErr)
	}
}
