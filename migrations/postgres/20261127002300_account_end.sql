-- +goose Up
-- A deleted account leaves a tombstone: its id is never given out again,
-- and support can answer "was this account deleted, when and why". It
-- holds no personal data.
CREATE TABLE user_tombstones (
    id         UUID PRIMARY KEY,
    realm      TEXT NOT NULL,
    deleted_at TIMESTAMPTZ NOT NULL,
    reason     TEXT NOT NULL,
    actor      TEXT NOT NULL
);
CREATE INDEX user_tombstones_deleted_idx ON user_tombstones (deleted_at);
-- The email and nickname of a deleted account stay reserved until
-- free_at, stored only as keyed hashes so that the table names nobody.
CREATE TABLE identifier_quarantine (
    key_hash TEXT PRIMARY KEY,
    free_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX identifier_quarantine_free_idx ON identifier_quarantine (free_at);
-- A mailed link that confirms a self-service deletion; only the token's
-- SHA-256 is kept.
CREATE TABLE deletion_tokens (
    token_hash   BYTEA PRIMARY KEY CHECK (octet_length(token_hash) = 32),
    user_id      UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    expires_at   TIMESTAMPTZ NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL
);
CREATE INDEX deletion_tokens_user_idx ON deletion_tokens (user_id);
CREATE INDEX deletion_tokens_expires_idx ON deletion_tokens (expires_at);
-- At most one suspension per account; until NULL is indefinite, and a
-- suspension whose until has passed no longer counts.
CREATE TABLE user_suspensions (
    user_id    UUID PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    reason     TEXT NOT NULL,
    actor      TEXT NOT NULL,
    until      TIMESTAMPTZ,
    created_at TIMESTAMPTZ NOT NULL
);

-- A deletion finds the user's rows through these: every step an index
-- range, never a scan of a whole table.
CREATE INDEX profile_changes_user_idx ON profile_changes (user_id);
CREATE INDEX profile_tokens_user_idx ON profile_tokens (user_id);
CREATE INDEX audit_log_target_idx ON audit_log (target, at DESC);
CREATE INDEX mail_outbox_recipient_idx ON mail_outbox (lower(recipient));

-- +goose Down
DROP INDEX mail_outbox_recipient_idx;
DROP INDEX audit_log_target_idx;
DROP INDEX profile_tokens_user_idx;
DROP INDEX profile_changes_user_idx;
DROP TABLE user_suspensions;
DROP TABLE deletion_tokens;
DROP TABLE identifier_quarantine;
DROP TABLE user_tombstones;
