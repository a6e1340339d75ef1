DROP TABLE fixture_ledger;
--bun:split
DROP TABLE liveops_configs;
--bun:split
DROP TABLE content_card_ids;
--bun:split
DROP TABLE content_catalogs;
