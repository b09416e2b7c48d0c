//! The background upkeep of a process that serves durable runs: at start, the runs a stopped
//! process left running are marked `interrupted` (and the resumable ones restarted); then, on
//! a timer, this process's leases are renewed, lapsed sessions expired, the runs of dead
//! replicas swept the same way, finished runs (and audit rows) beyond the retention
//! (`store.retention`) deleted, and the config versions no run references any more dropped.
//! The binary only starts it.

use std::time::{Duration, Instant};

use mcpflow_store::{Purge, now_ms};
use tokio::task::JoinHandle;

use super::Durability;
use crate::Engine;

/// Retention is applied on the first round and then at most this often: what it deletes is
/// days old, and each pass reads the newest `maxRuns` index entries.
const PURGE_EVERY: Duration = Duration::from_secs(60);
/// Runs deleted per transaction, and transactions per pass: a store far over its retention
/// (a first start with it) is brought down over a few passes, never in one long lock.
const PURGE_BATCH: u32 = 500;
const PURGE_BATCHES_PER_PASS: usize = 20;
/// An interrupted run of a resumable tool is restarted by the round that marks it; one whose
/// restart failed is kept this long whatever the count, for an operator to look at.
const RESTART_WINDOW_MS: i64 = 10 * 60 * 1000;
/// A config version no run references is dropped once no process has served it for this
/// long: every serving process pins its own on each retention pass (once a minute), so a
/// version a replica serves and has not run yet is never dropped under it.
const CONFIG_IDLE_MS: i64 = 10 * 60 * 1000;

impl Engine {
    /// At start: marks `interrupted` the runs this replica (same owner) or a dead one left
    /// running, and restarts those of resumable tools.
    pub async fn recover(&self) {
        let Some(d) = self.durability() else { return };
        match d.store.mark_interrupted(Some(&d.owner), now_ms()).await {
            Ok(ids) => self.restart_resumable(ids).await,
            Err(e) => tracing::warn!(error = %e, "could not mark interrupted runs"),
        }
    }

    /// The background upkeep, until the returned task is aborted; `None` without a store.
    pub fn spawn_upkeep(&self) -> Option<JoinHandle<()>> {
        let tick = tick_of(self.durability()?);
        let engine = self.clone();
        Some(tokio::spawn(async move {
            let mut timer = tokio::time::interval(tick);
            timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut purged: Option<Instant> = None;
            loop {
                timer.tick().await;
                engine.upkeep_once().await;
                if purged.is_none_or(|at| at.elapsed() >= PURGE_EVERY) {
                    purged = Some(Instant::now());
                    if let Some(d) = engine.durability() {
                        purge_finished(d).await;
                    }
                }
            }
        }))
    }

    /// One round of upkeep.
    async fn upkeep_once(&self) {
        let Some(d) = self.durability() else { return };
        if let Err(e) = d.store.heartbeat(&d.lease()).await {
            tracing::warn!(error = %e, "could not renew run leases");
        }
        match d.store.expire_sessions(now_ms()).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(count = n, "sessions expired"),
            Err(e) => tracing::warn!(error = %e, "could not expire sessions"),
        }
        match d.store.mark_interrupted(None, now_ms()).await {
            Ok(ids) => self.restart_resumable(ids).await,
            Err(e) => tracing::warn!(error = %e, "could not mark interrupted runs"),
        }
    }

    /// Restarts, each on a task of its own, the interrupted runs `ids` of resumable tools.
    async fn restart_resumable(&self, ids: Vec<String>) {
        let Some(d) = self.durability() else { return };
        if !ids.is_empty() {
            tracing::info!(count = ids.len(), "runs interrupted by a stopped process");
        }
        for id in ids {
            let resumable = matches!(d.store.get_run(&id).await, Ok(r) if r.resumable);
            if !resumable {
                continue;
            }
            let engine = self.clone();
            tokio::spawn(async move {
                match engine.resume_interrupted(&id).await {
                    Ok(run) => {
                        tracing::info!(run = %id, status = ?run.status, "interrupted run restarted")
                    }
                    Err(e) => {
                        tracing::warn!(run = %id, error = %e, "interrupted run not restarted")
                    }
                }
            });
        }
    }
}

