-- +goose Up
-- SQLite compares text byte-wise already, so the admin user search's
-- prefix ranges read the unique indexes on (realm, email) and
-- (realm, nickname_key) as they are. This file keeps the two dialects'
-- migration lists identical.
SELECT 1;

-- +goose Down
SELECT 1;
