// Package jobs runs the periodic work of the service (sweeps of expired
// and old rows, idle lobbies, overdue mail) so that, however many replicas
// serve one database, each period of each job runs once, and never two
// runs of a job at the same time: a replica runs a job only while it holds
// the job's lease in the database.
package jobs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// Job is one periodic task. Run does one pass and returns how many rows it
// removed or changed; with pass.DryRun it only counts them. A job whose Run
// cannot count without acting sets NoDryRun, and a dry run skips it. Run
// must stop soon after its ctx is done and be safe to run again after
// stopping anywhere: a run cut short is finished by the next one.
type Job struct {
	Name     string
	Every    time.Duration
	NoDryRun bool
	Run      func(ctx context.Context, pass Pass) (int, error)
}

// Pass is what a job's Run is told about the run.
type Pass struct {
	DryRun bool
	// Holder is the runner holding the job's lease, or "" for a run outside
	// the leases (RunOnce). A job that writes in batches makes each batch
	// statement check that Holder still holds the lease (a fencing token,
	// as store.Sweeps.Fenced does): the runner's renewals stop a run once
	// the lease is lost, but a holder paused past its lease (a stopped
	// process, a long GC) would otherwise write a batch beside the replica
	// that took the job over before its renewals notice.
	Holder string
}

// Claims is where replicas agree who runs a job. Times are the callers'
// clocks, so replicas' clocks must agree to well within a lease.
type Claims interface {
	// Claim takes job for holder, leased until now+lease, when its next
	// period is due at now and no other lease on it is live, and reports
	// whether this caller got it. Of replicas asking at once, one does.
	Claim(ctx context.Context, job, holder string, lease time.Duration, now time.Time) (bool, error)
	// Renew moves holder's live lease on job to now+lease, and reports
	// false when holder no longer holds a live lease.
	Renew(ctx context.Context, job, holder string, lease time.Duration, now time.Time) (bool, error)
	// Finish ends holder's lease on job and adds removed to its total. A
	// non-zero next is when the next period is due; a zero next leaves the
	// job due, so the next claimant finishes what this run left.
	Finish(ctx context.Context, job, holder string, removed int, next time.Time) error
}

// DefaultLease is how long a claim holds a job without being renewed.
const DefaultLease = time.Minute

// Runner runs a list of jobs.
type Runner struct {
	jobs   []Job
	claims Claims
	lease  time.Duration
	log    *slog.Logger
	now    func() time.Time
	holder string
}

// Deps are what a Runner works with.
type Deps struct {
	// Claims hands each period of a job to one runner across replicas.
	Claims Claims
	Log    *slog.Logger
}

// Options are the settings of a Runner.
type Options struct {
	// Lease is how long a claim lasts unless renewed; DefaultLease when
	// zero.
	Lease time.Duration
}

// New returns a runner of jobs. Its holder name is the host, the process
// id and a random part, so that two runners never take one another's
// leases.
func New(d Deps, jobs []Job, opts Options, now func() time.Time) *Runner {
	lease := opts.Lease
	if lease <= 0 {
		lease = DefaultLease
	}
	host, _ := os.Hostname()
	var tag [4]byte
	rand.Read(tag[:])
	return &Runner{jobs: jobs, claims: d.Claims, lease: lease, log: d.Log, now: now,
		holder: fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(tag[:]))}
}

// Jobs returns the jobs in the order they run.
func (r *Runner) Jobs() []Job { return r.jobs }

// Holder names this runner in the claims.
func (r *Runner) Holder() string { return r.holder }

// Run runs every job in its own loop until ctx is done. A loop asks for
// its job four times a period, and at least twice a lease, so a period
// starts at most a quarter late whichever replica takes it, and a job
// whose holder died is taken over within half a lease of its lease
// lapsing.
func (r *Runner) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, j := range r.jobs {
		wg.Go(func() { r.loop(ctx, j) })
	}
	wg.Wait()
}

