package player_test

import (
	"context"
	"testing"
	"time"

	"github.com/towerdefence/platformctl/internal/player"
	"github.com/towerdefence/platformctl/internal/playertest"
)

// headDeadlines is the real store, noting the deadline each catalog head
// read had.
type headDeadlines struct {
	player.Store
	left []time.Duration // -1: none
}

func (s *headDeadlines) CatalogHead(ctx context.Context) (*player.CatalogHead, error) {
	left := time.Duration(-1)
	if d, ok := ctx.Deadline(); ok {
		left = time.Until(d)
	}
	s.left = append(s.left, left)
	return s.Store.CatalogHead(ctx)
}

// TestCatalogForClientsBoundsItsReads: the catalog route has no request
// deadline, so CatalogForClients gives its database reads ReadTimeout; a
// caller's own deadline is left as it is.
func TestCatalogForClientsBoundsItsReads(t *testing.T) {
	env := playertest.New(t, playertest.Options{})
	spy := &headDeadlines{Store: env.DB.Player()}
	players := player.New(player.Deps{Store: spy, LiveOps: env.LiveOps}, playertest.Queues,
		player.Options{ReadTimeout: time.Minute}, env.Clock.Now) // no refresh: every call reads
	if _, err := players.CatalogForClients(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if _, err := players.CatalogForClients(ctx); err != nil {
		t.Fatal(err)
	}
	if len(spy.left) != 2 || spy.left[0] <= 50*time.Second || spy.left[0] > time.Minute || spy.left[1] <= 59*time.Minute {
		t.Fatalf("head reads had %v left, want about a minute, then the caller's hour", spy.left)
	}
}
