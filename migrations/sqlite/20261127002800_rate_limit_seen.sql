-- +goose Up
-- The latest attempt time a rate-limit key has counted. Attempts are
-- stamped before they wait for the key's row, so they can reach it out of
-- order; counting each at no earlier than the latest one seen keeps an
-- attempt stamped a moment before its predecessor from being refused
-- below the limit.
ALTER TABLE rate_limits ADD COLUMN seen BIGINT NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE rate_limits DROP COLUMN seen;
