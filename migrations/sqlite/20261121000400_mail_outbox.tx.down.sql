DROP TABLE mail_attempts;
--bun:split
DROP TABLE mail_outbox;
