-- +goose Up
-- Passkeys (WebAuthn credentials). record is the verified credential as
-- the WebAuthn library keeps it; the other columns are what lists show
-- and what sign-in looks up. counter moves only forward, by compare-and-set.
CREATE TABLE passkeys (
    id             TEXT PRIMARY KEY,
    user_id        TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name           TEXT NOT NULL DEFAULT '',
    credential_id  BLOB NOT NULL,
    counter        BIGINT NOT NULL DEFAULT 0,
    device_type    TEXT NOT NULL,
    backed_up      BOOLEAN NOT NULL,
    transports     TEXT NOT NULL DEFAULT '',
    aaguid         TEXT NOT NULL DEFAULT '',
    record         TEXT NOT NULL,
    created_at     TIMESTAMP NOT NULL
);
CREATE UNIQUE INDEX passkeys_credential_id_key ON passkeys (credential_id);
CREATE INDEX passkeys_user_idx ON passkeys (user_id);

-- A WebAuthn ceremony under way: the passkey cookie carries the token,
-- this row its hash and the challenge the response must sign.
CREATE TABLE passkey_ceremonies (
    token_hash  BLOB PRIMARY KEY CHECK (typeof(token_hash) = 'blob' AND length(token_hash) = 32),
    kind        TEXT NOT NULL CHECK (kind IN ('registration', 'authentication')),
    user_id     TEXT REFERENCES users (id) ON DELETE CASCADE,
    session     TEXT NOT NULL,
    expires_at  TIMESTAMP NOT NULL
);
CREATE INDEX passkey_ceremonies_expires_idx ON passkey_ceremonies (expires_at);

-- +goose Down
DROP TABLE passkey_ceremonies;
DROP TABLE passkeys;
