-- Who published each live-ops version and why, so the history an operator
-- sees names a person and a reason, not only a source. Versions published
-- before this column existed (or by the fixture seeder) show ''.
ALTER TABLE liveops_configs ADD COLUMN published_by TEXT NOT NULL DEFAULT '';
--bun:split
ALTER TABLE liveops_configs ADD COLUMN description TEXT NOT NULL DEFAULT '';
