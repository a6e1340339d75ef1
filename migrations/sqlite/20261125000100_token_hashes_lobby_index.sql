-- +goose Up
-- Session and mailed-token hashes are kept as the 32-byte SHA-256 digest
-- instead of its 64 hex characters. SQLite cannot change a column's type,
-- so each table is rebuilt: a copy with the BLOB column, filled through
-- unhex(), replaces the original, and its indexes are created again under
-- their old names. No table refers to either, so nothing else changes.
-- The CHECK keeps text out: SQLite would store it, and it would never
-- match a lookup.
CREATE TABLE sessions_blob (
    id          TEXT PRIMARY KEY,
    token_hash  BLOB NOT NULL CHECK (typeof(token_hash) = 'blob' AND length(token_hash) = 32),
    user_id     TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    realm       TEXT NOT NULL,
    remember    BOOLEAN NOT NULL DEFAULT TRUE,
    expires_at  TIMESTAMP NOT NULL,
    created_at  TIMESTAMP NOT NULL,
    updated_at  TIMESTAMP NOT NULL,
    ip_address  TEXT NOT NULL DEFAULT '',
    user_agent  TEXT NOT NULL DEFAULT ''
);
INSERT INTO sessions_blob (id, token_hash, user_id, realm, remember, expires_at, created_at, updated_at, ip_address, user_agent)
SELECT id, unhex(token_hash), user_id, realm, remember, expires_at, created_at, updated_at, ip_address, user_agent FROM sessions;
DROP TABLE sessions;
ALTER TABLE sessions_blob RENAME TO sessions;
CREATE UNIQUE INDEX sessions_token_hash_key ON sessions (token_hash);
CREATE INDEX sessions_user_idx ON sessions (user_id);
CREATE INDEX sessions_expires_idx ON sessions (expires_at);

CREATE TABLE auth_tokens_blob (
    id          TEXT PRIMARY KEY,
    token_hash  BLOB NOT NULL CHECK (typeof(token_hash) = 'blob' AND length(token_hash) = 32),
    purpose     TEXT NOT NULL CHECK (purpose IN ('verify-email', 'reset-password')),
    realm       TEXT NOT NULL CHECK (realm IN ('player', 'admin')),
    user_id     TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    email       TEXT NOT NULL,
    expires_at  TIMESTAMP NOT NULL,
    created_at  TIMESTAMP NOT NULL
);
INSERT INTO auth_tokens_blob (id, token_hash, purpose, realm, user_id, email, expires_at, created_at)
SELECT id, unhex(token_hash), purpose, realm, user_id, email, expires_at, created_at FROM auth_tokens;
DROP TABLE auth_tokens;
ALTER TABLE auth_tokens_blob RENAME TO auth_tokens;
CREATE UNIQUE INDEX auth_tokens_token_hash_key ON auth_tokens (token_hash);
CREATE INDEX auth_tokens_user_idx ON auth_tokens (user_id, purpose);
CREATE INDEX auth_tokens_expires_idx ON auth_tokens (expires_at);

-- The lobby list reads lobbies_joinable_idx, which is in its order and
-- holds only joinable lobbies. lobbies_open_idx, in creation order alone,
-- tempted the planner into reading it and sorting each creation time's
-- ties instead; the open-lobby count reads lobbies_live_idx without it.
DROP INDEX lobbies_open_idx;

-- +goose Down
CREATE INDEX lobbies_open_idx ON lobbies (created_at DESC) WHERE status = 'open';
CREATE TABLE auth_tokens_text (
    id          TEXT PRIMARY KEY,
    token_hash  TEXT NOT NULL,
    purpose     TEXT NOT NULL CHECK (purpose IN ('verify-email', 'reset-password')),
    realm       TEXT NOT NULL CHECK (realm IN ('player', 'admin')),
    user_id     TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    email       TEXT NOT NULL,
    expires_at  TIMESTAMP NOT NULL,
    created_at  TIMESTAMP NOT NULL
);
INSERT INTO auth_tokens_text (id, token_hash, purpose, realm, user_id, email, expires_at, created_at)
SELECT id, lower(hex(token_hash)), purpose, realm, user_id, email, expires_at, created_at FROM auth_tokens;
DROP TABLE auth_tokens;
ALTER TABLE auth_tokens_text RENAME TO auth_tokens;
CREATE UNIQUE INDEX auth_tokens_token_hash_key ON auth_tokens (token_hash);
CREATE INDEX auth_tokens_user_idx ON auth_tokens (user_id, purpose);
CREATE INDEX auth_tokens_expires_idx ON auth_tokens (expires_at);

CREATE TABLE sessions_text (
    id          TEXT PRIMARY KEY,
    token_hash  TEXT NOT NULL,
    user_id     TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    realm       TEXT NOT NULL,
    remember    BOOLEAN NOT NULL DEFAULT TRUE,
    expires_at  TIMESTAMP NOT NULL,
    created_at  TIMESTAMP NOT NULL,
    updated_at  TIMESTAMP NOT NULL,
    ip_address  TEXT NOT NULL DEFAULT '',
    user_agent  TEXT NOT NULL DEFAULT ''
);
INSERT INTO sessions_text (id, token_hash, user_id, realm, remember, expires_at, created_at, updated_at, ip_address, user_agent)
SELECT id, lower(hex(token_hash)), user_id, realm, remember, expires_at, created_at, updated_at, ip_address, user_agent FROM sessions;
DROP TABLE sessions;
ALTER TABLE sessions_text RENAME TO sessions;
CREATE UNIQUE INDEX sessions_token_hash_key ON sessions (token_hash);
CREATE INDEX sessions_user_idx ON sessions (user_id);
CREATE INDEX sessions_expires_idx ON sessions (expires_at);
