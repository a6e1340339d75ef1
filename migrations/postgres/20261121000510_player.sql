-- +goose Up
CREATE TABLE player_decks (
    id         UUID PRIMARY KEY,
    user_id    UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    code       TEXT NOT NULL,
    source     TEXT NOT NULL CHECK (source IN ('starter', 'import', 'fixture')),
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
-- A deck code is canonical, so equal codes are the same deck.
CREATE UNIQUE INDEX player_decks_code_key ON player_decks (user_id, code);
-- One row per player who has used the player routes. Transactions that
-- change a player's relationships or lobby lock this row first.
CREATE TABLE player_profiles (
    user_id         UUID PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    default_deck_id UUID REFERENCES player_decks (id) ON DELETE SET NULL,
    starter_granted BOOLEAN NOT NULL DEFAULT FALSE,
    created_at      TIMESTAMPTZ NOT NULL,
    updated_at      TIMESTAMPTZ NOT NULL
);
-- A relationship is two directed edges, each the state as its user_id sees
-- it. A block keeps only the blocker's edge, so the blocked player's side
-- never shows it.
CREATE TABLE social_edges (
    user_id  UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    other_id UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    state    TEXT NOT NULL CHECK (state IN ('outgoing', 'incoming', 'friend', 'blocked')),
    since    TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (user_id, other_id),
    CHECK (user_id <> other_id)
);
CREATE INDEX social_edges_other_idx ON social_edges (other_id);
CREATE TABLE lobbies (
    id           UUID PRIMARY KEY,
    join_code    TEXT,
    queue_id     TEXT NOT NULL,
    visibility   TEXT NOT NULL CHECK (visibility IN ('public', 'friends', 'private')),
    status       TEXT NOT NULL CHECK (status IN ('open', 'started', 'closed')),
    host_id      UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    capacity     INTEGER NOT NULL CHECK (capacity > 0),
    member_count INTEGER NOT NULL CHECK (member_count >= 0 AND member_count <= capacity),
    created_at   TIMESTAMPTZ NOT NULL,
    updated_at   TIMESTAMPTZ NOT NULL,
    active_at    TIMESTAMPTZ NOT NULL,
    closed_at    TIMESTAMPTZ,
    close_reason TEXT NOT NULL DEFAULT ''
);
-- Closing a lobby clears its code, so codes are unique among live lobbies.
CREATE UNIQUE INDEX lobbies_join_code_key ON lobbies (join_code);
CREATE INDEX lobbies_open_idx ON lobbies (created_at DESC) WHERE status = 'open';
CREATE INDEX lobbies_live_idx ON lobbies (active_at) WHERE status <> 'closed';
CREATE INDEX lobbies_host_idx ON lobbies (host_id);
-- user_id is the key: a player is in at most one lobby.
CREATE TABLE lobby_members (
    user_id   UUID PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    lobby_id  UUID NOT NULL REFERENCES lobbies (id) ON DELETE CASCADE,
    ready     BOOLEAN NOT NULL DEFAULT FALSE,
    joined_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX lobby_members_lobby_idx ON lobby_members (lobby_id, joined_at);

-- +goose Down
DROP TABLE lobby_members;
DROP TABLE lobbies;
DROP TABLE social_edges;
DROP TABLE player_profiles;
DROP TABLE player_decks;
