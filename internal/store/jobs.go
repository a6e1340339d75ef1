package store

import (
	"context"
	"fmt"
	"time"
)

// JobRuns records the periodic jobs in the job_runs table, one row per
// job, so that replicas sharing the database run each period of a job
// once between them, one run at a time.
type JobRuns struct{ db *DB }

// JobRuns returns the job claims.
func (db *DB) JobRuns() *JobRuns { return &JobRuns{db: db} }

// Claim takes job for holder when its period is due at now and no lease
// on it is live, leasing it until now+lease, in one conditional UPDATE: of
// replicas asking at once, exactly one sees a row change. No lock is held
// across the run, so a replica killed mid-run blocks nobody past its lease.
func (j *JobRuns) Claim(ctx context.Context, job, holder string, lease time.Duration, now time.Time) (bool, error) {
	at := now.UnixMicro()
	if _, err := j.db.bun.NewRaw("INSERT INTO job_runs (name, next_run_at) VALUES (?, 0) ON CONFLICT (name) DO NOTHING", job).
		Exec(ctx); err != nil {
		return false, mapError(fmt.Errorf("claim job %s: %w", job, err))
	}
	res, err := j.db.bun.NewRaw(`UPDATE job_runs SET lease_until = ?, runs = runs + 1, holder = ?
		WHERE name = ? AND next_run_at <= ? AND lease_until <= ?`,
		at+lease.Microseconds(), holder, job, at, at).Exec(ctx)
	if err != nil {
		return false, mapError(fmt.Errorf("claim job %s: %w", job, err))
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// Renew moves holder's live lease on job to now+lease; false means the
// lease lapsed or another holder has the job.
func (j *JobRuns) Renew(ctx context.Context, job, holder string, lease time.Duration, now time.Time) (bool, error) {
	at := now.UnixMicro()
	res, err := j.db.bun.NewRaw("UPDATE job_runs SET lease_until = ? WHERE name = ? AND holder = ? AND lease_until > ?",
		at+lease.Microseconds(), job, holder, at).Exec(ctx)
	if err != nil {
		return false, mapError(fmt.Errorf("renew job %s: %w", job, err))
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// Finish adds what a run of job removed to its total and, if holder still
// holds the job, ends the lease and, when next is not zero, makes the next
// period due at next. A zero next leaves the job due at once.
func (j *JobRuns) Finish(ctx context.Context, job, holder string, removed int, next time.Time) error {
	nextAt := int64(0)
	if !next.IsZero() {
		nextAt = next.UnixMicro()
	}
	_, err := j.db.bun.NewRaw(`UPDATE job_runs SET removed = removed + ?,
		next_run_at = CASE WHEN holder = ? AND ? > 0 THEN ? ELSE next_run_at END,
		lease_until = CASE WHEN holder = ? THEN 0 ELSE lease_until END
		WHERE name = ?`, removed, holder, nextAt, nextAt, holder, job).Exec(ctx)
	return mapError(err)
}

// Runs returns how many times job was claimed.
func (j *JobRuns) Runs(ctx context.Context, job string) (int, error) {
	var n int
	err := j.db.bun.NewRaw("SELECT COALESCE(MAX(runs), 0) FROM job_runs WHERE name = ?", job).Scan(ctx, &n)
	return n, mapError(err)
}