/// How often the upkeep runs. Expiry is checked at continue time too; the sweep only turns
/// lapsed sessions into tombstones, so a fraction of the TTL (at most 5 s) is plenty. The
/// leases are renewed on the same tick: three times per lease, so one slow round trip to the
/// store does not let a peer take a run this process is still executing.
fn tick_of(d: &Durability) -> Duration {
    Duration::from_millis(
        u64::try_from((d.session_ttl_ms / 2).min(d.lease_ms / 3))
            .unwrap_or(5000)
            .clamp(250, 5000),
    )
}

/// Deletes the finished runs `d.retention` no longer keeps. Never a running or waiting run, nor
/// one a live session or a pending restart still needs (the store's `Purge` rule).
async fn purge_finished(d: &Durability) {
    let now = now_ms();
    let max_age_ms =
        i64::try_from(d.retention.max_age_seconds().saturating_mul(1000)).unwrap_or(i64::MAX);
    let rule = Purge {
        ended_before_ms: now.saturating_sub(max_age_ms),
        keep_latest: d.retention.max_runs(),
        restartable_since_ms: now - RESTART_WINDOW_MS,
        batch: PURGE_BATCH,
    };
    let mut deleted = 0;
    for _ in 0..PURGE_BATCHES_PER_PASS {
        match d.store.purge_runs(&rule).await {
            Ok(n) => {
                deleted += n;
                if n < u64::from(PURGE_BATCH) {
                    break;
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "could not delete finished runs beyond the retention");
                break;
            }
        }
    }
    if deleted > 0 {
        tracing::info!(
            count = deleted,
            max_age_seconds = d.retention.max_age_seconds(),
            max_runs = d.retention.max_runs(),
            "finished runs deleted (store.retention)"
        );
    }
    purge_audit(d, rule.ended_before_ms).await;
    match d
        .store
        .purge_configs(&d.config_version, now, now - CONFIG_IDLE_MS)
        .await
    {
        Ok(0) => {}
        Ok(n) => tracing::info!(count = n, "config versions no run references dropped"),
        Err(e) => tracing::warn!(error = %e, "could not drop unreferenced config versions"),
    }
}

/// Deletes the audit log's rows older than the retention's age. Its count (`maxRuns`) is the
/// runs' alone: an audit trail is kept for a time, and a burst of refused calls must not push
/// out the record of the calls before it.
async fn purge_audit(d: &Durability, before_ms: i64) {
    let mut deleted = 0;
    for _ in 0..PURGE_BATCHES_PER_PASS {
        match d.store.purge_audit(before_ms, PURGE_BATCH).await {
            Ok(n) => {
                deleted += n;
                if n < u64::from(PURGE_BATCH) {
                    break;
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "could not delete audit rows beyond the retention");
                break;
            }
        }
    }
    if deleted > 0 {
        tracing::info!(
            count = deleted,
            max_age_seconds = d.retention.max_age_seconds(),
            "audit rows deleted (store.retention)"
        );
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use mcpflow_model::SessionsConfig;

    use super::{Durability, tick_of};

    async fn durability(lease: Duration) -> Durability {
        let store = mcpflow_store::open("sqlite::memory:")
            .await
            .expect("in-memory store");
        Durability::new(store, "a".into(), "v1".into(), SessionsConfig::default()).with_lease(lease)
    }

    #[tokio::test]
    async fn a_lease_is_renewed_three_times_before_it_lapses() {
        assert_eq!(
            tick_of(&durability(Duration::from_secs(30)).await),
            Duration::from_secs(5)
        );
        let short = durability(Duration::from_secs(2)).await;
        assert_eq!(tick_of(&short), Duration::from_millis(666));
        // Never a busy loop, whatever a caller sets.
        let tiny = durability(Duration::from_millis(10)).await;
        assert_eq!(tick_of(&tiny), Duration::from_millis(250));
    }
}
