//! Writing runs and their history records, fenced by leases.

use std::collections::HashMap;

use serde_json::json;
use sqlx::AssertSqlSafe;

use sqlx::AnyConnection;

use super::rows::{self, get};
use super::{Db, SqlStore, is_unique_violation};
use crate::StoreError;
use crate::model::{FinishedRun, Lease, NewRun, RecordRow, RunEnd, RunStatus, SessionStatus};

/// Rows per INSERT statement: 10 parameters each stays far below SQLite's 32,766 and
/// PostgreSQL's 65,535 bind parameters.
const RECORDS_PER_INSERT: usize = 200;

/// A history record with its JSON already text: what a queued write owns (serialised by its
/// caller, off the writer).
pub(super) struct RecordText {
    index: i64,
    node_id: String,
    node_type: String,
    start_ms: f64,
    end_ms: f64,
    input: Option<String>,
    output: Option<String>,
    error: Option<String>,
    parent: Option<i64>,
}

impl RecordText {
    pub(super) fn all(records: &[RecordRow]) -> Vec<RecordText> {
        records
            .iter()
            .map(|r| RecordText {
                index: r.index,
                node_id: r.node_id.clone(),
                node_type: r.node_type.clone(),
                start_ms: r.start_ms,
                end_ms: r.end_ms,
                input: rows::opt_text(r.input.as_ref()),
                output: rows::opt_text(r.output.as_ref()),
                error: r.error.clone(),
                parent: r.parent,
            })
            .collect()
    }
}

/// A run to insert, its JSON already text.
pub(super) struct RunText {
    id: String,
    tool: String,
    config_version: String,
    args: String,
    resumable: bool,
    started_at: i64,
    started_by: Option<String>,
    caller: Option<String>,
}

impl RunText {
    pub(super) fn of(run: &NewRun) -> RunText {
        RunText {
            id: run.id.clone(),
            tool: run.tool.clone(),
            config_version: run.config_version.clone(),
            args: rows::to_text(&run.args),
            resumable: run.resumable,
            started_at: run.started_at,
            started_by: run.started_by.clone(),
            caller: rows::opt_text(run.caller.as_ref()),
        }
    }
}

/// How a run ends, as the columns it sets.
pub(super) struct EndText {
    status: RunStatus,
    result: Option<String>,
    error: Option<String>,
    at: i64,
}

impl EndText {
    pub(super) fn of(end: &RunEnd, at: i64) -> EndText {
        let (result, error) = match end {
            RunEnd::Succeeded(v) => (Some(rows::to_text(v)), None),
            RunEnd::Failed(v) => (None, Some(rows::to_text(v))),
            RunEnd::Cancelled => (None, None),
        };
        EndText {
            status: end.status(),
            result,
            error,
            at,
        }
    }
}

impl SqlStore {
    pub(super) async fn create_run(&self, run: &NewRun, lease: &Lease) -> Result<(), StoreError> {
        let run = RunText::of(run);
        let lease = lease.clone();
        self.write((run, lease), |(run, lease), db, conn| {
            Box::pin(db.insert_run(conn, run, RunStatus::Running, Some(lease), None))
        })
        .await
    }

    pub(super) async fn append_records(
        &self,
        run_id: &str,
        lease: &Lease,
        records: &[RecordRow],
    ) -> Result<u64, StoreError> {
        let run_id = run_id.to_owned();
        let lease = lease.clone();
        let records = RecordText::all(records);
        self.write(
            (run_id, lease, records),
            |(run_id, lease, records), db, conn| {
                Box::pin(db.append_records(conn, run_id, lease, records))
            },
        )
        .await
    }

    pub(super) async fn finish_run_with_records(
        &self,
        run_id: &str,
        owner: &str,
        records: &[RecordRow],
        end: &RunEnd,
        ended_at: i64,
    ) -> Result<(), StoreError> {
        let run_id = run_id.to_owned();
        let owner = owner.to_owned();
        let records = RecordText::all(records);
        let session_status = match end {
            RunEnd::Cancelled => SessionStatus::Cancelled,
            _ => SessionStatus::Completed,
        };
        let end = EndText::of(end, ended_at);
        self.write(
            (run_id, owner, records, end, session_status),
            |(run_id, owner, records, end, session_status), db, conn| {
                Box::pin(async move {
                    db.finish_run(conn, run_id, owner, end, *session_status)
                        .await?;
                    if !records.is_empty() {
                        db.insert_records(conn, run_id, records).await?;
                    }
                    Ok(())
                })
            },
        )
        .await
    }
}

