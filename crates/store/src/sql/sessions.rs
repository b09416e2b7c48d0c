//! Sessions: a run suspended at an await, and the compare-and-set transitions that move it.
//!
//! Every transition is one conditional UPDATE on the session row (status and version in the
//! WHERE clause) followed by the matching change to its run, in one transaction. The UPDATE is
//! the arbiter: of two concurrent claims, the database lets exactly one match the row.

use serde_json::json;
use sqlx::AssertSqlSafe;

use super::queries::count;
use sqlx::AnyConnection;

use super::rows::{self, SESSION_BY_ID, SESSION_SELECT, get, session_returning};
use super::runs::RecordText;
use super::{Db, SqlStore, is_unique_violation};
use crate::StoreError;
use crate::ids::new_session_id;
use crate::model::{
    Lease, NewSession, RecordRow, Session, SessionCounts, SessionFilter, SessionStatus,
    SessionUpdate,
};

/// What a new session needs from its run, read as the run is suspended.
struct RunOfSession {
    tool: String,
    config_version: String,
    started_by: Option<String>,
}

impl SqlStore {
    pub(super) async fn create_session(
        &self,
        new: &NewSession,
        owner: &str,
        max_live: Option<u64>,
    ) -> Result<Session, StoreError> {
        let id = new_session_id()?;
        let row = SessionText {
            id: id.clone(),
            run_id: new.run_id.clone(),
            node_id: new.node_id.clone(),
            state: rows::to_text(&new.state),
            input_schema: rows::to_text(&new.input_schema),
            created_at: new.created_at,
            expires_at: new.expires_at,
        };
        let owner = owner.to_owned();
        let run = self
            .write(
                (row, owner, max_live),
                |(row, owner, max_live), db, conn| {
                    Box::pin(db.create_session(conn, row, owner, *max_live))
                },
            )
            .await?;
        Ok(Session {
            id,
            run_id: new.run_id.clone(),
            tool: run.tool,
            config_version: run.config_version,
            node_id: new.node_id.clone(),
            status: SessionStatus::Waiting,
            version: 1,
            state: new.state.clone(),
            input_schema: new.input_schema.clone(),
            created_at: new.created_at,
            updated_at: new.created_at,
            expires_at: new.expires_at,
            claimed_by: None,
            started_by: run.started_by,
        })
    }

    pub(super) async fn get_session(&self, id: &str) -> Result<Session, StoreError> {
        let row = self
            .fetch_optional(sqlx::query(SESSION_BY_ID).bind(id))
            .await?
            .ok_or_else(|| StoreError::not_found("session", id))?;
        rows::session(&row)
    }

    pub(super) async fn claim_session(
        &self,
        id: &str,
        expected_version: i64,
        lease: &Lease,
        now_ms: i64,
        records: &[RecordRow],
    ) -> Result<Session, StoreError> {
        let id = id.to_owned();
        let lease = lease.clone();
        let records = RecordText::all(records);
        self.write(
            (id, expected_version, lease, now_ms, records),
            |(id, expected_version, lease, now_ms, records), db, conn| {
                Box::pin(db.claim_session(conn, id, *expected_version, lease, *now_ms, records))
            },
        )
        .await
    }

    pub(super) async fn update_session(
        &self,
        id: &str,
        claimed_version: i64,
        update: &SessionUpdate,
    ) -> Result<Session, StoreError> {
        let data = (
            id.to_owned(),
            claimed_version,
            update.node_id.clone(),
            rows::to_text(&update.state),
            rows::to_text(&update.input_schema),
            update.updated_at,
            update.expires_at,
        );
        self.write(data, |data, db, conn| {
            let (id, claimed_version, node_id, state, input_schema, updated_at, expires_at) = data;
            Box::pin(async move {
                let row = sqlx::query(
                    "UPDATE sessions SET status = 'waiting', version = version + 1, node_id = $1, \
                     state = $2, input_schema = $3, updated_at = $4, expires_at = $5 \
                     WHERE id = $6 AND status = 'claimed' AND version = $7 RETURNING run_id",
                )
                .bind(node_id)
                .bind(state)
                .bind(input_schema)
                .bind(*updated_at)
                .bind(*expires_at)
                .bind(id)
                .bind(*claimed_version)
                .fetch_optional(&mut *conn)
                .await
                .map_err(|e| db.err(e))?;
                db.back_to_waiting(conn, row, id, *claimed_version).await
            })
        })
        .await
    }

