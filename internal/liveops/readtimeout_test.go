package liveops_test

import (
	"context"
	"testing"
	"time"

	"github.com/towerdefence/platformctl/internal/liveops"
	"github.com/towerdefence/platformctl/internal/storetest"
)

// deadlineSpy is the real store, noting the deadline each head read had.
type deadlineSpy struct {
	liveops.Store
	deadlines []time.Duration // -1: none
}

func (s *deadlineSpy) LiveOpsHead(ctx context.Context) (*liveops.Head, error) {
	left := time.Duration(-1)
	if d, ok := ctx.Deadline(); ok {
		left = time.Until(d)
	}
	s.deadlines = append(s.deadlines, left)
	return s.Store.LiveOpsHead(ctx)
}

// TestMapSeedsBoundsItsReads: the queues route calls MapSeeds without a
// request deadline, so MapSeeds gives its database read ReadTimeout; a
// caller's own deadline is left as it is.
func TestMapSeedsBoundsItsReads(t *testing.T) {
	db := storetest.Open(t)
	spy := &deadlineSpy{Store: db.LiveOps()}
	live := liveops.New(spy, liveops.Options{ReadTimeout: time.Minute}, time.Now)
	if _, _, err := live.MapSeeds(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if _, _, err := live.MapSeeds(ctx); err != nil {
		t.Fatal(err)
	}
	if len(spy.deadlines) != 2 || spy.deadlines[0] <= 50*time.Second || spy.deadlines[0] > time.Minute ||
		spy.deadlines[1] <= 59*time.Minute {
		t.Fatalf("head reads had %v left, want about a minute, then the caller's hour", spy.deadlines)
	}
}
