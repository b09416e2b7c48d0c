-- mcpflow store, version 4 (SQLite). Keep in step with ../postgres/0004_audit.sql.
-- The audit log of tool calls (issue #18): who called (the principal's subject, how it proved
-- it, the API key's name, never the key), which tool, the outcome, how long it took, and the
-- run it started (none for proxied calls and refusals). No argument value, result or token.
-- No foreign key to runs: a row outlives its run's retention by count, and a plain run's
-- record may land after its audit row.
CREATE TABLE audit (
    id          INTEGER PRIMARY KEY,
    at          INTEGER NOT NULL,
    subject     TEXT,
    via         TEXT,
    key_name    TEXT,
    tool        TEXT NOT NULL,
    outcome     TEXT NOT NULL,
    duration_ms INTEGER NOT NULL,
    run_id      TEXT
) STRICT;

-- Listing newest first from a time, and retention deleting the oldest first.
CREATE INDEX audit_by_time ON audit (at, id);
