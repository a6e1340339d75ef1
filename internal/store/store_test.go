package store

import (
	"path/filepath"
	"testing"

	"github.com/towerdefence/platformctl/internal/platform"
)

func TestSQLitePath(t *testing.T) {
	cases := map[string]string{
		"file:./data/platform.db":                "./data/platform.db",
		"file:/var/lib/platform/platform.db":     "/var/lib/platform/platform.db",
		"sqlite:///var/lib/platform/p.db":        "/var/lib/platform/p.db",
		"sqlite://relative/p.db":                 "relative/p.db",
		"file:data/p.db?_pragma=foreign_keys(1)": "data/p.db",
		"sqlite://with%20space.db":               "with space.db",
	}
	for in, want := range cases {
		got, err := sqlitePath(in)
		if err != nil || got != want {
			t.Errorf("sqlitePath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"file:", "sqlite://", "mysql://x"} {
		if _, err := sqlitePath(bad); err == nil {
			t.Errorf("sqlitePath(%q) accepted", bad)
		}
	}
}

func TestOpenCreatesSQLiteDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nested", "dir", "p.db")
	db, err := Open(t.Context(), "sqlite://"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if db.Dialect() != SQLite {
		t.Fatalf("dialect %q", db.Dialect())
	}
}

func TestUnreachablePostgresIsUnavailable(t *testing.T) {
	_, err := Open(t.Context(), "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=1")
	if !platform.IsKind(err, platform.KindUnavailable) {
		t.Fatalf("open on a closed port: %v, want SERVICE_UNAVAILABLE", err)
	}
}
