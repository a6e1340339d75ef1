-- +goose Up
-- News that sessions of a user ended or changed, for the other processes
-- on one SQLite database file (a serve beside `platformctl sessions
-- revoke`), which read it by polling. PostgreSQL carries the same news
-- by LISTEN/NOTIFY and leaves this table empty. Rows are kept minutes.
CREATE TABLE session_notices (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    process TEXT NOT NULL,
    user_id TEXT NOT NULL,
    reason  TEXT NOT NULL,
    at      BIGINT NOT NULL
);
CREATE INDEX session_notices_at_idx ON session_notices (at);

-- +goose Down
DROP TABLE session_notices;
