package eventspg_test

import (
	"database/sql"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	_ "github.com/jackc/pgx/v5/stdlib" // the pgx database/sql driver

	"github.com/towerdefence/platformctl/internal/events"
	"github.com/towerdefence/platformctl/internal/eventspg"
	"github.com/towerdefence/platformctl/internal/storetest"
	"github.com/towerdefence/platformctl/internal/testwait"
)

// TestPostgresListenerReconnects kills the listening connection and checks
// that the transport reconnects, reports the gap, and delivers again.
func TestPostgresListenerReconnects(t *testing.T) {
	if os.Getenv(storetest.EnvURL) == "" {
		t.Skip("needs PostgreSQL: set " + storetest.EnvURL)
	}
	url := storetest.URL(t)
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	p := eventspg.New(db, url, slog.New(slog.NewTextHandler(io.Discard, nil)))
	p.Backoff = 10 * time.Millisecond
	p.Probe = 20 * time.Millisecond // quiet soon, so that it probes
	got := make(chan events.Notice, 16)
	listening := make(chan struct{}, 16)
	done := make(chan error, 1)
	go func() {
		done <- p.Run(t.Context(), func(n events.Notice) { got <- n }, func() { listening <- struct{}{} }, func() {})
	}()

	roundTrip := func(subject uuid.UUID) {
		t.Helper()
		if err := p.Publish(t.Context(), events.Notice{Kind: events.KindSession, Subject: subject, Change: "revoked"}); err != nil {
			t.Fatal(err)
		}
		select {
		case n := <-got:
			if n.Subject != subject {
				t.Fatalf("got notice for %s, want %s", n.Subject, subject)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the notice did not come back")
		}
	}
	waitListening := func() {
		t.Helper()
		select {
		case <-listening:
		case <-time.After(20 * time.Second):
			t.Fatal("the transport did not (re)connect")
		}
	}
	waitListening()
	roundTrip(uuid.New())

	// Once the quiet listener has probed its connection, its query column
	// no longer says LISTEN: the connection is found by its name.
	testwait.For(t, 20*time.Second, "the listener to probe its connection", func() bool {
		var n int
		err := db.QueryRowContext(t.Context(), "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1"+
			" AND datname = current_database() AND query = 'SELECT 1'", eventspg.ApplicationName).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n == 1
	})

	res, err := db.ExecContext(t.Context(), "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()",
		eventspg.ApplicationName)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		t.Fatalf("terminated %d listening connections (%v), want 1", n, err)
	}
	waitListening() // the gap is reported, so that streams can resync
	roundTrip(uuid.New())
}
