package liveops_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/towerdefence/platformctl/fixtures"
	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/gamemap"
	"github.com/towerdefence/platformctl/internal/liveops"
	"github.com/towerdefence/platformctl/internal/player"
	"github.com/towerdefence/platformctl/internal/playertest"
	"github.com/towerdefence/platformctl/internal/seed"
	"github.com/towerdefence/platformctl/internal/storetest"
)

// TestSeedingAndOperatorsTakeTurns runs fixture seeding (with changed
// live-ops defaults) while operators change map seeds. Both publish the
// next version number; without one publication lock two of them would
// pick the same number and one would fail. Afterwards every version is
// accounted for, and an operator's version is never followed by a seeded one.
func TestSeedingAndOperatorsTakeTurns(t *testing.T) {
	ctx := t.Context()
	db := storetest.Open(t)
	accounts := account.New(db.Accounts(), account.NewHasher(playertest.Cheap, account.Admission{}), time.Now)
	live := liveops.New(db.LiveOps(), liveops.Options{}, time.Now)
	players := player.New(player.Deps{Store: db.Player(), LiveOps: live}, playertest.Queues, player.Options{}, time.Now)
	seeder := seed.New(seed.Deps{Store: db.Seed(), Accounts: accounts, Players: players}, playertest.Queues, time.Now)
	set, ps := seed.Load(fixtures.FS())
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	if _, err := seeder.Seed(ctx, set, seed.Options{}); err != nil {
		t.Fatal(err)
	}
	changed := *set
	changed.LiveOps.Flags = append([]liveops.Flag(nil), set.LiveOps.Flags...)
	changed.LiveOps.Flags[0].Description += " (revised)"

	const operators, seeders = 6, 3
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	seeded := 0
	for i := range operators + seeders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if i < operators {
				_, err = live.SetSeed(ctx, fmt.Sprintf("os:op%d", i), string(gamemap.Sizes[i%2]), int64(5000+i), "")
			} else {
				var r *seed.Report
				if r, err = seeder.Seed(ctx, &changed, seed.Options{}); err == nil {
					for _, it := range r.Items {
						if it.Item == "liveops" && it.Action == seed.ActionPublished {
							mu.Lock()
							seeded++
							mu.Unlock()
						}
					}
				}
			}
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	history, err := db.LiveOps().LiveOpsHistory(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(history) != 1+operators+seeded || history[0].Version != len(history) {
		t.Fatalf("%d versions (newest %d), want 1 + %d operator + %d seeded", len(history), history[0].Version, operators, seeded)
	}
	for i := len(history) - 1; i > 0; i-- {
		if history[i].Source == liveops.SourceOperator && history[i-1].Source == liveops.SourceFixtures {
			t.Fatalf("seeding published version %d over operator version %d", history[i-1].Version, history[i].Version)
		}
	}
}
