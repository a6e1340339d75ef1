package store_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/uptrace/bun/migrate"

	"github.com/towerdefence/platformctl/internal/store"
	"github.com/towerdefence/platformctl/internal/storetest"
)

// A database migrated by bun's migrator (the previous release) is adopted
// once: its history moves into goose's table, nothing is applied twice,
// and migrations bun had not applied yet are applied.
func TestAdoptBunHistory(t *testing.T) {
	ctx := t.Context()
	db := storetest.OpenEmpty(t)
	m, err := db.Migrator()
	if err != nil {
		t.Fatal(err)
	}
	all, err := m.Up(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Turn the schema into what the previous release left: every table but
	// the newest two migrations', and bun's bookkeeping instead of goose's.
	newest := all[len(all)-2:]
	if _, err := m.Down(ctx, []store.Migration{newest[1], newest[0]}); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"goose_db_version", "migration_checksums"} {
		if _, err := db.Bun().ExecContext(ctx, "DROP TABLE "+table); err != nil {
			t.Fatal(err)
		}
	}
	bunMigrator := migrate.NewMigrator(db.Bun(), migrate.NewMigrations())
	if err := bunMigrator.Init(ctx); err != nil {
		t.Fatal(err)
	}
	for i, mg := range all[:len(all)-2] {
		_, err := db.Bun().NewInsert().Model(&migrate.Migration{
			Name: strings.SplitN(mg.File, "_", 2)[0], Comment: mg.Name, GroupID: int64(1 + i/4),
		}).ModelTableExpr("bun_migrations").Exec(ctx)
		if err != nil {
			t.Fatal(err)
		}
	}

	m, err = db.Migrator()
	if err != nil {
		t.Fatal(err)
	}
	pending, err := m.Pending(ctx)
	if err != nil {
		t.Fatalf("status of a bun-migrated database: %v", err)
	}
	if !slices.Equal(versions(pending), versions(newest)) {
		t.Fatalf("after adoption pending %v, want only %v", versions(pending), versions(newest))
	}
	applied, err := m.Up(ctx)
	if err != nil || !slices.Equal(versions(applied), versions(newest)) {
		t.Fatalf("up after adoption applied %v (err %v), want %v", versions(applied), err, versions(newest))
	}
	if problems, err := m.Validate(ctx); err != nil || len(problems) != 0 {
		t.Fatalf("validate after adoption: %v %v", problems, err)
	}
	var kept int
	if err := db.Bun().NewSelect().TableExpr("bun_migrations_adopted").ColumnExpr("count(*)").Scan(ctx, &kept); err != nil {
		t.Fatalf("bun's history is not kept as bun_migrations_adopted: %v", err)
	}
	if kept != len(all)-2 {
		t.Fatalf("bun_migrations_adopted has %d rows, want %d", kept, len(all)-2)
	}
}
