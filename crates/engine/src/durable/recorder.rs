//! Records of plain runs (tools that can neither wait nor resume), written in the background
//! by one task per [`Durability`](super::Durability), many runs to a transaction.
//!
//! Why a queue and not a task per run: under load (thousands of runs per second on one
//! replica) a task per run queued on the store's few pooled connections past their acquire
//! timeout, which reads as "store unavailable", and the records were given up by the tens of
//! thousands (bench/README.md, fleet). One writer taking what has gathered (up to
//! [`MAX_BATCH`]) commits once for all of it, so the store keeps up, and the queue bounds
//! the memory finished runs may hold while it does not.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use mcpflow_store::{FinishedRun, Store, StoreError};
use tokio::sync::{Notify, mpsc};

/// Runs written in one transaction at most.
const MAX_BATCH: usize = 256;
/// Finished runs waiting for the writer at most; past it a run's record is given up (counted
/// and logged) at once, so a store that is down or slow cannot grow the process.
const MAX_QUEUED: usize = 4096;
/// An unavailable store (full disk, database restarting) is tried again with a growing pause,
/// for this long at most per batch.
const RETRY_FOR: Duration = Duration::from_secs(60);

#[derive(Debug)]
pub(super) struct Recorder {
    store: Arc<dyn Store>,
    queue: OnceLock<mpsc::Sender<FinishedRun>>,
    tally: Arc<Tally>,
}

#[derive(Debug, Default)]
struct Tally {
    /// Runs queued or being written.
    pending: AtomicUsize,
    /// Woken whenever `pending` reaches zero.
    settled: Notify,
    /// Runs whose record was given up, since this process started.
    lost: AtomicU64,
}

impl Tally {
    fn done(&self, runs: usize) {
        if self.pending.fetch_sub(runs, Ordering::AcqRel) == runs {
            self.settled.notify_waiters();
        }
    }

    fn give_up(&self, run: &FinishedRun, why: &dyn std::fmt::Display) {
        let lost = self.lost.fetch_add(1, Ordering::Relaxed) + 1;
        tracing::error!(run = %run.run.id, tool = %run.run.tool, error = %why, unrecorded_since_start = lost, "the finished run could not be recorded and is missing from the store");
    }
}

impl Recorder {
    pub(super) fn new(store: Arc<dyn Store>) -> Recorder {
        Recorder {
            store,
            queue: OnceLock::new(),
            tally: Arc::default(),
        }
    }

    /// Queues `run` for the store; never waits. The writer starts with the first run, on the
    /// runtime that finished it.
    pub(super) fn record(&self, run: FinishedRun) {
        let queue = self.queue.get_or_init(|| {
            let (tx, rx) = mpsc::channel(MAX_QUEUED);
            tokio::spawn(write_loop(self.store.clone(), rx, self.tally.clone()));
            tx
        });
        self.tally.pending.fetch_add(1, Ordering::AcqRel);
        if let Err(e) = queue.try_send(run) {
            let (run, why) = match e {
                mpsc::error::TrySendError::Full(run) => (
                    run,
                    format!(
                        "the store falls behind: {MAX_QUEUED} finished runs already wait for it"
                    ),
                ),
                mpsc::error::TrySendError::Closed(run) => {
                    (run, "the recorder has stopped".to_owned())
                }
            };
            self.tally.give_up(&run, &why);
            self.tally.done(1);
        }
    }

    pub(super) fn lost(&self) -> u64 {
        self.tally.lost.load(Ordering::Relaxed)
    }

    /// Waits until every run queued so far is written (or given up), for `limit` at most;
    /// whether it was.
    pub(super) async fn settle(&self, limit: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let settled = self.tally.settled.notified();
            if self.tally.pending.load(Ordering::Acquire) == 0 {
                return true;
            }
            if tokio::time::timeout_at(deadline, settled).await.is_err() {
                return self.tally.pending.load(Ordering::Acquire) == 0;
            }
        }
    }
}

async fn write_loop(
    store: Arc<dyn Store>,
    mut queue: mpsc::Receiver<FinishedRun>,
    tally: Arc<Tally>,
) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while queue.recv_many(&mut batch, MAX_BATCH).await > 0 {
        write(&*store, &batch, &tally).await;
        tally.done(batch.len());
        batch.clear();
    }
}

/// Writes `batch` in one transaction, retrying while the store is unavailable; when the store
/// refuses it otherwise, each run is written on its own so one bad run costs only its record.
async fn write(store: &dyn Store, batch: &[FinishedRun], tally: &Tally) {
    let started = Instant::now();
    let mut pause = Duration::from_millis(100);
    let mut tries = 0;
    loop {
        tries += 1;
        let error = match store.save_finished_runs(batch).await {
            Ok(()) => {
                if tries > 1 {
                    tracing::info!(
                        runs = batch.len(),
                        tries,
                        "finished runs were recorded after the store came back"
                    );
                }
                return;
            }
            Err(e) => e,
        };
        match error {
            StoreError::Unavailable { .. } if started.elapsed() + pause < RETRY_FOR => {
                if tries == 1 {
                    tracing::warn!(runs = batch.len(), error = %error, "finished runs could not be recorded yet; trying again");
                }
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(5));
            }
            StoreError::Unavailable { .. } => {
                for run in batch {
                    tally.give_up(run, &error);
                }
                return;
            }
            _ if batch.len() > 1 => {
                for run in batch {
                    write_one(store, run, tries > 1, tally).await;
                }
                return;
            }
            // An earlier try whose answer was lost did commit.
            StoreError::Conflict { .. } if tries > 1 => return,
            _ => {
                tally.give_up(&batch[0], &error);
                return;
            }
        }
    }
}

/// One run of a refused batch; `retried`: the batch was tried before and may have committed.
async fn write_one(store: &dyn Store, run: &FinishedRun, retried: bool, tally: &Tally) {
    match store.save_finished_runs(std::slice::from_ref(run)).await {
        Ok(()) => {}
        Err(StoreError::Conflict { .. }) if retried => {}
        Err(e) => tally.give_up(run, &e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpflow_store::{NewRun, RunEnd, RunStatus};
    use serde_json::json;

    fn finished(id: &str) -> FinishedRun {
        FinishedRun {
            run: NewRun {
                id: id.to_owned(),
                tool: "t".to_owned(),
                config_version: "v1".to_owned(),
                args: json!({}),
                started_at: 1,
                resumable: false,
                started_by: None,
                caller: None,
            },
            records: Vec::new(),
            end: RunEnd::Succeeded(json!(id)),
            ended_at: 2,
        }
    }

    /// A batch the store refuses for one of its runs (here an id already taken) keeps the
    /// others: each is written on its own, and only the refused one is given up.
    #[tokio::test]
    async fn one_refused_run_costs_only_its_own_record() {
        let dir = tempfile::tempdir().expect("tempdir");
        let url = format!("sqlite://{}/state.db", dir.path().display());
        let store = mcpflow_store::open(&url).await.expect("store opens");
        store
            .save_finished_runs(&[finished("taken")])
            .await
            .expect("first write");
        let recorder = Recorder::new(store.clone());
        // Queued before the writer runs (one thread): they make one batch.
        for i in 0..4 {
            recorder.record(finished(&format!("r{i}")));
        }
        recorder.record(finished("taken"));
        for i in 4..8 {
            recorder.record(finished(&format!("r{i}")));
        }
        assert!(recorder.settle(Duration::from_secs(30)).await);
        assert_eq!(recorder.lost(), 1);
        let stats = store.run_stats().await.expect("stats");
        assert_eq!(stats.count(RunStatus::Succeeded), 9);
    }
}
