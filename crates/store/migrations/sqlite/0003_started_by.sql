-- mcpflow store, version 3 (SQLite). Keep in step with ../postgres/0003_started_by.sql.
-- Who started a run (issue #18): the subject of the principal that called, and what its
-- expressions read as `$caller` (JSON, so a restarted run sees the same). NULL: started
-- without access control, or before this version; only an admin may act on its session.
ALTER TABLE runs ADD COLUMN started_by TEXT;
ALTER TABLE runs ADD COLUMN caller TEXT;
