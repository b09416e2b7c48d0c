//! Turning rows into the crate's values. A value that does not decode is `Corrupt`: the schema
//! is ours, so a mismatch means the data was damaged or written by something else.

use serde_json::Value;
use sqlx::Row;
use sqlx::any::AnyRow;

use crate::StoreError;
use crate::model::{RecordRow, Run, RunSummary, Session};

pub(super) const RUN_SUMMARY_COLUMNS: &str =
    "id, tool, config_version, status, started_at, ended_at, owner, started_by";
pub(super) const RUN_COLUMNS: &str = "id, tool, config_version, status, started_at, ended_at, \
     owner, started_by, args, resumable, lease_until, result, error, caller";
pub(super) const RECORD_COLUMNS: &str =
    "idx, node_id, node_type, start_ms, end_ms, input, output, error, parent";
/// Sessions are read joined with their run (`s`, `r`) for the tool and config version. A
/// macro, so that the select of one session is a constant too (no text built per call).
macro_rules! session_select {
    () => {
        "SELECT s.id, s.run_id, r.tool, r.config_version, \
         s.node_id, s.status, s.version, s.state, s.input_schema, s.created_at, s.updated_at, \
         s.expires_at, s.claimed_by, r.started_by FROM sessions s JOIN runs r ON r.id = s.run_id"
    };
}
pub(super) const SESSION_SELECT: &str = session_select!();
pub(super) const SESSION_BY_ID: &str = concat!(session_select!(), " WHERE s.id = $1");

pub(super) fn get<'r, T>(row: &'r AnyRow, column: &str) -> Result<T, StoreError>
where
    T: sqlx::Decode<'r, sqlx::Any> + sqlx::Type<sqlx::Any>,
{
    row.try_get(column)
        .map_err(|e| StoreError::Corrupt(format!("column {column}: {e}")))
}

pub(super) fn json(text: &str, column: &str) -> Result<Value, StoreError> {
    serde_json::from_str(text)
        .map_err(|e| StoreError::Corrupt(format!("column {column} is not JSON: {e}")))
}

fn opt_json(row: &AnyRow, column: &str) -> Result<Option<Value>, StoreError> {
    get::<Option<String>>(row, column)?
        .map(|t| json(&t, column))
        .transpose()
}

/// JSON is stored as text, not `jsonb`: `jsonb` would reorder object keys, and key order is
/// part of what a run produced.
pub(super) fn to_text(v: &Value) -> String {
    v.to_string()
}

pub(super) fn opt_text(v: Option<&Value>) -> Option<String> {
    v.map(to_text)
}

pub(super) fn run_summary(row: &AnyRow) -> Result<RunSummary, StoreError> {
    Ok(RunSummary {
        id: get(row, "id")?,
        tool: get(row, "tool")?,
        config_version: get(row, "config_version")?,
        status: get::<String>(row, "status")?.parse()?,
        started_at: get(row, "started_at")?,
        ended_at: get(row, "ended_at")?,
        owner: get(row, "owner")?,
        started_by: get(row, "started_by")?,
    })
}

pub(super) fn run(row: &AnyRow) -> Result<Run, StoreError> {
    Ok(Run {
        summary: run_summary(row)?,
        args: json(&get::<String>(row, "args")?, "args")?,
        resumable: get::<i64>(row, "resumable")? != 0,
        lease_until: get(row, "lease_until")?,
        result: opt_json(row, "result")?,
        error: opt_json(row, "error")?,
        caller: opt_json(row, "caller")?,
    })
}

pub(super) fn record(row: &AnyRow) -> Result<RecordRow, StoreError> {
    Ok(RecordRow {
        index: get(row, "idx")?,
        node_id: get(row, "node_id")?,
        node_type: get(row, "node_type")?,
        start_ms: get(row, "start_ms")?,
        end_ms: get(row, "end_ms")?,
        input: opt_json(row, "input")?,
        output: opt_json(row, "output")?,
        error: get(row, "error")?,
        parent: get(row, "parent")?,
    })
}

pub(super) fn session(row: &AnyRow) -> Result<Session, StoreError> {
    session_of_run(row, row)
}

/// The session columns a transition's `UPDATE sessions … RETURNING` gives back (a macro, to be
/// `concat!`ed into constant statements).
macro_rules! session_returning {
    () => {
        "id, run_id, node_id, status, version, state, input_schema, created_at, updated_at, \
         expires_at, claimed_by"
    };
}
pub(super) use session_returning;

/// A session from its own row and its run's (`tool`, `config_version`, `started_by`): what
/// two `RETURNING` clauses give, without reading the session again.
pub(super) fn session_of_run(row: &AnyRow, run: &AnyRow) -> Result<Session, StoreError> {
    Ok(Session {
        id: get(row, "id")?,
        run_id: get(row, "run_id")?,
        tool: get(run, "tool")?,
        config_version: get(run, "config_version")?,
        node_id: get(row, "node_id")?,
        status: get::<String>(row, "status")?.parse()?,
        version: get(row, "version")?,
        state: opt_json(row, "state")?.unwrap_or(Value::Null),
        input_schema: opt_json(row, "input_schema")?.unwrap_or(Value::Null),
        created_at: get(row, "created_at")?,
        updated_at: get(row, "updated_at")?,
        expires_at: get(row, "expires_at")?,
        claimed_by: get(row, "claimed_by")?,
        started_by: get(run, "started_by")?,
    })
}