func (r *Runner) loop(ctx context.Context, j Job) {
	tick := time.NewTicker(max(min(j.Every/4, r.lease/2), 10*time.Millisecond))
	defer tick.Stop()
	for {
		r.tryOnce(ctx, j)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// tryOnce runs j if this replica claims it, renewing the lease while the
// run lasts.
func (r *Runner) tryOnce(ctx context.Context, j Job) {
	claimed := r.now()
	ok, err := r.claims.Claim(ctx, j.Name, r.holder, r.lease, claimed)
	if err != nil || !ok {
		if err != nil && ctx.Err() == nil {
			r.log.Warn("claim job", "job", j.Name, "error", err)
		}
		return
	}
	runCtx, stop := r.keepLease(ctx, j.Name, claimed)
	n, err := j.Run(runCtx, Pass{Holder: r.holder})
	cut := runCtx.Err() != nil
	stop()
	if err != nil && !cut {
		r.log.Warn("job failed", "job", j.Name, "removed", n, "error", err)
	}
	if n > 0 {
		r.log.Info("job ran", "job", j.Name, "removed", n, "cut_short", cut)
	}
	// A run that ended, even failing, waits for the next period; one cut
	// short (shutdown, lease lost) leaves the job due for the next claimant.
	next := claimed.Add(j.Every)
	if cut {
		next = time.Time{}
	}
	// Released even when ctx is done, so a replica stopping hands the job
	// over at once rather than after its lease.
	finishCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := r.claims.Finish(finishCtx, j.Name, r.holder, n, next); err != nil {
		r.log.Warn("finish job", "job", j.Name, "error", err)
	}
}

// keepLease renews the lease on job, claimed at claimed, every third of
// a lease, and returns a context for the run that is cancelled when the
// lease is lost or lapses unrenewed (the database unreachable), so a run
// does not go on once another replica may hold the job. stop ends the
// renewals.
func (r *Runner) keepLease(ctx context.Context, job string, claimed time.Time) (runCtx context.Context, stop func()) {
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		until := claimed.Add(r.lease)
		for {
			timer := time.NewTimer(min(r.lease/3, until.Sub(r.now())))
			select {
			case <-done:
				timer.Stop()
				return
			case <-runCtx.Done():
				timer.Stop()
				return
			case <-timer.C:
			}
			now := r.now()
			if !now.Before(until) {
				r.log.Warn("job lease lapsed unrenewed; stopping the run", "job", job)
				cancel()
				return
			}
			held, err := r.claims.Renew(runCtx, job, r.holder, r.lease, now)
			switch {
			case err != nil: // tried again until the lease lapses
				if runCtx.Err() == nil {
					r.log.Warn("renew job lease", "job", job, "error", err)
				}
			case !held:
				r.log.Warn("job lease lost; stopping the run", "job", job)
				cancel()
				return
			default:
				until = now.Add(r.lease)
			}
		}
	})
	return runCtx, func() {
		close(done)
		wg.Wait()
		cancel()
	}
}

// Result is what one job did in RunOnce.
type Result struct {
	Job     string `json:"job"`
	Removed int    `json:"removed"`
	Skipped bool   `json:"skipped,omitempty"`
	Error   string `json:"error,omitempty"`
}

// RunOnce runs every job once now, without claiming, as an operator's
// prune does; the sweeps are idempotent, so a replica running the same job
// at the same moment does no harm. With dryRun nothing changes.
func (r *Runner) RunOnce(ctx context.Context, dryRun bool) ([]Result, error) {
	out := make([]Result, 0, len(r.jobs))
	var firstErr error
	for _, j := range r.jobs {
		res := Result{Job: j.Name}
		if dryRun && j.NoDryRun {
			res.Skipped = true
			out = append(out, res)
			continue
		}
		n, err := j.Run(ctx, Pass{DryRun: dryRun})
		res.Removed = n
		if err != nil {
			res.Error = err.Error()
			if firstErr == nil {
				firstErr = fmt.Errorf("%s: %w", j.Name, err)
			}
		}
		out = append(out, res)
	}
	return out, firstErr
}
