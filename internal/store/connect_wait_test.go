package store_test

import (
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/towerdefence/platformctl/internal/netfault"
	"github.com/towerdefence/platformctl/internal/store"
	"github.com/towerdefence/platformctl/internal/storetest"
)

// A new connection keeps trying for PLATFORM_DB_CONNECT_WAIT while the
// server refuses it, as during a switchover, and the query then succeeds;
// without the wait the same query fails.
func TestConnectWaitRidesOutARefusingServer(t *testing.T) {
	if os.Getenv("PLATFORM_TEST_DATABASE_URL") == "" {
		t.Skip("connections are PostgreSQL's; set PLATFORM_TEST_DATABASE_URL")
	}
	u, err := url.Parse(storetest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := netfault.Listen(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	u.Host = proxy.Addr()
	open := func(wait time.Duration) *store.DB {
		// No idle connections: every query opens a new one.
		db, err := store.OpenPool(t.Context(), u.String(), store.Pool{MaxConns: 2, ConnectWait: wait})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	patient, hasty := open(10*time.Second), open(0)

	proxy.Set(netfault.Refuse)
	var one int
	err = hasty.SQL().QueryRowContext(t.Context(), "SELECT 1").Scan(&one)
	if err == nil {
		t.Fatal("a query with no connect wait succeeded while the server refused connections")
	}
	back := time.AfterFunc(500*time.Millisecond, func() { proxy.Set(netfault.Up) })
	defer back.Stop()
	start := time.Now()
	if err := patient.SQL().QueryRowContext(t.Context(), "SELECT 1").Scan(&one); err != nil {
		t.Fatalf("query with a connect wait: %v", err)
	}
	if waited := time.Since(start); waited < 400*time.Millisecond {
		t.Fatalf("the query answered after %s, before the server came back", waited)
	}
}
