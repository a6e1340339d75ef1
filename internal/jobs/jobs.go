// Package jobs runs the periodic work of the service (sweeps of expired
// and old rows, idle lobbies, overdue mail) so that, however many replicas
// serve one database, each period of each job runs once: a replica runs a
// job only after claiming its period in the database.
package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// Job is one periodic task. Run does one pass and returns how many rows it
// removed or changed; with dryRun it only counts them. A job whose Run
// cannot count without acting sets NoDryRun, and a dry run skips it.
type Job struct {
	Name     string
	Every    time.Duration
	NoDryRun bool
	Run      func(ctx context.Context, dryRun bool) (int, error)
}

// Claims is where replicas agree who runs a period of a job.
type Claims interface {
	// Claim takes job's period that is due at now for holder, and reports
	// whether this caller got it.
	Claim(ctx context.Context, job, holder string, every time.Duration, now time.Time) (bool, error)
	// Finished records what a run removed.
	Finished(ctx context.Context, job string, removed int) error
}

// Runner runs a list of jobs.
type Runner struct {
	jobs   []Job
	claims Claims
	log    *slog.Logger
	now    func() time.Time
	holder string
}

// New returns a runner of jobs; holder names this process in the claims.
func New(jobs []Job, claims Claims, log *slog.Logger, now func() time.Time) *Runner {
	host, _ := os.Hostname()
	return &Runner{jobs: jobs, claims: claims, log: log, now: now, holder: fmt.Sprintf("%s/%d", host, os.Getpid())}
}

// Jobs returns the jobs in the order they run.
func (r *Runner) Jobs() []Job { return r.jobs }

// Run runs every job in its own loop until ctx is done. A loop asks for
// its job's period four times a period, so a period starts at most a
// quarter late whichever replica takes it.
func (r *Runner) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, j := range r.jobs {
		wg.Go(func() { r.loop(ctx, j) })
	}
	wg.Wait()
}

func (r *Runner) loop(ctx context.Context, j Job) {
	tick := time.NewTicker(max(j.Every/4, 10*time.Millisecond))
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

// tryOnce runs j if this replica claims its current period.
func (r *Runner) tryOnce(ctx context.Context, j Job) {
	ok, err := r.claims.Claim(ctx, j.Name, r.holder, j.Every, r.now())
	if err != nil || !ok {
		if err != nil && ctx.Err() == nil {
			r.log.Warn("claim job", "job", j.Name, "error", err)
		}
		return
	}
	n, err := j.Run(ctx, false)
	if err != nil && ctx.Err() == nil {
		r.log.Warn("job failed", "job", j.Name, "removed", n, "error", err)
	}
	if n > 0 {
		r.log.Info("job ran", "job", j.Name, "removed", n)
		if err := r.claims.Finished(ctx, j.Name, n); err != nil && ctx.Err() == nil {
			r.log.Warn("record job", "job", j.Name, "error", err)
		}
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
		n, err := j.Run(ctx, dryRun)
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
