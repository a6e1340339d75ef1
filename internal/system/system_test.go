package system_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/store"
	"github.com/towerdefence/platformctl/internal/storetest"
	"github.com/towerdefence/platformctl/internal/system"
	"github.com/towerdefence/platformctl/internal/testwait"
)

// countedDB is the test's database, counting the pings it answers; a
// ping waits for gate when there is one.
type countedDB struct {
	*store.DB
	pings atomic.Int32
	gate  chan struct{}
}

func (c *countedDB) Ping(ctx context.Context) error {
	c.pings.Add(1)
	if c.gate != nil {
		<-c.gate
	}
	return c.DB.Ping(ctx)
}

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func newService(db system.Pinger, clk *clock) *system.Service {
	return system.New(db, system.Options{Build: platform.Build{Version: "test"}}, clk.now)
}

// A health report stands for HealthEvery: the database is pinged once
// per interval, and a database that fails shows at the next interval.
func TestHealthPingsOncePerInterval(t *testing.T) {
	db := &countedDB{DB: storetest.OpenEmpty(t)}
	clk := &clock{t: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)}
	sys := newService(db, clk)

	first := sys.Health(t.Context())
	if !first.Healthy() || db.pings.Load() != 1 {
		t.Fatalf("first report %+v after %d pings", first, db.pings.Load())
	}
	clk.advance(system.HealthEvery - time.Millisecond)
	if again := sys.Health(t.Context()); again != first || db.pings.Load() != 1 {
		t.Fatalf("within the interval: a new report (%v) or %d pings", again != first, db.pings.Load())
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	clk.advance(time.Millisecond)
	failed := sys.Health(t.Context())
	if failed.Healthy() || failed.Checks["database:responseTime"][0].Output != "database unreachable" || db.pings.Load() != 2 {
		t.Fatalf("after the interval with the database closed: %+v after %d pings", failed, db.pings.Load())
	}
}

// Callers that arrive together share one ping.
func TestHealthCallersShareAPing(t *testing.T) {
	db := &countedDB{DB: storetest.OpenEmpty(t), gate: make(chan struct{})}
	sys := newService(db, &clock{t: time.Now()})

	const callers = 32
	reports := make(chan *system.Health, callers)
	for range callers {
		go func() { reports <- sys.Health(context.Background()) }()
	}
	testwait.For(t, 10*time.Second, "the first ping", func() bool { return db.pings.Load() > 0 })
	close(db.gate)
	var first *system.Health
	for range callers {
		h := <-reports
		if !h.Healthy() {
			t.Fatalf("report %+v", h)
		}
		if first == nil {
			first = h
		}
		if h != first {
			t.Fatal("callers got different reports")
		}
	}
	if n := db.pings.Load(); n != 1 {
		t.Fatalf("%d callers pinged %d times, want once", callers, n)
	}
}
