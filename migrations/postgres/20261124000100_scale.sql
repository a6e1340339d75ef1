-- +goose Up
-- Indexes that let the hot reads stop at their LIMIT on a large database,
-- and the table the monitoring figures are read from.

-- Social lists page by state, newest first; the counts are index-only.
CREATE INDEX social_edges_user_state_idx ON social_edges (user_id, state, since DESC, other_id);
-- The lobby browser: only lobbies someone can join, in list order, with the
-- columns its filter reads, so a page costs about a page of index entries.
CREATE INDEX lobbies_joinable_idx ON lobbies (created_at DESC, id)
    INCLUDE (queue_id, visibility, host_id, active_at)
    WHERE status = 'open' AND member_count < capacity;
-- Failed delivery attempts are few; the counter job reads only them.
CREATE INDEX mail_attempts_failed_idx ON mail_attempts (id) WHERE outcome IN ('retry', 'failed');
-- The newest audit entries in the order the console lists them (the old
-- index, on at alone, left ties on at to a sort).
CREATE INDEX audit_log_recent_idx ON audit_log (at DESC, id DESC);
DROP INDEX audit_log_at_idx;
-- One row: the latest figures of the counter job, read by scrapes and the
-- admin bootstraps instead of counting whole tables.
CREATE TABLE stat_snapshots (
    id           INTEGER PRIMARY KEY CHECK (id = 1),
    body         TEXT NOT NULL,
    refreshed_at TIMESTAMPTZ NOT NULL
);

-- +goose Down
DROP TABLE stat_snapshots;
CREATE INDEX audit_log_at_idx ON audit_log (at DESC);
DROP INDEX audit_log_recent_idx;
DROP INDEX mail_attempts_failed_idx;
DROP INDEX lobbies_joinable_idx;
DROP INDEX social_edges_user_state_idx;
