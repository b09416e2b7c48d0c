//! The store's `audit` table, written by a task of its own in batches: one transaction for all
//! the lines that came in a short while, never one per call on the request path.

use std::sync::Arc;
use std::time::Duration;

use mcpflow_store::{AuditRow, Store};
use tokio::sync::{mpsc, oneshot};

use super::Drops;

/// Lines waiting for the store at most (a store that is down for a while holds this many).
const QUEUE: usize = 8192;
/// Rows per transaction at most.
const BATCH: usize = 500;
/// How long the first line of a batch waits for others: a busy server writes a transaction
/// per this, not per call.
const LINGER: Duration = Duration::from_millis(100);
/// A batch the store refuses is tried again this often, this many times (half a minute of a
/// store restarting), then dropped and counted.
const RETRY_PAUSE: Duration = Duration::from_secs(1);
const ATTEMPTS: u32 = 30;

enum Msg {
    Row(AuditRow),
    /// Answered once everything sent before it is written (or given up).
    Flush(oneshot::Sender<()>),
}

pub(super) struct StoreSink {
    tx: mpsc::Sender<Msg>,
    pub(super) drops: Arc<Drops>,
}

impl StoreSink {
    pub(super) fn start(store: Arc<dyn Store>) -> StoreSink {
        let (tx, rx) = mpsc::channel(QUEUE);
        let drops = Arc::new(Drops::new("store"));
        tokio::spawn(write_batches(store, rx, drops.clone()));
        StoreSink { tx, drops }
    }

    pub(super) fn push(&self, row: AuditRow) {
        match self.tx.try_send(Msg::Row(row)) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(_)) => {
                self.drops.add(1, &"the store's queue is full")
            }
            Err(mpsc::error::TrySendError::Closed(_)) => {
                self.drops.add(1, &"the store's writer stopped")
            }
        }
    }

    pub(super) async fn flush(&self, patience: Duration) {
        let (ack, done) = oneshot::channel();
        let flushed = tokio::time::timeout(patience, async {
            self.tx.send(Msg::Flush(ack)).await.is_ok() && done.await.is_ok()
        })
        .await;
        if !matches!(flushed, Ok(true)) {
            tracing::warn!("the audit lines for the store were not written within {patience:?}");
        }
    }
}

async fn write_batches(store: Arc<dyn Store>, mut rx: mpsc::Receiver<Msg>, drops: Arc<Drops>) {
    let mut msgs = Vec::with_capacity(BATCH);
    let mut rows = Vec::with_capacity(BATCH);
    loop {
        if rx.recv_many(&mut msgs, BATCH).await == 0 {
            return;
        }
        let flushing = msgs.iter().any(|m| matches!(m, Msg::Flush(_)));
        if !flushing && msgs.len() < BATCH {
            tokio::time::sleep(LINGER).await;
            while msgs.len() < BATCH {
                match rx.try_recv() {
                    Ok(msg) => msgs.push(msg),
                    Err(_) => break,
                }
            }
        }
        let mut acks = Vec::new();
        for msg in msgs.drain(..) {
            match msg {
                Msg::Row(row) => rows.push(row),
                Msg::Flush(ack) => acks.push(ack),
            }
        }
        write(&*store, &rows, &drops).await;
        rows.clear();
        for ack in acks {
            let _ = ack.send(());
        }
    }
}

async fn write(store: &dyn Store, rows: &[AuditRow], drops: &Drops) {
    if rows.is_empty() {
        return;
    }
    for attempt in 1..=ATTEMPTS {
        match store.append_audit(rows).await {
            Ok(()) => return,
            Err(e) if attempt == ATTEMPTS => {
                drops.add(rows.len() as u64, &e);
                return;
            }
            Err(e) => {
                if attempt == 1 {
                    tracing::warn!(error = %e, "the store refused audit lines; trying again");
                }
                tokio::time::sleep(RETRY_PAUSE).await;
            }
        }
    }
}
