DROP TABLE auth_tokens;