    pub(super) async fn release_session(
        &self,
        id: &str,
        claimed_version: i64,
        now_ms: i64,
    ) -> Result<Session, StoreError> {
        let data = (id.to_owned(), claimed_version, now_ms);
        self.write(data, |(id, claimed_version, now_ms), db, conn| {
            Box::pin(async move {
                let row = sqlx::query(
                    "UPDATE sessions SET status = 'waiting', version = version + 1, updated_at = $1 \
                     WHERE id = $2 AND status = 'claimed' AND version = $3 RETURNING run_id",
                )
                .bind(*now_ms)
                .bind(id)
                .bind(*claimed_version)
                .fetch_optional(&mut *conn)
                .await
                .map_err(|e| db.err(e))?;
                db.back_to_waiting(conn, row, id, *claimed_version).await
            })
        })
        .await
    }

    pub(super) async fn cancel_session(
        &self,
        id: &str,
        now_ms: i64,
    ) -> Result<Session, StoreError> {
        self.write((id.to_owned(), now_ms), |(id, now_ms), db, conn| {
            Box::pin(db.cancel_session(conn, id, *now_ms))
        })
        .await
    }
}

/// A new session's row, its JSON already text.
struct SessionText {
    id: String,
    run_id: String,
    node_id: String,
    state: String,
    input_schema: String,
    created_at: i64,
    expires_at: i64,
}

impl Db {
    async fn create_session(
        &self,
        conn: &mut AnyConnection,
        new: &SessionText,
        owner: &str,
        max_live: Option<u64>,
    ) -> Result<RunOfSession, StoreError> {
        let run = sqlx::query(
            "UPDATE runs SET status = 'waiting', owner = NULL, lease_until = NULL \
             WHERE id = $1 AND status = 'running' AND owner = $2 \
             RETURNING tool, config_version, started_by",
        )
        .bind(&new.run_id)
        .bind(owner)
        .fetch_optional(&mut *conn)
        .await
        .map_err(|e| self.err(e))?;
        let Some(run) = run else {
            return Err(self.lease_lost(conn, &new.run_id, owner).await);
        };
        // The limit is checked by the INSERT itself: exact on SQLite (writers are serialised),
        // a soft limit on PostgreSQL under concurrent creates (READ COMMITTED).
        let insert = "INSERT INTO sessions (id, run_id, node_id, status, version, state, \
             input_schema, created_at, updated_at, expires_at) \
             SELECT $1, $2, $3, 'waiting', 1, $4, $5, $6, $6, $7";
        let limited;
        let sql = match max_live {
            Some(_) => {
                limited = format!(
                    "{insert} WHERE (SELECT COUNT(*) FROM sessions \
                     WHERE status IN ('waiting', 'claimed')) < $8"
                );
                limited.as_str()
            }
            None => insert,
        };
        let mut q = sqlx::query(AssertSqlSafe(sql))
            .bind(&new.id)
            .bind(&new.run_id)
            .bind(&new.node_id)
            .bind(&new.state)
            .bind(&new.input_schema)
            .bind(new.created_at)
            .bind(new.expires_at);
        if let Some(limit) = max_live {
            q = q.bind(i64::try_from(limit).unwrap_or(i64::MAX));
        }
        let done = q.execute(&mut *conn).await.map_err(|e| {
            if is_unique_violation(&e) {
                StoreError::conflict("run", &new.run_id, "it already has a live session")
            } else {
                self.err(e)
            }
        })?;
        if done.rows_affected() == 0 {
            return Err(StoreError::LimitReached {
                limit: max_live.unwrap_or(0),
            });
        }
        Ok(RunOfSession {
            tool: get(&run, "tool")?,
            config_version: get(&run, "config_version")?,
            started_by: get(&run, "started_by")?,
        })
    }

    async fn session_in(&self, conn: &mut AnyConnection, id: &str) -> Result<Session, StoreError> {
        let row = sqlx::query(SESSION_BY_ID)
            .bind(id)
            .fetch_optional(&mut *conn)
            .await
            .map_err(|e| self.err(e))?
            .ok_or_else(|| StoreError::not_found("session", id))?;
        rows::session(&row)
    }

    async fn claim_session(
        &self,
        conn: &mut AnyConnection,
        id: &str,
        expected_version: i64,
        lease: &Lease,
        now_ms: i64,
        records: &[RecordText],
    ) -> Result<Session, StoreError> {
        let claimed = sqlx::query(CLAIM_SQL)
            .bind(&lease.owner)
            .bind(now_ms)
            .bind(id)
            .bind(expected_version)
            .fetch_optional(&mut *conn)
            .await
            .map_err(|e| self.err(e))?;
        let Some(claimed) = claimed else {
            return Err(self
                .why_not_claimable(conn, id, expected_version, now_ms)
                .await);
        };
        let run_id: String = get(&claimed, "run_id")?;
        let run = self.run_resumes(conn, &run_id, lease).await?;
        if !records.is_empty() {
            self.insert_records(conn, &run_id, records).await?;
        }
        rows::session_of_run(&claimed, &run)
    }

