-- +goose Up
-- A replica holds a job while it runs: lease_until (Unix microseconds) is
-- renewed while the run lasts and cleared when it ends. No other replica
-- claims the job before it has passed, so a run is never doubled, and a
-- replica killed mid-run leaves a lease that lapses on its own.
ALTER TABLE job_runs ADD COLUMN lease_until BIGINT NOT NULL DEFAULT 0;
-- Profile request limits count in rate_limits with every other limit.
DROP TABLE profile_rate_events;

-- +goose Down
CREATE TABLE profile_rate_events (
    id  BIGSERIAL PRIMARY KEY,
    key TEXT NOT NULL,
    at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX profile_rate_events_key_idx ON profile_rate_events (key, at);
CREATE INDEX profile_rate_events_at_idx ON profile_rate_events (at);
ALTER TABLE job_runs DROP COLUMN lease_until;
