-- mcpflow store, version 1 (PostgreSQL). Keep in step with ../sqlite/0001_init.sql.
-- Times are milliseconds since the Unix epoch; JSON values are stored as text.

CREATE TABLE configs (
    version    TEXT PRIMARY KEY,
    source     TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE TABLE runs (
    id             TEXT PRIMARY KEY,
    tool           TEXT NOT NULL,
    config_version TEXT NOT NULL,
    args           TEXT NOT NULL,
    resumable      BIGINT NOT NULL,
    status         TEXT NOT NULL CHECK (status IN
                     ('running', 'waiting', 'succeeded', 'failed', 'cancelled', 'interrupted', 'expired')),
    -- Set exactly while the run is running: the process executing it and until when its
    -- claim holds without being renewed.
    owner          TEXT,
    lease_until    BIGINT,
    started_at     BIGINT NOT NULL,
    ended_at       BIGINT,
    result         TEXT,
    error          TEXT,
    CHECK ((status = 'running') = (owner IS NOT NULL AND lease_until IS NOT NULL))
);

CREATE INDEX runs_by_status ON runs (status, lease_until);
CREATE INDEX runs_by_start ON runs (started_at, id);
CREATE INDEX runs_by_tool ON runs (tool, started_at);

CREATE TABLE records (
    run_id    TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    idx       BIGINT NOT NULL,
    node_id   TEXT NOT NULL,
    node_type TEXT NOT NULL,
    start_ms  DOUBLE PRECISION NOT NULL,
    end_ms    DOUBLE PRECISION NOT NULL,
    input     TEXT,
    output    TEXT,
    error     TEXT,
    parent    BIGINT,
    PRIMARY KEY (run_id, idx)
);

CREATE TABLE sessions (
    id           TEXT PRIMARY KEY,
    run_id       TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    node_id      TEXT NOT NULL,
    status       TEXT NOT NULL CHECK (status IN
                   ('waiting', 'claimed', 'completed', 'cancelled', 'expired', 'interrupted')),
    version      BIGINT NOT NULL,
    -- NULL once the session has ended: only a tombstone is kept.
    state        TEXT,
    input_schema TEXT,
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL,
    claimed_by   TEXT
);

-- A run has at most one live session.
CREATE UNIQUE INDEX sessions_live_per_run ON sessions (run_id) WHERE status IN ('waiting', 'claimed');
CREATE INDEX sessions_by_expiry ON sessions (status, expires_at);
CREATE INDEX sessions_by_created ON sessions (created_at, id);