    /// A claimed session's run executes again, under the claimer's lease; returns what a
    /// session shows of its run.
    async fn run_resumes(
        &self,
        conn: &mut AnyConnection,
        run_id: &str,
        lease: &Lease,
    ) -> Result<sqlx::any::AnyRow, StoreError> {
        let run = sqlx::query(
            "UPDATE runs SET status = 'running', owner = $1, lease_until = $2 \
             WHERE id = $3 AND status = 'waiting' RETURNING tool, config_version, started_by",
        )
        .bind(&lease.owner)
        .bind(lease.until_ms)
        .bind(run_id)
        .fetch_optional(&mut *conn)
        .await
        .map_err(|e| self.err(e))?;
        run.ok_or_else(|| not_as_its_session_says(run_id, "waiting"))
    }

    /// Ends an update of a claimed session that put it back to waiting: `row` is what the
    /// compare-and-set `UPDATE … RETURNING run_id` gave (none: the claim was lost), and the run
    /// is marked waiting again in the same transaction.
    async fn back_to_waiting(
        &self,
        conn: &mut AnyConnection,
        row: Option<sqlx::any::AnyRow>,
        id: &str,
        claimed_version: i64,
    ) -> Result<Session, StoreError> {
        let Some(row) = row else {
            return Err(self.why_not_claimed(conn, id, claimed_version).await);
        };
        let run_id: String = get(&row, "run_id")?;
        self.run_waits(conn, &run_id).await?;
        self.session_in(conn, id).await
    }

    /// A session goes back to waiting: its run no longer executes anywhere.
    async fn run_waits(&self, conn: &mut AnyConnection, run_id: &str) -> Result<(), StoreError> {
        let done = sqlx::query(
            "UPDATE runs SET status = 'waiting', owner = NULL, lease_until = NULL \
             WHERE id = $1 AND status = 'running'",
        )
        .bind(run_id)
        .execute(&mut *conn)
        .await
        .map_err(|e| self.err(e))?;
        expect_one(done.rows_affected(), run_id, "running")
    }

    async fn why_not_claimable(
        &self,
        conn: &mut AnyConnection,
        id: &str,
        expected: i64,
        now_ms: i64,
    ) -> StoreError {
        let s = match self.session_in(conn, id).await {
            Ok(s) => s,
            Err(e) => return e,
        };
        match s.status {
            SessionStatus::Waiting if s.expires_at <= now_ms => StoreError::Expired {
                id: id.to_owned(),
                expired_at_ms: s.expires_at,
            },
            SessionStatus::Waiting => StoreError::conflict(
                "session",
                id,
                format!(
                    "it changed since it was read (version {} now, {expected} expected): read it \
                     again and retry",
                    s.version
                ),
            ),
            SessionStatus::Claimed => {
                StoreError::conflict("session", id, "another request is already continuing it")
            }
            SessionStatus::Expired => StoreError::Expired {
                id: id.to_owned(),
                expired_at_ms: s.expires_at,
            },
            ended => StoreError::conflict(
                "session",
                id,
                format!("it has ended ({ended}) and cannot be continued"),
            ),
        }
    }

    /// Why a transition that needs the session claimed at `version` matched nothing.
    async fn why_not_claimed(
        &self,
        conn: &mut AnyConnection,
        id: &str,
        version: i64,
    ) -> StoreError {
        match self.session_in(conn, id).await {
            Ok(s) => StoreError::conflict(
                "session",
                id,
                format!(
                    "it is not claimed at version {version} (it is {} at version {}): the claim \
                     was lost",
                    s.status, s.version
                ),
            ),
            Err(e) => e,
        }
    }

