package config

import (
	"testing"
	"time"
)

// A multi-host URL, as serve takes for a PostgreSQL formation with a
// standby, is a PostgreSQL URL like any other.
func TestMultiHostDatabaseURL(t *testing.T) {
	const url = "postgres://platform@db1:5432,db2:5432/platform?sslmode=disable&target_session_attrs=read-write&connect_timeout=2"
	c, err := load(t, map[string]string{"PLATFORM_DATABASE_URL": url, "PLATFORM_DB_CONNECT_WAIT": "3s"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.DatabaseDialect() != "postgres" || c.DatabaseURL != url || c.DBPool.ConnectWait != 3*time.Second {
		t.Fatalf("dialect %q, URL %q, connect wait %s", c.DatabaseDialect(), c.DatabaseURL, c.DBPool.ConnectWait)
	}
	for _, bad := range []string{"-1s", "2m", "soon"} {
		if _, err := load(t, map[string]string{"PLATFORM_DB_CONNECT_WAIT": bad}, nil); err == nil {
			t.Errorf("PLATFORM_DB_CONNECT_WAIT=%s accepted", bad)
		}
	}
}