impl Db {
    async fn insert_run(
        &self,
        conn: &mut AnyConnection,
        run: &RunText,
        status: RunStatus,
        lease: Option<&Lease>,
        end: Option<&EndText>,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO runs (id, tool, config_version, args, resumable, status, owner, \
             lease_until, started_at, ended_at, result, error, started_by, caller) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
        )
        .bind(&run.id)
        .bind(&run.tool)
        .bind(&run.config_version)
        .bind(&run.args)
        .bind(i64::from(run.resumable))
        .bind(status.as_str())
        .bind(lease.map(|l| l.owner.as_str()))
        .bind(lease.map(|l| l.until_ms))
        .bind(run.started_at)
        .bind(end.map(|e| e.at))
        .bind(end.and_then(|e| e.result.as_deref()))
        .bind(end.and_then(|e| e.error.as_deref()))
        .bind(run.started_by.as_deref())
        .bind(run.caller.as_deref())
        .execute(&mut *conn)
        .await
        .map_err(|e| {
            if is_unique_violation(&e) {
                StoreError::conflict("run", &run.id, "a run with this id already exists")
            } else {
                self.err(e)
            }
        })?;
        Ok(())
    }

    async fn append_records(
        &self,
        conn: &mut AnyConnection,
        run_id: &str,
        lease: &Lease,
        records: &[RecordText],
    ) -> Result<u64, StoreError> {
        // Checking the lease and renewing it is one statement: a process whose lease lapsed
        // (and whose run another replica marked interrupted) can no longer write to it.
        let renewed = sqlx::query(
            "UPDATE runs SET lease_until = $1 WHERE id = $2 AND status = 'running' AND owner = $3",
        )
        .bind(lease.until_ms)
        .bind(run_id)
        .bind(&lease.owner)
        .execute(&mut *conn)
        .await
        .map_err(|e| self.err(e))?;
        if renewed.rows_affected() == 0 {
            return Err(self.lease_lost(conn, run_id, &lease.owner).await);
        }
        self.insert_records(conn, run_id, records).await
    }

    /// Inserts what is not there yet; a record already stored under an index must be the
    /// same node (a retried batch), otherwise two writers disagree about the run.
    pub(super) async fn insert_records(
        &self,
        conn: &mut AnyConnection,
        run_id: &str,
        records: &[RecordText],
    ) -> Result<u64, StoreError> {
        let mut inserted = 0;
        for chunk in records.chunks(RECORDS_PER_INSERT) {
            let mut q = sqlx::query(AssertSqlSafe(insert_records_sql(chunk.len()))).bind(run_id);
            for r in chunk {
                q = q
                    .bind(r.index)
                    .bind(&r.node_id)
                    .bind(&r.node_type)
                    .bind(r.start_ms)
                    .bind(r.end_ms)
                    .bind(r.input.as_deref())
                    .bind(r.output.as_deref())
                    .bind(r.error.as_deref())
                    .bind(r.parent);
            }
            let done = q.execute(&mut *conn).await.map_err(|e| self.err(e))?;
            inserted += done.rows_affected();
        }
        if inserted < records.len() as u64 {
            self.check_duplicates(conn, run_id, records).await?;
        }
        Ok(inserted)
    }

    async fn check_duplicates(
        &self,
        conn: &mut AnyConnection,
        run_id: &str,
        records: &[RecordText],
    ) -> Result<(), StoreError> {
        let lo = records.iter().map(|r| r.index).min().unwrap_or(0);
        let hi = records.iter().map(|r| r.index).max().unwrap_or(0);
        let stored: HashMap<i64, (String, String)> = sqlx::query(
            "SELECT idx, node_id, node_type FROM records WHERE run_id = $1 AND idx BETWEEN $2 AND $3",
        )
        .bind(run_id)
        .bind(lo)
        .bind(hi)
        .fetch_all(&mut *conn)
        .await
        .map_err(|e| self.err(e))?
        .iter()
        .map(|row| Ok((get(row, "idx")?, (get(row, "node_id")?, get(row, "node_type")?))))
        .collect::<Result<_, StoreError>>()?;
        for r in records {
            match stored.get(&r.index) {
                Some((node, ty)) if *node == r.node_id && *ty == r.node_type => {}
                Some((node, _)) => {
                    return Err(StoreError::conflict(
                        "run",
                        run_id,
                        format!(
                            "history record {} is already stored for node {node:?}, not {:?}: \
                             two writers disagree about this run",
                            r.index, r.node_id
                        ),
                    ));
                }
                // Inserted by this batch (the batch itself repeats an index otherwise).
                None => {}
            }
        }
        Ok(())
    }

    /// Why a write fenced by `owner`'s lease matched no running run, read in the write's own
    /// transaction (the writes before it in its batch are not committed yet).
    pub(super) async fn lease_lost(
        &self,
        conn: &mut AnyConnection,
        run_id: &str,
        owner: &str,
    ) -> StoreError {
        let row = sqlx::query("SELECT status, owner FROM runs WHERE id = $1")
            .bind(run_id)
            .fetch_optional(&mut *conn)
            .await;
        let row = match row {
            Ok(Some(row)) => row,
            Ok(None) => return StoreError::not_found("run", run_id),
            Err(e) => return self.err(e),
        };
        let (status, other) = match (get::<String>(&row, "status"), get(&row, "owner")) {
            (Ok(status), Ok(other)) => match status.parse::<RunStatus>() {
                Ok(status) => (status, other),
                Err(e) => return e,
            },
            (Err(e), _) | (_, Err(e)) => return e,
        };
        let other: Option<String> = other;
        let why = match (status, &other) {
            (RunStatus::Running, Some(other)) => format!(
                "it is executed by {other:?}, not by {owner:?} (this process lost its lease)"
            ),
            (RunStatus::Waiting, _) => "it is waiting on a session, not executing".to_owned(),
            (status, _) => format!(
                "it has already ended as {status}{}",
                if status == RunStatus::Interrupted {
                    " (its lease lapsed, or its owner restarted)"
                } else {
                    ""
                }
            ),
        };
        StoreError::conflict("run", run_id, format!("cannot write to it: {why}"))
    }

    async fn finish_run(
        &self,
        conn: &mut AnyConnection,
        run_id: &str,
        owner: &str,
        end: &EndText,
        session_status: SessionStatus,
    ) -> Result<(), StoreError> {
        let done = sqlx::query(
            "UPDATE runs SET status = $1, ended_at = $2, result = $3, error = $4, owner = NULL, \
             lease_until = NULL WHERE id = $5 AND status = 'running' AND owner = $6",
        )
        .bind(end.status.as_str())
        .bind(end.at)
        .bind(end.result.as_deref())
        .bind(end.error.as_deref())
        .bind(run_id)
        .bind(owner)
        .execute(&mut *conn)
        .await
        .map_err(|e| self.err(e))?;
        if done.rows_affected() == 0 {
            return Err(self.lease_lost(conn, run_id, owner).await);
        }
        self.end_live_sessions(conn, run_id, session_status, end.at)
            .await
    }

    /// The session of a run that ends ends with it.
    async fn end_live_sessions(
        &self,
        conn: &mut AnyConnection,
        run_id: &str,
        status: SessionStatus,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE sessions SET status = $1, version = version + 1, state = NULL, updated_at = $2 \
             WHERE run_id = $3 AND status IN ('waiting', 'claimed')",
        )
        .bind(status.as_str())
        .bind(now_ms)
        .bind(run_id)
        .execute(&mut *conn)
        .await
        .map_err(|e| self.err(e))?;
        Ok(())
    }
}

