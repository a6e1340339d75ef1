package store_test

import (
	"context"
	"io/fs"
	"slices"
	"sync"
	"testing"

	"github.com/towerdefence/platformctl/internal/store"
	"github.com/towerdefence/platformctl/internal/storetest"
	"github.com/towerdefence/platformctl/migrations"
)

func TestDialectMigrationsInStep(t *testing.T) {
	names := func(dialect string) []string {
		fsys, err := migrations.FS(dialect)
		if err != nil {
			t.Fatal(err)
		}
		entries, err := fs.Glob(fsys, "*.sql")
		if err != nil {
			t.Fatal(err)
		}
		return entries
	}
	pg, lite := names(store.Postgres), names(store.SQLite)
	if len(pg) == 0 {
		t.Fatal("no migrations found")
	}
	if !slices.Equal(pg, lite) {
		t.Fatalf("postgres and sqlite migrations differ:\npostgres: %v\nsqlite:   %v", pg, lite)
	}
	for _, n := range pg {
		if !slices.Contains(pg, stringsReplaceSuffix(n)) {
			t.Errorf("%s has no matching up/down file", n)
		}
	}
}

func stringsReplaceSuffix(n string) string {
	const up, down = ".up.sql", ".down.sql"
	if len(n) > len(up) && n[len(n)-len(up):] == up {
		return n[:len(n)-len(up)] + down
	}
	return n[:len(n)-len(down)] + up
}

func TestMigrateUpDownStatus(t *testing.T) {
	ctx := context.Background()
	db := storetest.OpenEmpty(t)
	m, err := db.Migrator()
	if err != nil {
		t.Fatal(err)
	}
	pending, err := m.Pending(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) == 0 {
		t.Fatal("fresh database reports no pending migrations")
	}
	applied, err := m.Up(ctx)
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	if !slices.Equal(applied, pending) {
		t.Fatalf("applied %v, want %v", applied, pending)
	}
	if again, err := m.Up(ctx); err != nil || len(again) != 0 {
		t.Fatalf("second up applied %v (err %v), want nothing", again, err)
	}
	st, err := m.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st {
		if !s.Applied || s.AppliedAt == nil {
			t.Errorf("%s not applied after up", s.Name)
		}
	}
	rolled, err := m.Down(ctx)
	if err != nil {
		t.Fatalf("down: %v", err)
	}
	if len(rolled) != len(applied) {
		t.Fatalf("down rolled back %v, want the whole group %v", rolled, applied)
	}
	if p, _ := m.Pending(ctx); len(p) != len(pending) {
		t.Fatalf("after down %d pending, want %d", len(p), len(pending))
	}
	// Up again proves the down migrations really removed everything.
	if _, err := m.Up(ctx); err != nil {
		t.Fatalf("up after down: %v", err)
	}
}

// Two deploy jobs running `migrate up` at once: each migration is applied
// exactly once and neither job fails.
func TestConcurrentMigrateUp(t *testing.T) {
	ctx := context.Background()
	url := storetest.URL(t)
	const jobs = 4
	var wg sync.WaitGroup
	results := make([][]string, jobs)
	errs := make([]error, jobs)
	for i := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
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
		}()
	}
	wg.Wait()
	total := 0
	for i := range jobs {
		if errs[i] != nil {
			t.Fatalf("job %d: %v", i, errs[i])
		}
		total += len(results[i])
	}
	fsys, _ := migrations.FS(store.SQLite)
	ups, _ := fs.Glob(fsys, "*.up.sql")
	if total != len(ups) {
		t.Fatalf("jobs applied %d migrations in total (%v), want %d", total, results, len(ups))
	}
}
