//! mcpflow's durable state: runs, their history records and the sessions of suspended runs,
//! behind one [`Store`] trait, on SQLite (the default) or PostgreSQL (shared by replicas).
//!
//! ```no_run
//! # async fn demo() -> Result<(), mcpflow_store::StoreError> {
//! use mcpflow_store::{Lease, NewRun, NewSession, RecordRow, RunEnd, Store, now_ms, open};
//! use serde_json::json;
//!
//! // `sqlite://state/mcpflow.db` (relative), `sqlite:///var/lib/mcpflow.db`, `sqlite::memory:`,
//! // or `postgres://user:pw@host/db?schema=mcpflow`. Migrations run here.
//! let store = open("sqlite://state/mcpflow.db").await?;
//!
//! // At start: runs this replica left `running` when it died are interrupted (history kept).
//! let me = "replica-a";
//! store.mark_interrupted(Some(me), now_ms()).await?;
//!
//! let lease = Lease::new(me, now_ms() + 30_000);
//! let run = NewRun {
//!     id: "run-1".into(),
//!     tool: "order".into(),
//!     config_version: "sha256:…".into(),
//!     args: json!({"item": 3}),
//!     started_at: now_ms(),
//!     resumable: true,
//!     started_by: None,
//!     caller: None,
//! };
//! store.create_run(&run, &lease).await?;
//! // One transaction per run step: what an upstream call returned is committed before the
//! // next node starts.
//! let step = RecordRow {
//!     index: 0, node_id: "price".into(), node_type: "mcp".into(),
//!     start_ms: 0.0, end_ms: 1.5, input: Some(json!({"item": 3})),
//!     output: Some(json!({"price": 12})), error: None, parent: None,
//! };
//! store.append_records("run-1", &lease, &[step]).await?;
//!
//! // An await node: suspend, hand the session id to the client.
//! let session = store
//!     .create_session(
//!         &NewSession {
//!             run_id: "run-1".into(),
//!             node_id: "confirm".into(),
//!             state: json!({"next": "confirm"}),
//!             input_schema: json!({"type": "object"}),
//!             created_at: now_ms(),
//!             expires_at: now_ms() + 3_600_000,
//!         },
//!         me,
//!         Some(10_000),
//!     )
//!     .await?;
//!
//! // Later, possibly in another replica: exactly one concurrent continue wins the claim.
//! let claimed = store
//!     .claim_session(&session.id, session.version, &Lease::new("replica-b", now_ms() + 30_000), now_ms())
//!     .await?;
//! store
//!     .finish_run(&claimed.run_id, "replica-b", &RunEnd::Succeeded(json!({"ok": true})), now_ms())
//!     .await?;
//! # Ok(()) }
//! ```
//!
//! # Invariants
//! - **One method, one transaction.** A call that fails (database gone mid-run, conflict)
//!   leaves nothing half-written. [`Store::append_records`] is the unit the engine commits
//!   per run step; it is idempotent on `(run_id, index)`, so a step whose commit outcome is
//!   unknown can be sent again.
//! - **Group commit; answered after COMMIT.** The writes of the session path (create, append
//!   to, finish a run; create, claim, update, release, cancel a session) are queued to a
//!   writer (one on SQLite, four on PostgreSQL) that runs up to 256 of them, from any
//!   callers, in one transaction and commits once: one fsync for the steps of many runs. A
//!   write that fails is undone alone and only its caller gets the error (the batch is rolled
//!   back and run again with each write in its own SAVEPOINT, the failed one's rolled back); a COMMIT that fails fails every write of the batch with its
//!   error (none applied). A caller is answered only after the COMMIT that made its write
//!   durable, so "one method, one transaction" still holds as far as any caller can see.
//!   The queue is bounded (callers wait for room), and a write whose caller stopped waiting
//!   before its batch began is not applied.
//! - **Run states.** `running` (exactly then `owner` and `lease_until` are set, a CHECK
//!   constraint enforces it) → `waiting` (suspended; exactly one live session) → `running`
//!   (claimed) … → `succeeded` | `failed` | `cancelled` | `interrupted` | `expired`. Final
//!   states never change.
//! - **Sessions.** `waiting` ⇄ `claimed` → `completed` | `cancelled` | `expired` |
//!   `interrupted`. A run has at most one live (waiting or claimed) session (a unique
//!   partial index). Every transition bumps `version` and is a single conditional UPDATE on
//!   the session row, so of concurrent claims exactly one matches; the others get
//!   [`StoreError::Conflict`]. Ended sessions keep a tombstone (no state) so that a late
//!   continue learns *why* it cannot continue. Session ids are 128 random bits from the OS.
//! - **Leases.** A running run belongs to the `owner` of a [`Lease`] until `lease_until`.
//!   Every write for the run (records, suspend, finish) is fenced by the owner and renews the
//!   lease; [`Store::heartbeat`] renews all of an owner's runs (call it at about a third of
//!   the lease). [`Store::mark_interrupted`] takes runs whose lease lapsed, plus the caller's
//!   own: run it at start with the replica's stable owner id, and periodically without one.
//!   A replica that restarts therefore never interrupts another live replica's runs, and a
//!   process that stalled past its lease finds its next write refused rather than writing
//!   into a run that was declared interrupted. Waiting runs have no owner: a crash never
//!   touches them.
//! - **Time** comes from the caller (`now_ms`, lease ends, expiries, in Unix milliseconds), so
//!   replicas and tests control it; [`now_ms`] is the wall clock.
//! - **JSON** is stored as text (object key order is preserved, which `jsonb` would not).
//!
//! # Backends
//! Both go through sqlx's `Any` driver with the same SQL; versioned migrations are embedded
//! (`migrations/sqlite`, `migrations/postgres`) and run at [`open`]. SQLite runs in WAL mode
//! with `synchronous=FULL`, foreign keys on and a 5 s busy timeout; its write transactions
//! start `IMMEDIATE`. PostgreSQL takes `?schema=NAME` (created if missing) to keep mcpflow's
//! tables in their own schema; the `max_live` session limit is exact on SQLite and soft under
//! concurrent creates on PostgreSQL.

mod audit;
mod error;
mod ids;
mod model;
mod sql;
mod store;
mod target;

use std::sync::Arc;

pub use audit::{AuditFilter, AuditRow, rfc3339};
pub use error::StoreError;
pub use ids::new_session_id;
pub use model::{
    DEFAULT_SESSION_TTL_MS, FinishedRun, Footprint, Lease, NewRun, NewSession, Purge, RecordRow,
    Run, RunEnd, RunFilter, RunStats, RunStatsRow, RunStatus, RunSummary, Session, SessionCounts,
    SessionFilter, SessionStatus, SessionUpdate, now_ms,
};
pub use sql::MAX_MESSAGE_BYTES as FLEET_MESSAGE_BYTES;
pub use store::{Store, StoreFuture};

/// Opens (creating if needed) the store at `url` and brings its schema up to date.
///
/// A database that cannot be reached fails with [`StoreError::Unavailable`] naming the URL
/// without its password.
pub async fn open(url: &str) -> Result<Arc<dyn Store>, StoreError> {
    Ok(Arc::new(sql::open_sql(url).await?))
}

/// Removes the password from a database URL, for logs and messages.
pub fn redact_url(url: &str) -> String {
    target::redact(url)
}
