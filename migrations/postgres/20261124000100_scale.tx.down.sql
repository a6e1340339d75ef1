DROP TABLE stat_snapshots;
--bun:split
CREATE INDEX audit_log_at_idx ON audit_log (at DESC);
--bun:split
DROP INDEX audit_log_recent_idx;
--bun:split
DROP INDEX mail_attempts_failed_idx;
--bun:split
DROP INDEX lobbies_joinable_idx;
--bun:split
DROP INDEX social_edges_user_state_idx;
