-- +goose Up
-- A pending profile, email or password change, confirmed by emailed tokens.
-- base_fingerprint is a hash of the fields the change replaces as they were
-- when it was requested, so a stale change cannot silently undo a later one.
CREATE TABLE profile_changes (
    id                TEXT PRIMARY KEY,
    user_id           TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    type              TEXT NOT NULL CHECK (type IN ('profile', 'email', 'password')),
    status            TEXT NOT NULL CHECK (status IN ('pending', 'completed', 'superseded')),
    step              TEXT NOT NULL,
    new_name          TEXT,
    new_nickname      TEXT,
    new_email         TEXT,
    new_password_hash TEXT,
    base_fingerprint  TEXT NOT NULL,
    callback_url      TEXT NOT NULL,
    requested_by      TEXT NOT NULL,
    created_at        TIMESTAMP NOT NULL,
    updated_at        TIMESTAMP NOT NULL,
    completed_at      TIMESTAMP
);
-- At most one pending change per user and type: a new request supersedes
-- the earlier one in the same transaction.
CREATE UNIQUE INDEX profile_changes_pending_key ON profile_changes (user_id, type) WHERE status = 'pending';
-- Only a keyed hash (HMAC-SHA256) of each token is stored: a database dump
-- confirms nothing.
CREATE TABLE profile_tokens (
    token_hash    TEXT PRIMARY KEY,
    change_id     TEXT NOT NULL REFERENCES profile_changes (id) ON DELETE CASCADE,
    user_id       TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    type          TEXT NOT NULL,
    step          TEXT NOT NULL,
    created_at    TIMESTAMP NOT NULL,
    expires_at    TIMESTAMP NOT NULL,
    consumed_at   TIMESTAMP,
    superseded_at TIMESTAMP
);
CREATE INDEX profile_tokens_change_idx ON profile_tokens (change_id);
-- Sliding-window rate limits of the request endpoints, shared by every
-- serve process on the database.
CREATE TABLE profile_rate_events (
    id  INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL,
    at  TIMESTAMP NOT NULL
);
CREATE INDEX profile_rate_events_key_idx ON profile_rate_events (key, at);

-- +goose Down
DROP TABLE profile_rate_events;
DROP TABLE profile_tokens;
DROP TABLE profile_changes;
