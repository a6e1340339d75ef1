package jobs_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/towerdefence/platformctl/internal/jobs"
	"github.com/towerdefence/platformctl/internal/store"
	"github.com/towerdefence/platformctl/internal/storetest"
	"github.com/towerdefence/platformctl/internal/testwait"
)

var quiet = slog.New(slog.DiscardHandler)

// leaseRow is a job's row in job_runs.
type leaseRow struct {
	Holder     string `bun:"holder"`
	LeaseUntil int64  `bun:"lease_until"`
	NextRunAt  int64  `bun:"next_run_at"`
	Runs       int    `bun:"runs"`
	Removed    int    `bun:"removed"`
}

func row(t *testing.T, db *store.DB, job string) leaseRow {
	t.Helper()
	var r leaseRow
	storetest.Scan(t, db, &r, "SELECT holder, lease_until, next_run_at, runs, removed FROM job_runs WHERE name = ?", job)
	return r
}

// runFor runs r until stop is closed, and waits for it to return.
func runFor(r *jobs.Runner, stop <-chan struct{}) func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx)
	}()
	go func() {
		<-stop
		cancel()
	}()
	return func() { <-done }
}

// A job that takes longer than its period never runs twice at once, though
// two runners ask for it many times a period: the lease, not the period,
// keeps the second out.
func TestRunsNeverOverlap(t *testing.T) {
	db := storetest.Open(t)
	var inFlight, most, runs atomic.Int64
	stop := make(chan struct{})
	var once sync.Once
	job := jobs.Job{Name: "slow", Every: 20 * time.Millisecond, Run: func(ctx context.Context, _ jobs.Pass) (int, error) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		select { // the work: seven periods long
		case <-time.After(140 * time.Millisecond):
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		if runs.Add(1) == 6 {
			once.Do(func() { close(stop) })
		}
		return 1, nil
	}}
	a := runFor(jobs.New(jobs.Deps{Claims: db.JobRuns(), Log: quiet}, []jobs.Job{job}, jobs.Options{Lease: time.Second}, time.Now), stop)
	b := runFor(jobs.New(jobs.Deps{Claims: db.JobRuns(), Log: quiet}, []jobs.Job{job}, jobs.Options{Lease: time.Second}, time.Now), stop)
	select {
	case <-stop:
	case <-time.After(30 * time.Second):
		once.Do(func() { close(stop) })
		t.Errorf("only %d runs in 30s", runs.Load())
	}
	a()
	b()
	if most.Load() != 1 {
		t.Fatalf("%d runs of one job at once across two runners; want 1", most.Load())
	}
	if r := row(t, db, "slow"); r.Removed < 6 || r.LeaseUntil != 0 {
		t.Fatalf("after the runners stopped: %+v; want at least 6 removed and no lease held", r)
	}
}

// A holder that stops renewing (a killed replica) keeps the job until its
// lease lapses; then another runner takes the job, though its period is
// long, and finishes it.
func TestLapsedLeaseIsTakenOver(t *testing.T) {
	db := storetest.Open(t)
	ctx := t.Context()
	const lease = 600 * time.Millisecond
	claimed := time.Now()
	if ok, err := db.JobRuns().Claim(ctx, "sweep", "dead-replica", lease, claimed); err != nil || !ok {
		t.Fatalf("claim as the doomed replica: %v, %v", ok, err)
	}
	lapse := claimed.Add(lease)
	started := make(chan time.Time, 1)
	stop := make(chan struct{})
	job := jobs.Job{Name: "sweep", Every: time.Hour, Run: func(context.Context, jobs.Pass) (int, error) {
		select {
		case started <- time.Now():
		default:
		}
		return 3, nil
	}}
	r := jobs.New(jobs.Deps{Claims: db.JobRuns(), Log: quiet}, []jobs.Job{job}, jobs.Options{Lease: lease}, time.Now)
	wait := runFor(r, stop)
	var at time.Time
	select {
	case at = <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the job was not taken over within 10s")
	}
	testwait.For(t, 10*time.Second, "the run's lease to be released", func() bool { return row(t, db, "sweep").LeaseUntil == 0 })
	close(stop)
	wait()
	if at.Before(lapse) {
		t.Fatalf("taken over %s before the dead holder's lease lapsed", lapse.Sub(at))
	}
	got := row(t, db, "sweep")
	if got.Holder != r.Holder() || got.Runs != 2 || got.Removed != 3 || got.LeaseUntil != 0 {
		t.Fatalf("job row %+v; want taken by %s, 2 claims, 3 removed, lease released", got, r.Holder())
	}
	if next := time.UnixMicro(got.NextRunAt); next.Before(at.Add(59 * time.Minute)) {
		t.Fatalf("next run due at %s, want a period after the run at %s", next, at)
	}
}

// A runner whose lease was taken (its renewals too late) stops its run,
// and its end neither releases nor reschedules the new holder's claim.
func TestLostLeaseStopsTheRun(t *testing.T) {
	db := storetest.Open(t)
	const lease = 300 * time.Millisecond
	running := make(chan struct{})
	ended := make(chan error, 1)
	job := jobs.Job{Name: "long", Every: time.Hour, Run: func(ctx context.Context, _ jobs.Pass) (int, error) {
		close(running)
		select {
		case <-ctx.Done():
			ended <- ctx.Err()
			return 1, ctx.Err()
		case <-time.After(20 * time.Second):
			ended <- errors.New("ran on for 20s")
			return 1, nil
		}
	}}
	stop := make(chan struct{})
	wait := runFor(jobs.New(jobs.Deps{Claims: db.JobRuns(), Log: quiet}, []jobs.Job{job}, jobs.Options{Lease: lease}, time.Now), stop)
	defer func() {
		close(stop)
		wait()
	}()
	<-running
	thief := time.Now().Add(time.Hour).UnixMicro()
	storetest.Exec(t, db, "UPDATE job_runs SET holder = 'other-replica', lease_until = ? WHERE name = 'long'", thief)
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Fatalf("run after its lease was taken: %v; want it cancelled", err)
	}
	testwait.For(t, 5*time.Second, "the stopped run's count to be recorded", func() bool { return row(t, db, "long").Removed == 1 })
	if got := row(t, db, "long"); got.Holder != "other-replica" || got.LeaseUntil != thief || got.NextRunAt != 0 {
		t.Fatalf("the new holder's claim after the old run ended: %+v", got)
	}
}

// A replica stopping mid-run releases the job at once and leaves it due,
// so another replica finishes it without waiting for the lease or the
// period.
func TestStoppedRunHandsOverAtOnce(t *testing.T) {
	db := storetest.Open(t)
	running := make(chan struct{})
	job := jobs.Job{Name: "handover", Every: time.Hour, Run: func(ctx context.Context, _ jobs.Pass) (int, error) {
		close(running)
		<-ctx.Done()
		return 0, ctx.Err()
	}}
	stopA := make(chan struct{})
	waitA := runFor(jobs.New(jobs.Deps{Claims: db.JobRuns(), Log: quiet}, []jobs.Job{job}, jobs.Options{Lease: time.Hour}, time.Now), stopA)
	<-running
	close(stopA)
	waitA()
	if got := row(t, db, "handover"); got.LeaseUntil != 0 || got.NextRunAt != 0 || got.Runs != 1 {
		t.Fatalf("after the replica stopped mid-run: %+v; want the lease released and the job still due", got)
	}
	if ok, err := db.JobRuns().Claim(t.Context(), "handover", "next-replica", time.Hour, time.Now()); err != nil || !ok {
		t.Fatalf("claim after the hand-over: %v, %v; want it taken at once", ok, err)
	}
}
