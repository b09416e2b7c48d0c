-- mcpflow store, version 2 (SQLite). Keep in step with ../postgres/0002_runs_by_end.sql.
-- Retention deletes finished runs by when they ended, oldest first or beyond the newest N.
CREATE INDEX runs_by_end ON runs (ended_at, id);
