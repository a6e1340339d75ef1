-- +goose Up
-- The admin user search reads emails and nickname keys by prefix as a
-- range (key >= prefix AND key < prefix + U+10FFFF) in the unique indexes
-- that already hold them. A range over a linguistic collation is not a
-- prefix (it orders by letters first and punctuation later), so both
-- columns compare byte-wise; they are lower-cased already, and equality,
-- which is all the unique indexes enforce, is the same under both. The
-- ALTERs rebuild the two indexes, keeping their names.
ALTER TABLE users
    ALTER COLUMN email TYPE TEXT COLLATE "C",
    ALTER COLUMN nickname_key TYPE TEXT COLLATE "C";

-- +goose Down
ALTER TABLE users
    ALTER COLUMN email TYPE TEXT COLLATE "default",
    ALTER COLUMN nickname_key TYPE TEXT COLLATE "default";
