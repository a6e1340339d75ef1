package player_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/player"
	"github.com/towerdefence/platformctl/internal/playertest"
)

// TestMutualFirstRequestsRace has two players who never used the player
// routes ask each other at the same moment, many pairs at once: every
// request succeeds and each pair ends up friends.
func TestMutualFirstRequestsRace(t *testing.T) {
	ctx := t.Context()
	env := playertest.New(t, playertest.Options{})
	const pairs = 12
	type pair struct{ a, b uuid.UUID }
	var ps []pair
	for i := range pairs {
		ps = append(ps, pair{env.Player(t, fmt.Sprintf("mutual_a%d", i)), env.Player(t, fmt.Sprintf("mutual_b%d", i))})
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2*pairs)
	start := make(chan struct{})
	for _, p := range ps {
		for _, dir := range [][2]uuid.UUID{{p.a, p.b}, {p.b, p.a}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, err := env.Players.Act(ctx, dir[0], player.SocialActionInput{Action: player.ActionRequest, Target: dir[1].String()})
				errs <- err
			}()
		}
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("mutual first request: %v", err)
		}
	}
	for _, p := range ps {
		s, err := env.Players.Social(ctx, p.a, player.SocialQuery{})
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Friends) != 1 || s.Friends[0].Player.ID != p.b {
			t.Errorf("after mutual requests a has %+v", s.Counts)
		}
	}
}
