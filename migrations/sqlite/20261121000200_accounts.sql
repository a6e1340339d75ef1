-- +goose Up
-- One table for both realms: a player and an administrator with the same
-- email are different accounts, and uniqueness is per realm.
CREATE TABLE users (
    id             TEXT PRIMARY KEY,
    realm          TEXT NOT NULL CHECK (realm IN ('player', 'admin')),
    email          TEXT NOT NULL,
    name           TEXT NOT NULL,
    nickname       TEXT,
    nickname_key   TEXT,
    email_verified BOOLEAN NOT NULL DEFAULT FALSE,
    image          TEXT,
    password_hash  TEXT NOT NULL,
    role           TEXT,
    created_at     TIMESTAMP NOT NULL,
    updated_at     TIMESTAMP NOT NULL
);
CREATE UNIQUE INDEX users_email_key ON users (realm, email);
CREATE UNIQUE INDEX users_nickname_key ON users (realm, nickname_key);
CREATE TABLE sessions (
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
CREATE UNIQUE INDEX sessions_token_hash_key ON sessions (token_hash);
CREATE INDEX sessions_user_idx ON sessions (user_id);
CREATE INDEX sessions_expires_idx ON sessions (expires_at);

-- +goose Down
DROP TABLE sessions;
DROP TABLE users;
