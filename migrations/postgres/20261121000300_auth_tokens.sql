-- +goose Up
-- Single-use tokens mailed by the authentication handler (email
-- verification, password reset). Only the SHA-256 of a token is stored.
CREATE TABLE auth_tokens (
    id          UUID PRIMARY KEY,
    token_hash  TEXT NOT NULL,
    purpose     TEXT NOT NULL CHECK (purpose IN ('verify-email', 'reset-password')),
    realm       TEXT NOT NULL CHECK (realm IN ('player', 'admin')),
    user_id     UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    email       TEXT NOT NULL,
    expires_at  TIMESTAMPTZ NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL
);
CREATE UNIQUE INDEX auth_tokens_token_hash_key ON auth_tokens (token_hash);
CREATE INDEX auth_tokens_user_idx ON auth_tokens (user_id, purpose);
CREATE INDEX auth_tokens_expires_idx ON auth_tokens (expires_at);

-- +goose Down
DROP TABLE auth_tokens;
