package store

import (
	"context"
	"fmt"
	"time"
)

// JobRuns records the periodic jobs in the job_runs table, one row per
// job, so that replicas sharing the database run each period of a job
// once between them.
type JobRuns struct{ db *DB }

// JobRuns returns the job claims.
func (db *DB) JobRuns() *JobRuns { return &JobRuns{db: db} }

// Claim takes the current period of job for holder when it is due at now,
// moving its next run to now+every in one conditional UPDATE: of replicas
// asking at once, exactly one sees a row change. It needs no lock held
// across the run, so a replica killed mid-run blocks nobody; the next
// period's claimant finishes what it left.
func (j *JobRuns) Claim(ctx context.Context, job, holder string, every time.Duration, now time.Time) (bool, error) {
	at := now.UnixMicro()
	if _, err := j.db.bun.NewRaw("INSERT INTO job_runs (name, next_run_at) VALUES (?, 0) ON CONFLICT (name) DO NOTHING", job).
		Exec(ctx); err != nil {
		return false, mapError(fmt.Errorf("claim job %s: %w", job, err))
	}
	res, err := j.db.bun.NewRaw("UPDATE job_runs SET next_run_at = ?, runs = runs + 1, holder = ? WHERE name = ? AND next_run_at <= ?",
		at+every.Microseconds(), holder, job, at).Exec(ctx)
	if err != nil {
		return false, mapError(fmt.Errorf("claim job %s: %w", job, err))
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// Finished adds what a run of job removed to its total.
func (j *JobRuns) Finished(ctx context.Context, job string, removed int) error {
	_, err := j.db.bun.NewRaw("UPDATE job_runs SET removed = removed + ? WHERE name = ?", removed, job).Exec(ctx)
	return mapError(err)
}

// Runs returns how many periods of job were claimed.
func (j *JobRuns) Runs(ctx context.Context, job string) (int, error) {
	var n int
	err := j.db.bun.NewRaw("SELECT COALESCE(MAX(runs), 0) FROM job_runs WHERE name = ?", job).Scan(ctx, &n)
	return n, mapError(err)
}
