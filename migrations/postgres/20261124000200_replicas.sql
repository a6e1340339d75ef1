-- +goose Up
-- Attempt counters shared by every serve process on the database: one row
-- per limited key (a SHA-256 of it, so the table names no address), with
-- the generic cell rate algorithm's theoretical arrival time and the step
-- one attempt adds, both in Unix microseconds. A row whose tat has passed
-- limits nobody and the prune job deletes it.
CREATE TABLE rate_limits (
    key  TEXT PRIMARY KEY,
    tat  BIGINT NOT NULL,
    step BIGINT NOT NULL
);
CREATE INDEX rate_limits_tat_idx ON rate_limits (tat);
-- One row per periodic job: a replica runs the job only after moving
-- next_run_at forward in one conditional UPDATE, so exactly one replica
-- claims each period. runs counts the claims.
CREATE TABLE job_runs (
    name        TEXT PRIMARY KEY,
    next_run_at BIGINT NOT NULL,
    runs        BIGINT NOT NULL DEFAULT 0,
    holder      TEXT NOT NULL DEFAULT '',
    removed     BIGINT NOT NULL DEFAULT 0
);
-- The batched sweeps find their rows by these.
CREATE INDEX mail_outbox_done_idx ON mail_outbox (updated_at) WHERE status IN ('sent', 'failed', 'expired');
CREATE INDEX lobbies_closed_idx ON lobbies (closed_at) WHERE status = 'closed';
CREATE INDEX profile_changes_updated_idx ON profile_changes (updated_at);
CREATE INDEX profile_rate_events_at_idx ON profile_rate_events (at);

-- +goose Down
DROP INDEX profile_rate_events_at_idx;
DROP INDEX profile_changes_updated_idx;
DROP INDEX lobbies_closed_idx;
DROP INDEX mail_outbox_done_idx;
DROP TABLE job_runs;
DROP TABLE rate_limits;