    async fn cancel_session(
        &self,
        conn: &mut AnyConnection,
        id: &str,
        now_ms: i64,
    ) -> Result<Session, StoreError> {
        let row = sqlx::query(
            "UPDATE sessions SET status = 'cancelled', version = version + 1, state = NULL, \
             updated_at = $1 WHERE id = $2 AND status = 'waiting' RETURNING run_id",
        )
        .bind(now_ms)
        .bind(id)
        .fetch_optional(&mut *conn)
        .await
        .map_err(|e| self.err(e))?;
        let Some(row) = row else {
            return Err(match self.session_in(conn, id).await {
                Ok(s) if s.status == SessionStatus::Claimed => StoreError::conflict(
                    "session",
                    id,
                    "a continue is running it; cancel once that call has returned",
                ),
                Ok(s) if s.status == SessionStatus::Expired => StoreError::Expired {
                    id: id.to_owned(),
                    expired_at_ms: s.expires_at,
                },
                Ok(s) => StoreError::conflict(
                    "session",
                    id,
                    format!("it has already ended ({})", s.status),
                ),
                Err(e) => e,
            });
        };
        let run_id: String = get(&row, "run_id")?;
        sqlx::query(
            "UPDATE runs SET status = 'cancelled', ended_at = $1 WHERE id = $2 AND status = 'waiting'",
        )
        .bind(now_ms)
        .bind(&run_id)
        .execute(&mut *conn)
        .await
        .map_err(|e| self.err(e))?;
        self.session_in(conn, id).await
    }
}

impl SqlStore {
    pub(super) async fn expire_sessions(&self, now_ms: i64) -> Result<u64, StoreError> {
        let error = json!({
            "kind": "expired",
            "message": "the client did not continue the run before its session expired",
        });
        let mut tx = self.begin().await?;
        // Sessions first: their rows are what a concurrent claim contends on, so a claim
        // either wins before this statement or sees the session expired after it.
        let expired = sqlx::query(
            "UPDATE sessions SET status = 'expired', version = version + 1, state = NULL, \
             updated_at = $1 WHERE status = 'waiting' AND expires_at <= $1",
        )
        .bind(now_ms)
        .execute(&mut *tx)
        .await
        .map_err(|e| self.err(e))?
        .rows_affected();
        if expired > 0 {
            // A waiting run without a live session is a run whose session just expired.
            sqlx::query(
                "UPDATE runs SET status = 'expired', ended_at = $1, error = $2 \
                 WHERE status = 'waiting' AND NOT EXISTS (SELECT 1 FROM sessions s \
                 WHERE s.run_id = runs.id AND s.status IN ('waiting', 'claimed'))",
            )
            .bind(now_ms)
            .bind(rows::to_text(&error))
            .execute(&mut *tx)
            .await
            .map_err(|e| self.err(e))?;
        }
        self.commit(tx).await?;
        Ok(expired)
    }

    pub(super) async fn count_sessions(&self) -> Result<SessionCounts, StoreError> {
        let found = sqlx::query("SELECT status, COUNT(*) AS n FROM sessions GROUP BY status")
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        let mut counts = SessionCounts::default();
        for row in &found {
            let status: SessionStatus = get::<String>(row, "status")?.parse()?;
            counts.add(status, count(get(row, "n")?));
        }
        Ok(counts)
    }

    pub(super) async fn list_sessions(
        &self,
        filter: &SessionFilter,
    ) -> Result<Vec<Session>, StoreError> {
        let sql = super::page_sql(
            SESSION_SELECT,
            &[
                ("s.status", filter.status.is_some()),
                ("s.run_id", filter.run_id.is_some()),
            ],
            "s.created_at DESC, s.id DESC",
        );
        let mut q = sqlx::query(AssertSqlSafe(sql));
        if let Some(status) = filter.status {
            q = q.bind(status.as_str());
        }
        if let Some(run_id) = &filter.run_id {
            q = q.bind(run_id.as_str());
        }
        let found = q
            .bind(i64::from(filter.limit))
            .bind(i64::from(filter.offset))
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        found.iter().map(rows::session).collect()
    }
}

/// A live session and its run change together; a run in another state means the two
/// disagree.
fn expect_one(affected: u64, run_id: &str, expected: &str) -> Result<(), StoreError> {
    if affected == 1 {
        Ok(())
    } else {
        Err(not_as_its_session_says(run_id, expected))
    }
}

fn not_as_its_session_says(run_id: &str, expected: &str) -> StoreError {
    StoreError::Corrupt(format!(
        "run {run_id:?} is not {expected} although its session said so"
    ))
}

/// The claim's compare-and-set, returning the session as claimed (a constant, so that its
/// text is not built per call).
const CLAIM_SQL: &str = concat!(
    "UPDATE sessions SET status = 'claimed', version = version + 1, claimed_by = $1, \
     updated_at = $2 WHERE id = $3 AND status = 'waiting' AND version = $4 \
     AND expires_at > $2 RETURNING ",
    session_returning!()
);
