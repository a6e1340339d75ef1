-- +goose Up
-- Second factors. A TOTP seed is read back, so it is sealed with a key
-- derived from the service secret (internal/secretbox); last_step makes
-- every 30-second code usable once. Backup codes are only ever compared,
-- so only their SHA-256 is kept (they carry 120 random bits), one row per
-- code so that using one is a single DELETE that at most one request wins.
CREATE TABLE two_factors (
    user_id        TEXT PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    secret         TEXT NOT NULL,
    verified       BOOLEAN NOT NULL DEFAULT FALSE,
    last_step      BIGINT NOT NULL DEFAULT 0,
    failed_count   INTEGER NOT NULL DEFAULT 0,
    locked_until   TIMESTAMP,
    created_at     TIMESTAMP NOT NULL,
    updated_at     TIMESTAMP NOT NULL
);

CREATE TABLE backup_codes (
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    code_hash  BLOB NOT NULL CHECK (typeof(code_hash) = 'blob' AND length(code_hash) = 32),
    PRIMARY KEY (user_id, code_hash)
);

-- A password sign-in that still owes its second factor: the two_factor
-- cookie carries the token, this row its hash, the account and the
-- attempts spent on it.
CREATE TABLE two_factor_challenges (
    token_hash  BLOB PRIMARY KEY CHECK (typeof(token_hash) = 'blob' AND length(token_hash) = 32),
    user_id     TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    realm       TEXT NOT NULL CHECK (realm IN ('player', 'admin')),
    remember    BOOLEAN NOT NULL,
    attempts    INTEGER NOT NULL DEFAULT 0,
    expires_at  TIMESTAMP NOT NULL
);
CREATE INDEX two_factor_challenges_expires_idx ON two_factor_challenges (expires_at);

-- +goose Down
DROP TABLE two_factor_challenges;
DROP TABLE backup_codes;
DROP TABLE two_factors;
