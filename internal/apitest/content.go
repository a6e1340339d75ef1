package apitest

import (
	"testing"

	"github.com/towerdefence/platformctl/fixtures"
	"github.com/towerdefence/platformctl/internal/seed"
)

// NewWithContent starts a server with the embedded content and live-ops
// defaults published, as `seed fixtures` would, but without the
// development world: tests create their own players.
func NewWithContent(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	srv := New(tb, opts...)
	set, ps := seed.Load(fixtures.FS())
	if len(ps) > 0 {
		tb.Fatal(ps)
	}
	if _, err := srv.App.Seeder.Seed(tb.Context(), set, seed.Options{}); err != nil {
		tb.Fatal(err)
	}
	return srv
}
