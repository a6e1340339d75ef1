-- +goose Up
-- Guests are players without an email or password of their own; an
-- upgrade clears the flag on the same row, so their player state stays.
ALTER TABLE users ADD COLUMN is_anonymous BOOLEAN NOT NULL DEFAULT FALSE;
CREATE INDEX users_anonymous_idx ON users (updated_at) WHERE is_anonymous;

-- An account at an identity provider, keyed by the issuer and the subject
-- the provider asserts: never by email, which providers let users change.
CREATE TABLE user_identities (
    id          UUID PRIMARY KEY,
    user_id     UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    provider    TEXT NOT NULL,
    issuer      TEXT NOT NULL,
    subject     TEXT NOT NULL,
    email       TEXT NOT NULL DEFAULT '',
    created_at  TIMESTAMPTZ NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL
);
CREATE UNIQUE INDEX user_identities_subject_key ON user_identities (issuer, subject);
CREATE INDEX user_identities_user_idx ON user_identities (user_id);

-- A sign-in or link in flight at a provider: single use, short-lived, and
-- found by the SHA-256 of the state sent to the provider.
CREATE TABLE oauth_states (
    state_hash  BYTEA PRIMARY KEY CHECK (octet_length(state_hash) = 32),
    provider    TEXT NOT NULL,
    data        TEXT NOT NULL,
    expires_at  TIMESTAMPTZ NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX oauth_states_expires_idx ON oauth_states (expires_at);

-- +goose Down
DROP TABLE oauth_states;
DROP TABLE user_identities;
DROP INDEX users_anonymous_idx;
ALTER TABLE users DROP COLUMN is_anonymous;
