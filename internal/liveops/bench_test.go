package liveops_test

import (
	"testing"
	"time"

	"github.com/towerdefence/platformctl/internal/liveops"
)

// The live-ops reads that run per request, on the test database
// (SQLite, or PostgreSQL with PLATFORM_TEST_DATABASE_URL):
//
//	go test -run '^$' -bench . -count 6 ./internal/liveops/

// BenchmarkMapSeeds is what the queues route pays per request to learn
// the seeds, as served: the newest version number is read from the
// database at most once a second (PLATFORM_LIVEOPS_REFRESH), the rest of
// the time the seeds come from memory.
func BenchmarkMapSeeds(b *testing.B) {
	f := publishedB(b)
	svc := liveops.New(f.db.LiveOps(), liveops.Options{SeedRefresh: time.Second}, f.clock.now)
	ctx := b.Context()
	for b.Loop() {
		if _, _, err := svc.MapSeeds(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMapSeedsUncached is the same with PLATFORM_LIVEOPS_REFRESH=0:
// one indexed query for the newest version number per request.
func BenchmarkMapSeedsUncached(b *testing.B) {
	f := publishedB(b)
	ctx := b.Context()
	for b.Loop() {
		if _, _, err := f.svc.MapSeeds(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSnapshot is GET /api/liveops/admin-bootstrap without HTTP:
// head, history and catalog queries, statuses and the ETag.
func BenchmarkSnapshot(b *testing.B) {
	f := publishedB(b)
	ctx := b.Context()
	for b.Loop() {
		if _, err := f.svc.Snapshot(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEvaluate is the live-ops part of a player's bootstrap.
func BenchmarkEvaluate(b *testing.B) {
	f := publishedB(b)
	ctx := b.Context()
	sub := liveops.Subject{PlayerID: "6f1c2a4e-3b7d-4f0a-9c55-1d2e3f405162", Nickname: "ada", CreatedAt: t0}
	for b.Loop() {
		if _, err := f.svc.Evaluate(ctx, sub); err != nil {
			b.Fatal(err)
		}
	}
}

func publishedB(b *testing.B) *fixture {
	b.Helper()
	return publishedTB(b)
}
