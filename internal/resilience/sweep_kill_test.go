package resilience_test

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/store"
	"github.com/towerdefence/platformctl/internal/storetest"
	"github.com/towerdefence/platformctl/internal/testwait"
)

// The kill test's data set and settings: enough expired sessions for a
// hundred batches, and a lease short enough to wait out.
const (
	killExpired = 50_000
	killLive    = 2_000
	killBatch   = 500
	killLease   = 2 * time.Second
)

// sweepLease is the expired-sessions row of job_runs.
type sweepLease struct {
	Holder     string `bun:"holder"`
	LeaseUntil int64  `bun:"lease_until"`
	Runs       int    `bun:"runs"`
	Removed    int    `bun:"removed"`
}

// A replica SIGKILLed in the middle of a sweep loses nothing and doubles
// nothing: the other replica does not touch the job while the dead one's
// lease is live, then claims it and deletes exactly what was left; no live
// session goes.
func TestReplicaKilledMidSweep(t *testing.T) {
	if os.Getenv(storetest.EnvURL) == "" {
		t.Skip("replicas share a PostgreSQL database; set " + storetest.EnvURL)
	}
	ctx := t.Context()
	dbURL := storetest.URL(t)
	env := map[string]string{
		"PLATFORM_DATABASE_URL":   dbURL,
		"PLATFORM_SWEEP_INTERVAL": "1h", // one period for the whole test: every later run is a takeover
		"PLATFORM_SWEEP_BATCH":    strconv.Itoa(killBatch),
		"PLATFORM_JOB_LEASE":      killLease.String(),
	}
	replicas := []*serveProc{startServe(t, env), startServe(t, env)}
	db, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	lease := func() sweepLease {
		t.Helper()
		var l sweepLease
		storetest.Scan(t, db, &l, `SELECT COALESCE(MAX(holder), '') AS holder, COALESCE(MAX(lease_until), 0) AS lease_until,
			COALESCE(MAX(runs), 0) AS runs, COALESCE(MAX(removed), 0) AS removed FROM job_runs WHERE name = 'expired-sessions'`)
		return l
	}
	// Both replicas start by sweeping the empty table; one runs the first
	// period, and the next is an hour away.
	var before sweepLease
	testwait.Nil(t, 30*time.Second, func() error {
		if before = lease(); before.Runs == 0 || before.LeaseUntil != 0 {
			return fmt.Errorf("the first sweep of the empty table has not ended: %+v", before)
		}
		return nil
	})
	seeded := seedSessions(t, db)
	count := func(where string) int {
		t.Helper()
		return storetest.Count(t, db, "SELECT count(*) FROM sessions WHERE "+where, seeded)
	}
	const expired, live = "expires_at <= ?", "expires_at > ?"

	// Make the job due now.
	storetest.Exec(t, db, "UPDATE job_runs SET next_run_at = 0 WHERE name = 'expired-sessions'")

	// Mid-sweep, as the database shows it: the lease claimed and held, and
	// the expired rows falling but not gone. The sweep is brief: look
	// closely.
	var held sweepLease
	testwait.Closely(t, 60*time.Second, func() error {
		held = lease()
		if held.Runs > before.Runs && held.LeaseUntil > time.Now().UnixMicro() {
			if n := count(expired); n < killExpired && n > 0 {
				return nil
			}
		}
		return fmt.Errorf("no replica seen mid-sweep: %+v, %d expired left", held, count(expired))
	})
	victim, survivor := holderOf(t, held.Holder, replicas)
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	victim.wait(10 * time.Second)
	// A statement the dead replica had sent may still finish on its backend.
	waitNoDeletes(t, db)
	left := count(expired)
	dead := lease()
	t.Logf("killed %s mid-sweep: %d of %d expired sessions left, lease until %s", held.Holder, left, killExpired,
		time.UnixMicro(dead.LeaseUntil).Format(time.RFC3339Nano))
	if left == 0 || left >= killExpired {
		t.Fatalf("%d of %d expired sessions left after the kill; the kill was not mid-sweep", left, killExpired)
	}

	// While the dead replica's lease is live, nobody claims the job and no
	// row goes: every look that ends before it lapses finds the job and the
	// rows as the kill left them.
	testwait.Nil(t, time.Until(time.UnixMicro(dead.LeaseUntil))+10*time.Second, func() error {
		l, n := lease(), count(expired)
		if time.Now().UnixMicro() >= dead.LeaseUntil {
			return nil // this look may have seen the takeover, which is due now
		}
		if l.Holder != held.Holder || l.Runs != held.Runs {
			t.Fatalf("the job changed hands before the dead holder's lease lapsed: %+v, was %+v", l, dead)
		}
		if n != left {
			t.Fatalf("%d expired sessions left while the dead holder's lease was live, was %d: someone swept", n, left)
		}
		return errors.New("the dead holder's lease is still live")
	})

	// Then the survivor claims the job and finishes it, once.
	var done sweepLease
	testwait.Nil(t, 60*time.Second, func() error {
		if done = lease(); done.Runs <= held.Runs || done.LeaseUntil != 0 {
			return fmt.Errorf("the job was not taken over and finished after the lapse: %+v", done)
		}
		return nil
	})
	if p, _ := holderOf(t, done.Holder, replicas); p != survivor {
		t.Fatalf("the job was finished by %s, want the surviving replica (pid %d)", done.Holder, survivor.cmd.Process.Pid)
	}
	if done.Runs != held.Runs+1 {
		t.Errorf("%d claims after the kill, want exactly 1 (the takeover)", done.Runs-held.Runs)
	}
	if got := done.Removed - dead.Removed; got != left {
		t.Errorf("the takeover removed %d sessions, want exactly the %d left", got, left)
	}
	if n := count(expired); n != 0 {
		t.Errorf("%d expired sessions left after the takeover finished", n)
	}
	if n := count(live); n != killLive {
		t.Errorf("%d live sessions after the sweeps, want all %d", n, killLive)
	}
}

