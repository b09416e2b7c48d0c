-- mcpflow store, version 5 (SQLite). Keep in step with ../postgres/0005_config_files.sql.
-- Versioned sessions (issue #19): every file a config version was loaded from (the config,
-- its `include:`d files, its `file:` scripts), so that any replica, after a reload, a restart
-- or a rollout, can compile the version a waiting run started on. JSON; NULL for versions
-- stored before this (those are refused as before).
ALTER TABLE configs ADD COLUMN files TEXT;
-- When a serving process last pinned runs to this version: a version no run references is
-- dropped only once no replica has served it for a while.
ALTER TABLE configs ADD COLUMN pinned_at INTEGER;
-- Whether any run still references a version, without reading every run.
CREATE INDEX runs_by_config ON runs (config_version);
