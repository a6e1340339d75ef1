package matchmaking

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/towerdefence/platformctl/internal/gamemap"
)

// switchableSeeds is a SeedSource whose answer a test changes, as live
// operations will through the database.
type switchableSeeds struct {
	short, long atomic.Uint64
	calls       atomic.Int64
	err         error
}

func (s *switchableSeeds) MapSeeds(context.Context) (uint64, uint64, error) {
	s.calls.Add(1)
	return s.short.Load(), s.long.Load(), s.err
}

func TestPresets(t *testing.T) {
	want := []string{"casual-short", "casual-long", "ranked-short", "ranked-long", "custom-hosted"}
	qs := Presets()
	if len(qs) != len(want) {
		t.Fatalf("%d presets", len(qs))
	}
	for i, q := range qs {
		if q.ID != want[i] || q.Name == "" || !q.MapSize.Valid() || q.TeamSize < 1 || q.PartySize.Min < 1 || q.PartySize.Max < q.PartySize.Min {
			t.Errorf("preset %d: %+v", i, q)
		}
		if (q.Mode == ModeRanked) != q.Rated || (q.Mode != ModeCasual && q.Mode != ModeRanked && q.Mode != ModeCustom) {
			t.Errorf("preset %s: mode %q rated %v", q.ID, q.Mode, q.Rated)
		}
	}
}

func TestQueuesFollowSeedsAndCache(t *testing.T) {
	ctx := t.Context()
	seeds := &switchableSeeds{}
	seeds.short.Store(5)
	seeds.long.Store(6)
	svc := New(seeds)

	a, err := svc.Queues(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var r Response
	if err := json.Unmarshal(a.JSON, &r); err != nil {
		t.Fatal(err)
	}
	if r.Maps.Short.Layout.Seed != 5 || r.Maps.Long.Layout.Seed != 6 || r.Maps.Short.Layout.Size != gamemap.Short ||
		r.Maps.Long.Layout.Size != gamemap.Long || !r.Maps.Short.Analysis.Valid || !r.Maps.Long.Analysis.Valid || len(r.Queues) != 5 {
		t.Fatalf("response: %+v", r.Maps)
	}
	if want, _ := json.Marshal(gamemap.Generate(gamemap.Long, 6)); !bytes.Contains(a.JSON, want) {
		t.Error("the long layout in the body is not Generate(long, 6)")
	}

	b, _ := svc.Queues(ctx)
	if b != a {
		t.Error("same seeds: the response was rebuilt")
	}

	seeds.long.Store(7)
	c, _ := svc.Queues(ctx)
	if c == a || c.LongSeed != 7 || c.ETag == a.ETag || bytes.Equal(c.JSON, a.JSON) {
		t.Fatal("new long seed: the response did not change")
	}
	seeds.long.Store(6)
	d, _ := svc.Queues(ctx)
	if d.ETag != a.ETag || !bytes.Equal(d.JSON, a.JSON) {
		t.Error("the same seeds give a different body or ETag")
	}
}

func TestQueuesSeedSourceError(t *testing.T) {
	boom := errors.New("database down")
	svc := New(&switchableSeeds{err: boom})
	if _, err := svc.Queues(t.Context()); !errors.Is(err, boom) {
		t.Fatalf("got %v", err)
	}
}

// TestQueuesConcurrentSeedChanges hammers the service from many goroutines
// while the seeds change; every answer must match the seeds it names.
func TestQueuesConcurrentSeedChanges(t *testing.T) {
	seeds := &switchableSeeds{}
	svc := New(seeds)
	want := map[[2]uint64]string{}
	for s := range uint64(3) {
		snap, err := build(s, s+10)
		if err != nil {
			t.Fatal(err)
		}
		want[[2]uint64{s, s + 10}] = snap.ETag
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		// A bounded number of changes: each one costs a rebuild.
		for i := uint64(0); i < 40; i++ {
			select {
			case <-stop:
				return
			default:
			}
			seeds.short.Store(i % 3)
			seeds.long.Store(i%3 + 10)
			runtime.Gosched()
		}
	}()
	var readers sync.WaitGroup
	for range 8 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for range 100 {
				snap, err := svc.Queues(t.Context())
				if err != nil {
					t.Error(err)
					return
				}
				if w, ok := want[[2]uint64{snap.ShortSeed, snap.LongSeed}]; ok && w != snap.ETag {
					t.Errorf("seeds %d/%d served with the ETag of other seeds", snap.ShortSeed, snap.LongSeed)
				}
				if snap.Response.Maps.Short.Layout.Seed != snap.ShortSeed || snap.Response.Maps.Long.Layout.Seed != snap.LongSeed {
					t.Errorf("snapshot for %d/%d holds maps %d/%d", snap.ShortSeed, snap.LongSeed,
						snap.Response.Maps.Short.Layout.Seed, snap.Response.Maps.Long.Layout.Seed)
				}
			}
		}()
	}
	readers.Wait()
	close(stop)
	wg.Wait()
}

func BenchmarkQueuesCached(b *testing.B) {
	svc := New(StaticSeeds{Short: 1, Long: 2})
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := svc.Queues(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