/// `INSERT INTO records … VALUES (…), (…) ON CONFLICT DO NOTHING` for `rows` rows: the same
/// text for the same count, so that the driver's statement cache prepares it once.
fn insert_records_sql(rows: usize) -> String {
    let mut sql = String::with_capacity(140 + rows * 48);
    sql.push_str(
        "INSERT INTO records (run_id, idx, node_id, node_type, start_ms, end_ms, input, \
         output, error, parent) VALUES ",
    );
    for i in 0..rows {
        let p = i * 9 + 2;
        if i > 0 {
            sql.push_str(", ");
        }
        sql.push_str("($1");
        for k in p..p + 9 {
            sql.push_str(", $");
            sql.push_str(&k.to_string());
        }
        sql.push(')');
    }
    sql.push_str(" ON CONFLICT (run_id, idx) DO NOTHING");
    sql
}

impl SqlStore {
    pub(super) async fn save_finished_run(
        &self,
        run: &NewRun,
        records: &[RecordRow],
        end: &RunEnd,
        ended_at: i64,
    ) -> Result<(), StoreError> {
        let mut tx = self.begin().await?;
        let end = EndText::of(end, ended_at);
        let db = &self.db;
        db.insert_run(&mut tx, &RunText::of(run), end.status, None, Some(&end))
            .await?;
        db.insert_records(&mut tx, &run.id, &RecordText::all(records))
            .await?;
        self.commit(tx).await
    }

