-- +goose Up
-- Who published each live-ops version and why, so the history an operator
-- sees names a person and a reason, not only a source. Versions published
-- before this column existed (or by the fixture seeder) show ''.
ALTER TABLE liveops_configs ADD COLUMN published_by TEXT NOT NULL DEFAULT '';
ALTER TABLE liveops_configs ADD COLUMN description TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE liveops_configs DROP COLUMN description;
ALTER TABLE liveops_configs DROP COLUMN published_by;