// seedSessions stores killExpired sessions that expired before the
// returned time and killLive that expire a day or more after it.
func seedSessions(t *testing.T, db *store.DB) time.Time {
	t.Helper()
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Second)
	u := &account.User{ID: uuid.New(), Realm: account.RealmPlayer, Email: "many-sessions@example.com", Name: "Many",
		Nickname: "many", PasswordHash: "x", CreatedAt: now, UpdatedAt: now}
	if err := db.Accounts().InsertUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	const insert = `INSERT INTO sessions (id, token_hash, user_id, realm, expires_at, created_at, updated_at)
		SELECT gen_random_uuid(), sha256(convert_to(? || g, 'UTF8')), ?, 'player', ?::timestamptz + make_interval(secs => ? * g), ?::timestamptz, ?::timestamptz
		FROM generate_series(1, ?) g`
	created := now.Add(-48 * time.Hour)
	for _, s := range []struct {
		prefix string
		from   time.Time
		sign   int
		n      int
	}{{"expired-", now, -1, killExpired}, {"live-", now.Add(24 * time.Hour), 1, killLive}} {
		storetest.Exec(t, db, insert, s.prefix, u.ID, s.from, s.sign, created, created, s.n)
	}
	return now
}

// holderOf returns the replica a job_runs holder (host/pid/tag) names,
// and the other one.
func holderOf(t *testing.T, holder string, replicas []*serveProc) (named, other *serveProc) {
	t.Helper()
	parts := strings.Split(holder, "/")
	if len(parts) != 3 {
		t.Fatalf("holder %q is not host/pid/tag", holder)
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil {
		t.Fatalf("holder %q: %v", holder, err)
	}
	for i, p := range replicas {
		if p.cmd.Process.Pid == pid {
			return p, replicas[1-i]
		}
	}
	t.Fatalf("holder %q is neither replica", holder)
	return nil, nil
}

// waitNoDeletes waits until no backend is running a sweep of sessions.
func waitNoDeletes(t *testing.T, db *store.DB) {
	t.Helper()
	testwait.Nil(t, 30*time.Second, func() error {
		n := storetest.Count(t, db, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND state <> 'idle' AND query LIKE 'DELETE FROM sessions%'`)
		if n > 0 {
			return fmt.Errorf("%d sweeps of sessions still running after the kill", n)
		}
		return nil
	})
}
