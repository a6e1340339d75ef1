package eventspg_test

import (
	"database/sql"
	"io"
	"log/slog"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/towerdefence/platformctl/internal/events"
	"github.com/towerdefence/platformctl/internal/eventspg"
	"github.com/towerdefence/platformctl/internal/netfault"
	"github.com/towerdefence/platformctl/internal/storetest"
)

// A listening connection that goes silent (a partition: no reset, no
// error) counts as lost within two probe intervals, not when TCP gives
// up on it minutes later.
func TestPostgresListenerFindsASilentPartition(t *testing.T) {
	if os.Getenv(storetest.EnvURL) == "" {
		t.Skip("needs PostgreSQL: set " + storetest.EnvURL)
	}
	dbURL := storetest.URL(t)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := netfault.Listen(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	u.Host = proxy.Addr()
	db, err := sql.Open("pgx", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	p := eventspg.New(db, u.String(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	p.Probe = 100 * time.Millisecond
	listening, lost := make(chan struct{}, 16), make(chan time.Time, 16)
	go p.Run(t.Context(), func(events.Notice) {}, func() { listening <- struct{}{} }, func() { lost <- time.Now() }) //nolint:errcheck // ends with the test

	select {
	case <-listening:
	case <-time.After(20 * time.Second):
		t.Fatal("the listener did not connect")
	}
	// Quiet but healthy: probes pass and nothing is lost.
	select {
	case at := <-lost:
		t.Fatalf("a healthy quiet listener counted as lost at %s", at)
	case <-time.After(5 * p.Probe):
	}
	proxy.Set(netfault.Blackhole)
	cut := time.Now()
	select {
	case at := <-lost:
		if took := at.Sub(cut); took > 2*p.Probe+time.Second {
			t.Fatalf("the partition was found after %s", took)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a silent listening connection was never counted as lost")
	}
}
