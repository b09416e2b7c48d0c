//! The `Store` trait: the one interface both backends (SQLite, PostgreSQL) implement.

use futures::future::BoxFuture;

use crate::StoreError;
use crate::audit::{AuditFilter, AuditRow};
use crate::model::{
    FinishedRun, Footprint, Lease, NewRun, NewSession, Purge, RecordRow, Run, RunEnd, RunFilter,
    RunStats, RunSummary, Session, SessionCounts, SessionFilter, SessionUpdate,
};

/// The result of every store operation.
pub type StoreFuture<'a, T> = BoxFuture<'a, Result<T, StoreError>>;

/// Durable runs, history records and sessions. Every method is one transaction: it happens
/// entirely or not at all. See the crate documentation for the invariants.
///
/// Methods that change a running run take the caller's [`Lease`] (or its owner) and fail with
/// [`StoreError::Conflict`] when the caller no longer owns the run, so a process that lost its
/// lease cannot write over a run another replica has already marked `interrupted`.
pub trait Store: Send + Sync + std::fmt::Debug {
    /// `"sqlite"` or `"postgres"`.
    fn backend(&self) -> &'static str;
    /// The URL it was opened with, password removed.
    fn url(&self) -> &str;

    // ---- config sources runs are pinned to ----

    /// Keeps the config a run may be resumed against: `source`, the config file's text as
    /// written, and `files`, every file it was loaded from (the store does not read it: JSON
    /// to the binary), so that any process can compile that version again. Idempotent per
    /// version; saving it again pins it at `now_ms` (see [`Store::purge_configs`]).
    fn save_config<'a>(
        &'a self,
        version: &'a str,
        source: &'a str,
        files: Option<&'a str>,
        now_ms: i64,
    ) -> StoreFuture<'a, ()>;
    fn get_config<'a>(&'a self, version: &'a str) -> StoreFuture<'a, String>;
    /// The files of a config version (`None`: stored before they were kept); `NotFound` when
    /// the version is not kept.
    fn get_config_files<'a>(&'a self, version: &'a str) -> StoreFuture<'a, Option<String>>;
    /// Pins `current` (the version this process serves) at `now_ms`, and deletes every other
    /// version that no run references and that nobody pinned since `idle_before_ms` (so a
    /// version a replica serves but has not run yet is kept); returns how many were deleted.
    fn purge_configs<'a>(
        &'a self,
        current: &'a str,
        now_ms: i64,
        idle_before_ms: i64,
    ) -> StoreFuture<'a, u64>;

    // ---- runs ----

    /// Starts a run as `running` under `lease`. A duplicate id is a `Conflict`.
    fn create_run<'a>(&'a self, run: &'a NewRun, lease: &'a Lease) -> StoreFuture<'a, ()>;

    /// Appends history records of a running run and renews the lease, as one transaction
    /// (one run step). Idempotent on `(run_id, index)`: records already stored are skipped,
    /// unless they name a different node (`Conflict`). Returns how many were new.
    fn append_records<'a>(
        &'a self,
        run_id: &'a str,
        lease: &'a Lease,
        records: &'a [RecordRow],
    ) -> StoreFuture<'a, u64>;

    /// Ends a running run owned by `owner`; its live session ends with it (`completed`, or
    /// `cancelled` for [`RunEnd::Cancelled`]).
    fn finish_run<'a>(
        &'a self,
        run_id: &'a str,
        owner: &'a str,
        end: &'a RunEnd,
        ended_at: i64,
    ) -> StoreFuture<'a, ()> {
        self.finish_run_with_records(run_id, owner, &[], end, ended_at)
    }

    /// [`Store::finish_run`] with the run's last history records (appended as
    /// [`Store::append_records`] does), as one transaction: the records buffered since the
    /// last committed step land with the run's end, one commit instead of two.
    fn finish_run_with_records<'a>(
        &'a self,
        run_id: &'a str,
        owner: &'a str,
        records: &'a [RecordRow],
        end: &'a RunEnd,
        ended_at: i64,
    ) -> StoreFuture<'a, ()>;

    /// Writes a run that could neither wait nor resume, with all its records, at once, after
    /// it ended (off the hot path).
    fn save_finished_run<'a>(
        &'a self,
        run: &'a NewRun,
        records: &'a [RecordRow],
        end: &'a RunEnd,
        ended_at: i64,
    ) -> StoreFuture<'a, ()>;

    /// Writes finished runs as [`Store::save_finished_run`] does, all in one transaction: one
    /// commit (one fsync) for many runs. Any failure writes none of them.
    fn save_finished_runs<'a>(&'a self, runs: &'a [FinishedRun]) -> StoreFuture<'a, ()>;

    /// Restarts an `interrupted` run of a resumable tool under `lease` (it becomes `running`
    /// again, history kept); any other run is a `Conflict`.
    fn take_over_run<'a>(
        &'a self,
        run_id: &'a str,
        lease: &'a Lease,
        now_ms: i64,
    ) -> StoreFuture<'a, ()>;

    /// Renews the lease on every run `lease.owner` is executing; returns how many.
    fn heartbeat<'a>(&'a self, lease: &'a Lease) -> StoreFuture<'a, u64>;

    /// Marks `interrupted` the running runs whose lease lapsed before `now_ms`, and those of
    /// `owner` whatever their lease (a restarted replica reclaiming its own). Their history is
    /// kept; a claimed session of theirs becomes `interrupted`. Returns their ids, sorted.
    fn mark_interrupted<'a>(
        &'a self,
        owner: Option<&'a str>,
        now_ms: i64,
    ) -> StoreFuture<'a, Vec<String>>;

    fn get_run<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Run>;
    /// A run's history in index order (`NotFound` if the run does not exist).
    fn get_records<'a>(&'a self, run_id: &'a str) -> StoreFuture<'a, Vec<RecordRow>>;
    fn list_runs<'a>(&'a self, filter: &'a RunFilter) -> StoreFuture<'a, Vec<RunSummary>>;
    /// Ids of runs that start with `prefix`, sorted, at most `limit` (what a user typed of a
    /// run id: `mcpflow runs show 3f2a`).
    fn run_ids_with_prefix<'a>(
        &'a self,
        prefix: &'a str,
        limit: u32,
    ) -> StoreFuture<'a, Vec<String>>;
    fn run_stats(&self) -> StoreFuture<'_, RunStats>;
    /// Deletes ended runs (with their records and session tombstones) as `purge` says, at most
    /// `purge.batch`; returns how many.
    fn purge_runs<'a>(&'a self, purge: &'a Purge) -> StoreFuture<'a, u64>;

    // ---- sessions ----

    /// Suspends a running run owned by `owner` at an await: the run becomes `waiting` and a
    /// session with a new unguessable id and version 1 holds what is needed to resume it.
    /// With `max_live`, fails with `LimitReached` when that many sessions are live.
    fn create_session<'a>(
        &'a self,
        session: &'a NewSession,
        owner: &'a str,
        max_live: Option<u64>,
    ) -> StoreFuture<'a, Session>;

    /// A session in any status (ended ones keep a tombstone without state).
    fn get_session<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Session>;

    /// Compare-and-set: takes a session `waiting` at `expected_version` and not expired at
    /// `now_ms`, and hands its run to `lease`. Of concurrent claims exactly one succeeds; the
    /// others get `Conflict` (or `Expired`, `NotFound`). Returns the session as claimed (its
    /// version bumped).
    fn claim_session<'a>(
        &'a self,
        id: &'a str,
        expected_version: i64,
        lease: &'a Lease,
        now_ms: i64,
    ) -> StoreFuture<'a, Session> {
        self.claim_session_with_records(id, expected_version, lease, now_ms, &[])
    }

    /// [`Store::claim_session`], then `records` appended to the claimed run (as
    /// [`Store::append_records`] does), as one transaction: a continue's input is committed
    /// with its claim, one commit instead of two. The claimed run's records do not change
    /// while its session waits, so a caller may read them before claiming; the claim's
    /// version check tells it when they changed.
    fn claim_session_with_records<'a>(
        &'a self,
        id: &'a str,
        expected_version: i64,
        lease: &'a Lease,
        now_ms: i64,
        records: &'a [RecordRow],
    ) -> StoreFuture<'a, Session>;

    /// The resumed run suspends again under the same session id: the claimed session goes back
    /// to `waiting` with new state, and the run to `waiting`.
    fn update_session<'a>(
        &'a self,
        id: &'a str,
        claimed_version: i64,
        update: &'a SessionUpdate,
    ) -> StoreFuture<'a, Session>;

    /// Gives a claim back unchanged (the continue failed before the run moved on).
    fn release_session<'a>(
        &'a self,
        id: &'a str,
        claimed_version: i64,
        now_ms: i64,
    ) -> StoreFuture<'a, Session>;

    /// Cancels a waiting session and its run. A claimed one is a `Conflict`.
    fn cancel_session<'a>(&'a self, id: &'a str, now_ms: i64) -> StoreFuture<'a, Session>;

    /// Expires the waiting sessions whose time is up at `now_ms`, and their runs; returns how
    /// many sessions.
    fn expire_sessions(&self, now_ms: i64) -> StoreFuture<'_, u64>;

    fn count_sessions(&self) -> StoreFuture<'_, SessionCounts>;
    fn list_sessions<'a>(&'a self, filter: &'a SessionFilter) -> StoreFuture<'a, Vec<Session>>;

    // ---- the audit log ----

    /// Appends audited calls, all in one transaction (the server writes them in batches, off
    /// the request path).
    fn append_audit<'a>(&'a self, rows: &'a [AuditRow]) -> StoreFuture<'a, ()>;
    /// Audited calls, the newest first.
    fn list_audit<'a>(&'a self, filter: &'a AuditFilter) -> StoreFuture<'a, Vec<AuditRow>>;
    /// Deletes audited calls older than `before_ms`, the oldest first, at most `batch`;
    /// returns how many (call again while it returns `batch`).
    fn purge_audit(&self, before_ms: i64, batch: u32) -> StoreFuture<'_, u64>;

    // ---- the fleet's messages ----

    /// Sends `message` (at most [`FLEET_MESSAGE_BYTES`](crate::FLEET_MESSAGE_BYTES)) to every
    /// process listening on this store, this one included, as PostgreSQL's NOTIFY: delivered
    /// at most once, to those listening when it is sent. `Ok(false)`: this backend has no
    /// fleet (SQLite).
    fn notify<'a>(&'a self, message: &'a str) -> StoreFuture<'a, bool>;
    /// The messages sent on this store from now on (PostgreSQL's LISTEN, one connection per
    /// process, shared); `None` on a backend without a fleet.
    fn listen(&self) -> StoreFuture<'_, Option<tokio::sync::broadcast::Receiver<String>>>;

    // ---- the store itself ----

    /// Bytes on disk per table (with its indexes).
    fn footprint(&self) -> StoreFuture<'_, Footprint>;

    /// Waits for in-flight calls and closes every connection. Later calls fail as
    /// `Unavailable`.
    fn close(&self) -> BoxFuture<'_, ()>;
}
