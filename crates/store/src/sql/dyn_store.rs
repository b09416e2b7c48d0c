//! `Store` for `SqlStore`: each method boxes the inherent async fn of the same name.

use futures::future::BoxFuture;

use super::SqlStore;
use crate::audit::{AuditFilter, AuditRow};
use crate::model::{
    FinishedRun, Footprint, Lease, NewRun, NewSession, Purge, RecordRow, Run, RunEnd, RunFilter,
    RunStats, RunSummary, Session, SessionCounts, SessionFilter, SessionUpdate,
};
use crate::store::{Store, StoreFuture};
use crate::target::Backend;

impl Store for SqlStore {
    fn backend(&self) -> &'static str {
        match self.db.backend {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }

    fn url(&self) -> &str {
        &self.db.url
    }

    fn save_config<'a>(
        &'a self,
        version: &'a str,
        source: &'a str,
        files: Option<&'a str>,
        now_ms: i64,
    ) -> StoreFuture<'a, ()> {
        Box::pin(SqlStore::save_config(self, version, source, files, now_ms))
    }

    fn get_config<'a>(&'a self, version: &'a str) -> StoreFuture<'a, String> {
        Box::pin(SqlStore::get_config(self, version))
    }

    fn notify<'a>(&'a self, message: &'a str) -> StoreFuture<'a, bool> {
        Box::pin(SqlStore::notify(self, message))
    }

    fn listen(&self) -> StoreFuture<'_, Option<tokio::sync::broadcast::Receiver<String>>> {
        Box::pin(SqlStore::listen(self))
    }

    fn get_config_files<'a>(&'a self, version: &'a str) -> StoreFuture<'a, Option<String>> {
        Box::pin(SqlStore::get_config_files(self, version))
    }

    fn purge_configs<'a>(
        &'a self,
        current: &'a str,
        now_ms: i64,
        idle_before_ms: i64,
    ) -> StoreFuture<'a, u64> {
        Box::pin(SqlStore::purge_configs(
            self,
            current,
            now_ms,
            idle_before_ms,
        ))
    }

    fn create_run<'a>(&'a self, run: &'a NewRun, lease: &'a Lease) -> StoreFuture<'a, ()> {
        Box::pin(SqlStore::create_run(self, run, lease))
    }

    fn append_records<'a>(
        &'a self,
        run_id: &'a str,
        lease: &'a Lease,
        records: &'a [RecordRow],
    ) -> StoreFuture<'a, u64> {
        Box::pin(SqlStore::append_records(self, run_id, lease, records))
    }

    fn finish_run_with_records<'a>(
        &'a self,
        run_id: &'a str,
        owner: &'a str,
        records: &'a [RecordRow],
        end: &'a RunEnd,
        ended_at: i64,
    ) -> StoreFuture<'a, ()> {
        Box::pin(SqlStore::finish_run_with_records(
            self, run_id, owner, records, end, ended_at,
        ))
    }

    fn save_finished_run<'a>(
        &'a self,
        run: &'a NewRun,
        records: &'a [RecordRow],
        end: &'a RunEnd,
        ended_at: i64,
    ) -> StoreFuture<'a, ()> {
        Box::pin(SqlStore::save_finished_run(
            self, run, records, end, ended_at,
        ))
    }

    fn save_finished_runs<'a>(&'a self, runs: &'a [FinishedRun]) -> StoreFuture<'a, ()> {
        Box::pin(SqlStore::save_finished_runs(self, runs))
    }

    fn take_over_run<'a>(
        &'a self,
        run_id: &'a str,
        lease: &'a Lease,
        now_ms: i64,
    ) -> StoreFuture<'a, ()> {
        Box::pin(SqlStore::take_over_run(self, run_id, lease, now_ms))
    }

    fn heartbeat<'a>(&'a self, lease: &'a Lease) -> StoreFuture<'a, u64> {
        Box::pin(SqlStore::heartbeat(self, lease))
    }

    fn mark_interrupted<'a>(
        &'a self,
        owner: Option<&'a str>,
        now_ms: i64,
    ) -> StoreFuture<'a, Vec<String>> {
        Box::pin(SqlStore::mark_interrupted(self, owner, now_ms))
    }

    fn get_run<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Run> {
        Box::pin(SqlStore::get_run(self, id))
    }

    fn get_records<'a>(&'a self, run_id: &'a str) -> StoreFuture<'a, Vec<RecordRow>> {
        Box::pin(SqlStore::get_records(self, run_id))
    }

    fn list_runs<'a>(&'a self, filter: &'a RunFilter) -> StoreFuture<'a, Vec<RunSummary>> {
        Box::pin(SqlStore::list_runs(self, filter))
    }

    fn run_ids_with_prefix<'a>(
        &'a self,
        prefix: &'a str,
        limit: u32,
    ) -> StoreFuture<'a, Vec<String>> {
        Box::pin(SqlStore::run_ids_with_prefix(self, prefix, limit))
    }

    fn run_stats(&self) -> StoreFuture<'_, RunStats> {
        Box::pin(SqlStore::run_stats(self))
    }

    fn purge_runs<'a>(&'a self, purge: &'a Purge) -> StoreFuture<'a, u64> {
        Box::pin(SqlStore::purge_runs(self, purge))
    }

    fn create_session<'a>(
        &'a self,
        session: &'a NewSession,
        owner: &'a str,
        max_live: Option<u64>,
    ) -> StoreFuture<'a, Session> {
        Box::pin(SqlStore::create_session(self, session, owner, max_live))
    }

    fn get_session<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Session> {
        Box::pin(SqlStore::get_session(self, id))
    }

    fn claim_session_with_records<'a>(
        &'a self,
        id: &'a str,
        expected_version: i64,
        lease: &'a Lease,
        now_ms: i64,
        records: &'a [RecordRow],
    ) -> StoreFuture<'a, Session> {
        Box::pin(SqlStore::claim_session(
            self,
            id,
            expected_version,
            lease,
            now_ms,
            records,
        ))
    }

    fn update_session<'a>(
        &'a self,
        id: &'a str,
        claimed_version: i64,
        update: &'a SessionUpdate,
    ) -> StoreFuture<'a, Session> {
        Box::pin(SqlStore::update_session(self, id, claimed_version, update))
    }

    fn release_session<'a>(
        &'a self,
        id: &'a str,
        claimed_version: i64,
        now_ms: i64,
    ) -> StoreFuture<'a, Session> {
        Box::pin(SqlStore::release_session(self, id, claimed_version, now_ms))
    }

    fn cancel_session<'a>(&'a self, id: &'a str, now_ms: i64) -> StoreFuture<'a, Session> {
        Box::pin(SqlStore::cancel_session(self, id, now_ms))
    }

    fn expire_sessions(&self, now_ms: i64) -> StoreFuture<'_, u64> {
        Box::pin(SqlStore::expire_sessions(self, now_ms))
    }

    fn count_sessions(&self) -> StoreFuture<'_, SessionCounts> {
        Box::pin(SqlStore::count_sessions(self))
    }

    fn list_sessions<'a>(&'a self, filter: &'a SessionFilter) -> StoreFuture<'a, Vec<Session>> {
        Box::pin(SqlStore::list_sessions(self, filter))
    }

    fn append_audit<'a>(&'a self, rows: &'a [AuditRow]) -> StoreFuture<'a, ()> {
        Box::pin(SqlStore::append_audit(self, rows))
    }

    fn list_audit<'a>(&'a self, filter: &'a AuditFilter) -> StoreFuture<'a, Vec<AuditRow>> {
        Box::pin(SqlStore::list_audit(self, filter))
    }

    fn purge_audit(&self, before_ms: i64, batch: u32) -> StoreFuture<'_, u64> {
        Box::pin(SqlStore::purge_audit(self, before_ms, batch))
    }

    fn footprint(&self) -> StoreFuture<'_, Footprint> {
        Box::pin(SqlStore::footprint(self))
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.pool.close())
    }
}
