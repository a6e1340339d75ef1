DROP TABLE profile_rate_events;
--bun:split
DROP TABLE profile_tokens;
--bun:split
DROP TABLE profile_changes;
