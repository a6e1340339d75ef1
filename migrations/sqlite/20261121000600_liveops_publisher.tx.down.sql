ALTER TABLE liveops_configs DROP COLUMN description;
--bun:split
ALTER TABLE liveops_configs DROP COLUMN published_by;
