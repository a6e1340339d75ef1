-- +goose Up
-- Every published version of the content catalog. A version is immutable;
-- the current catalog is the highest version.
CREATE TABLE content_catalogs (
    version      INTEGER PRIMARY KEY,
    etag         TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    body         TEXT NOT NULL,
    published_at TIMESTAMP NOT NULL
);
-- Card numeric ids ever published. Deck codes carry them, so a number once
-- given to a card never names another one, even after the card is removed.
CREATE TABLE content_card_ids (
    num_id        INTEGER PRIMARY KEY,
    card_id       TEXT NOT NULL,
    first_version INTEGER NOT NULL
);
CREATE UNIQUE INDEX content_card_ids_card_id_key ON content_card_ids (card_id);
-- Every published version of the live-ops configuration; source says
-- whether fixtures or an operator published it.
CREATE TABLE liveops_configs (
    version      INTEGER PRIMARY KEY,
    etag         TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    body         TEXT NOT NULL,
    source       TEXT NOT NULL CHECK (source IN ('fixtures', 'operator')),
    published_at TIMESTAMP NOT NULL
);
-- Fixture items applied once (development players, their friendships,
-- decks and lobbies). Seeding skips an item it finds here, so a later run
-- never undoes what players changed since.
CREATE TABLE fixture_ledger (
    item       TEXT PRIMARY KEY,
    ref        TEXT NOT NULL DEFAULT '',
    applied_at TIMESTAMP NOT NULL
);

-- +goose Down
DROP TABLE fixture_ledger;
DROP TABLE liveops_configs;
DROP TABLE content_card_ids;
DROP TABLE content_catalogs;
