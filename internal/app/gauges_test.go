package app_test

import (
	"sync"
	"testing"
	"time"

	"github.com/towerdefence/platformctl/fixtures"
	"github.com/towerdefence/platformctl/internal/apitest"
	"github.com/towerdefence/platformctl/internal/seed"
	"github.com/towerdefence/platformctl/internal/storetest"
)

// TestGaugesMatchRealCounts changes accounts, sessions and lobbies from
// many goroutines while the counter job runs, then runs it once more:
// the snapshot the scrape and the admin bootstraps read equals what a
// real count of the tables gives.
func TestGaugesMatchRealCounts(t *testing.T) {
	ctx := t.Context()
	srv := apitest.New(t)
	a := srv.App
	set, ps := seed.Load(fixtures.FS())
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	if _, err := a.Seeder.Seed(ctx, set, seed.Options{}); err != nil {
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			p := srv.SignUpPlayer(t)
			if i%2 == 0 {
				if res := p.Client.Do("POST", "/api/player/lobbies", map[string]any{"queue": "custom-hosted", "visibility": "public"}); res.Status != 201 {
					t.Errorf("create lobby: %d %s", res.Status, res.Body)
				}
			}
			if i%3 == 0 {
				if res := p.Client.Do("POST", "/api/auth/player/sign-out", map[string]any{}); res.Status != 200 {
					t.Errorf("sign out: %d %s", res.Status, res.Body)
				}
			}
		})
	}
	wg.Go(func() {
		for range 5 {
			if err := a.Gauges.Refresh(ctx); err != nil {
				t.Errorf("refresh during changes: %v", err)
			}
		}
	})
	wg.Wait()
	if err := a.Gauges.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := a.Gauges.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	count := func(query string, args ...any) int64 {
		t.Helper()
		return int64(storetest.Count(t, a.DB, query, args...))
	}
	now := time.Now().UTC()
	checks := []struct {
		what      string
		got, want int64
	}{
		{"players", s.Accounts.Players, count("SELECT COUNT(*) FROM users WHERE realm = 'player'")},
		{"player sessions", s.Accounts.PlayerSessions, count("SELECT COUNT(*) FROM sessions WHERE realm = 'player' AND expires_at > ?", now)},
		{"open lobbies", s.OpenLobbies, count("SELECT COUNT(*) FROM lobbies WHERE status = 'open'")},
		{"sent mail", s.Outbox["sent"] + s.Outbox["pending"] + s.Outbox["sending"] + s.Outbox["failed"] + s.Outbox["expired"],
			count("SELECT COUNT(*) FROM mail_outbox")},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: snapshot %d, real count %d", c.what, c.got, c.want)
		}
	}
	if s.OpenLobbies < 4 || s.Accounts.Players < 8 {
		t.Errorf("snapshot %+v misses the test's own changes", s)
	}
}
