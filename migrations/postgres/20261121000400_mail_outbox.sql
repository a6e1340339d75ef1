-- +goose Up
-- The transactional outbox: a service writes the message in the same
-- transaction as the change that causes it, and the delivery worker sends
-- it afterwards. The payload (the template data, including any link with a
-- token) is sealed with a key derived from the secret and purged once the
-- message is sent or expired.
CREATE TABLE mail_outbox (
    id              UUID PRIMARY KEY,
    template        TEXT NOT NULL,
    recipient       TEXT NOT NULL,
    subject         TEXT NOT NULL,
    payload         BYTEA,
    status          TEXT NOT NULL CHECK (status IN ('pending', 'sending', 'sent', 'failed', 'expired')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    -- When the row is next due: the retry time while pending, the end of the
    -- lease while sending, so one index finds both kinds of due work.
    next_attempt_at TIMESTAMPTZ NOT NULL,
    lease_owner     TEXT,
    lease_until     TIMESTAMPTZ,
    expires_at      TIMESTAMPTZ NOT NULL,
    last_error      TEXT NOT NULL DEFAULT '',
    created_at      TIMESTAMPTZ NOT NULL,
    updated_at      TIMESTAMPTZ NOT NULL,
    sent_at         TIMESTAMPTZ
);
CREATE INDEX mail_outbox_due_idx ON mail_outbox (next_attempt_at) WHERE status IN ('pending', 'sending');
CREATE INDEX mail_outbox_status_idx ON mail_outbox (status, created_at DESC);
-- One row per delivery attempt, written when the attempt starts so that an
-- attempt cut short by a crash is visible too.
CREATE TABLE mail_attempts (
    id          BIGSERIAL PRIMARY KEY,
    message_id  UUID NOT NULL REFERENCES mail_outbox (id) ON DELETE CASCADE,
    attempt     INTEGER NOT NULL,
    worker      TEXT NOT NULL,
    started_at  TIMESTAMPTZ NOT NULL,
    finished_at TIMESTAMPTZ,
    outcome     TEXT NOT NULL,
    smtp_code   INTEGER NOT NULL DEFAULT 0,
    error       TEXT NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX mail_attempts_message_attempt_key ON mail_attempts (message_id, attempt);

-- +goose Down
DROP TABLE mail_attempts;
DROP TABLE mail_outbox;
