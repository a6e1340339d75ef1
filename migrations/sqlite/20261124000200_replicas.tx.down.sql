DROP INDEX profile_rate_events_at_idx;
--bun:split
DROP INDEX profile_changes_updated_idx;
--bun:split
DROP INDEX lobbies_closed_idx;
--bun:split
DROP INDEX mail_outbox_done_idx;
--bun:split
DROP TABLE job_runs;
--bun:split
DROP TABLE rate_limits;
