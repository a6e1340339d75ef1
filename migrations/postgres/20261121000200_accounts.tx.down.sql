DROP TABLE sessions;
--bun:split
DROP TABLE users;