    pub(super) async fn save_finished_runs(&self, runs: &[FinishedRun]) -> Result<(), StoreError> {
        if runs.is_empty() {
            return Ok(());
        }
        let mut tx = self.begin().await?;
        let db = &self.db;
        for finished in runs {
            let end = EndText::of(&finished.end, finished.ended_at);
            let run = RunText::of(&finished.run);
            db.insert_run(&mut tx, &run, end.status, None, Some(&end))
                .await?;
            db.insert_records(&mut tx, &run.id, &RecordText::all(&finished.records))
                .await?;
        }
        self.commit(tx).await
    }

    pub(super) async fn heartbeat(&self, lease: &Lease) -> Result<u64, StoreError> {
        let done =
            sqlx::query("UPDATE runs SET lease_until = $1 WHERE status = 'running' AND owner = $2")
                .bind(lease.until_ms)
                .bind(&lease.owner)
                .execute(&self.pool)
                .await
                .map_err(|e| self.err(e))?;
        Ok(done.rows_affected())
    }

    pub(super) async fn take_over_run(
        &self,
        run_id: &str,
        lease: &Lease,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        let done = sqlx::query(
            "UPDATE runs SET status = 'running', owner = $1, lease_until = $2, ended_at = NULL, \
             error = NULL WHERE id = $3 AND status = 'interrupted' AND resumable <> 0",
        )
        .bind(&lease.owner)
        .bind(lease.until_ms.max(now_ms))
        .bind(run_id)
        .execute(&self.pool)
        .await
        .map_err(|e| self.err(e))?;
        if done.rows_affected() == 1 {
            return Ok(());
        }
        match self.get_run(run_id).await {
            Ok(run) => Err(StoreError::conflict(
                "run",
                run_id,
                format!(
                    "only an interrupted run of a resumable tool can be restarted; this one is {}{}",
                    run.summary.status,
                    if run.resumable {
                        ""
                    } else {
                        " and not resumable"
                    }
                ),
            )),
            Err(e) => Err(e),
        }
    }

    pub(super) async fn mark_interrupted(
        &self,
        owner: Option<&str>,
        now_ms: i64,
    ) -> Result<Vec<String>, StoreError> {
        let error = json!({
            "kind": "interrupted",
            "message": "the process executing this run stopped before it finished; its history \
                        up to that point is kept",
        });
        let mut tx = self.begin().await?;
        let rows = sqlx::query(
            "UPDATE runs SET status = 'interrupted', ended_at = $1, error = $3, owner = NULL, \
             lease_until = NULL WHERE status = 'running' AND (lease_until < $1 OR owner = $2) \
             RETURNING id",
        )
        .bind(now_ms)
        .bind(owner)
        .bind(rows::to_text(&error))
        .fetch_all(&mut *tx)
        .await
        .map_err(|e| self.err(e))?;
        let mut ids = rows
            .iter()
            .map(|r| get::<String>(r, "id"))
            .collect::<Result<Vec<_>, _>>()?;
        if !ids.is_empty() {
            // Only a claimed session belongs to a running run.
            sqlx::query(
                "UPDATE sessions SET status = 'interrupted', version = version + 1, state = NULL, \
                 updated_at = $1 WHERE status = 'claimed' AND EXISTS \
                 (SELECT 1 FROM runs r WHERE r.id = sessions.run_id AND r.status = 'interrupted')",
            )
            .bind(now_ms)
            .execute(&mut *tx)
            .await
            .map_err(|e| self.err(e))?;
        }
        self.commit(tx).await?;
        ids.sort();
        Ok(ids)
    }
}
