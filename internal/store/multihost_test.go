package store

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The statement timeout is added to a multi-host URL without losing a
// host or the read-write requirement, and pgx reads both hosts from it.
func TestStatementTimeoutKeepsEveryHost(t *testing.T) {
	got := withStatementTimeout("postgres://u@127.0.0.1:6001,127.0.0.1:6002/platform?target_session_attrs=read-write", 30*time.Second)
	if !strings.Contains(got, "127.0.0.1:6001,127.0.0.1:6002") || !strings.Contains(got, "statement_timeout=30000") {
		t.Fatalf("got %s", got)
	}
	cfg, err := pgx.ParseConfig(got)
	if err != nil {
		t.Fatal(err)
	}
	ports := []uint16{cfg.Port}
	for _, f := range cfg.Fallbacks {
		ports = append(ports, f.Port)
	}
	if !slices.Contains(ports, 6001) || !slices.Contains(ports, 6002) || cfg.ValidateConnect == nil {
		t.Fatalf("parsed ports %v, read-write check set: %v", ports, cfg.ValidateConnect != nil)
	}
}
