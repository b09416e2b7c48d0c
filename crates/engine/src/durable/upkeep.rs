//! The background upkeep of a process that serves durable runs: at start, the runs a stopped
//! process left running are marked `interrupted` (and the resumable ones restarted); then, on
//! a timer, this process's leases are renewed, lapsed sessions expired, and the runs of dead
//! replicas swept the same way. The binary only starts it.

use std::time::Duration;

use mcpflow_store::now_ms;
use tokio::task::JoinHandle;

use crate::Engine;

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
        let d = self.durability()?;
        // Expiry is checked at continue time too; the sweep only turns lapsed sessions into
        // tombstones, so a tick of a fraction of the TTL (at most 5 s) is plenty.
        let tick = Duration::from_millis(
            u64::try_from(d.session_ttl_ms / 2)
                .unwrap_or(5000)
                .clamp(250, 5000),
        );
        let engine = self.clone();
        Some(tokio::spawn(async move {
            let mut timer = tokio::time::interval(tick);
            timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                timer.tick().await;
                engine.upkeep_once().await;
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
