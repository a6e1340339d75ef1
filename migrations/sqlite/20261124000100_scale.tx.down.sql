DROP TABLE stat_snapshots;
--bun:split
DROP INDEX mail_attempts_failed_idx;
--bun:split
DROP INDEX lobbies_joinable_idx;
--bun:split
DROP INDEX social_edges_user_state_idx;
