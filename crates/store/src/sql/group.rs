//! Group commit: the writes on a session's path (start a run, commit a step, suspend, claim,
//! finish, …) are queued to a writer task that runs many of them in ONE transaction and
//! commits once, so that the steps of many runs share one fsync.
//!
//! Each write still behaves as its own transaction to its caller:
//! - when it fails (a database error or a logical `Conflict`, `LimitReached`, …) nothing of it
//!   is applied and only its caller gets the error: the batch is run again with each write
//!   inside its own SAVEPOINT, and the failed one's is rolled back (see [`run_batch`]);
//! - its caller is answered only after the COMMIT that made it durable; when that COMMIT fails
//!   every write of the batch fails with the commit's error (none of them was applied);
//! - writes of one batch apply in queue order, so a caller that waited for one write before
//!   sending the next sees them applied in that order.
//!
//! The queue is bounded ([`QUEUE`]): callers wait for room rather than pile up in memory. A
//! write whose caller stopped waiting before its batch began is skipped (as a dropped
//! transaction was rolled back before). The writers end when the store is dropped (the queue's
//! sender goes with it); a failed batch does not end them.
//!
//! SQLite has one write lock, so one writer; PostgreSQL takes [`PG_WRITERS`], so that a batch
//! is being filled while another commits.

use std::sync::Arc;

use futures::future::BoxFuture;
use sqlx::{AnyConnection, AnyPool, Connection};
use tokio::sync::{Mutex, mpsc, oneshot};

use super::Db;
use crate::StoreError;
use crate::target::Backend;

/// Writes waiting for a writer, at most; more callers wait for room.
const QUEUE: usize = 1024;
/// Writes per transaction, at most: bounds how long one batch holds SQLite's write lock and
/// how much one failed commit takes down.
const BATCH: usize = 256;
/// Writer tasks on PostgreSQL (each holds one pooled connection while it writes).
const PG_WRITERS: usize = 4;

/// The queue the store's writes go to.
#[derive(Debug)]
pub(super) struct Group {
    queue: mpsc::Sender<Box<dyn Queued>>,
}

impl Group {
    /// Starts the writers (on the current tokio runtime) for `pool`.
    pub(super) fn start(pool: AnyPool, db: Arc<Db>) -> Group {
        let (queue, rx) = mpsc::channel(QUEUE);
        let rx = Arc::new(Mutex::new(rx));
        let writers = match db.backend {
            Backend::Sqlite => 1,
            Backend::Postgres => PG_WRITERS,
        };
        for _ in 0..writers {
            tokio::spawn(write_loop(pool.clone(), db.clone(), rx.clone()));
        }
        Group { queue }
    }

    /// Runs `work` over `data` as one atomic write and answers once it is committed. `work`
    /// may run twice (see [`run_batch`]): it reads `data`, it does not consume it.
    pub(super) async fn write<D, T, F>(&self, db: &Db, data: D, work: F) -> Result<T, StoreError>
    where
        D: Send + Sync + 'static,
        T: Send + 'static,
        F: for<'c> Fn(&'c D, &'c Db, &'c mut AnyConnection) -> BoxFuture<'c, Result<T, StoreError>>
            + Send
            + Sync
            + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let job = Box::new(Job {
            data,
            work,
            outcome: None,
            reply,
        });
        self.queue.send(job).await.map_err(|_| db.closed())?;
        // The writer drops the job unanswered only when it stops mid-batch (the runtime is
        // shutting down): whether the write landed is then unknown, as with a lost connection.
        answer.await.map_err(|_| db.closed())?
    }
}

/// A queued write with its caller's answer, its types erased.
trait Queued: Send {
    /// The caller still waits for the answer.
    fn wanted(&self) -> bool;
    /// Runs the write; whether it succeeded.
    fn apply<'c>(&'c mut self, db: &'c Db, conn: &'c mut AnyConnection) -> BoxFuture<'c, bool>;
    /// Forgets what a run that was rolled back produced.
    fn forget(&mut self);
    /// Answers the caller with the write's own outcome, or with `failed` (the batch's
    /// commit failed, so a write that succeeded was not applied after all).
    fn answer(self: Box<Self>, failed: Option<&StoreError>);
}

struct Job<D, F, T> {
    data: D,
    work: F,
    outcome: Option<Result<T, StoreError>>,
    reply: oneshot::Sender<Result<T, StoreError>>,
}

impl<D, F, T> Queued for Job<D, F, T>
where
    D: Send + Sync + 'static,
    T: Send + 'static,
    F: for<'c> Fn(&'c D, &'c Db, &'c mut AnyConnection) -> BoxFuture<'c, Result<T, StoreError>>
        + Send
        + Sync
        + 'static,
{
    fn wanted(&self) -> bool {
        !self.reply.is_closed()
    }

    fn apply<'c>(&'c mut self, db: &'c Db, conn: &'c mut AnyConnection) -> BoxFuture<'c, bool> {
        Box::pin(async move {
            let outcome = (self.work)(&self.data, db, conn).await;
            let ok = outcome.is_ok();
            self.outcome = Some(outcome);
            ok
        })
    }

    fn forget(&mut self) {
        self.outcome = None;
    }

    fn answer(self: Box<Self>, failed: Option<&StoreError>) {
        let answer = match (self.outcome, failed) {
            // Its own failure stands: nothing of it was applied either way.
            (Some(Err(own)), _) => Err(own),
            (Some(Ok(value)), None) => Ok(value),
            (_, Some(e)) => Err(e.clone()),
            // Not run, and nothing failed: cannot happen (every job of a committed batch ran).
            (None, None) => Err(StoreError::Corrupt(
                "a queued write was neither run nor failed".into(),
            )),
        };
        // The caller may have stopped waiting meanwhile; its write stands (it is committed).
        let _ = self.reply.send(answer);
    }
}

async fn write_loop(
    pool: AnyPool,
    db: Arc<Db>,
    queue: Arc<Mutex<mpsc::Receiver<Box<dyn Queued>>>>,
) {
    let mut batch: Vec<Box<dyn Queued>> = Vec::with_capacity(BATCH);
    loop {
        {
            let mut rx = queue.lock().await;
            match rx.recv().await {
                Some(job) => batch.push(job),
                // The store was dropped.
                None => return,
            }
            while batch.len() < BATCH {
                match rx.try_recv() {
                    Ok(job) => batch.push(job),
                    Err(_) => break,
                }
            }
        }
        batch.retain(|job| job.wanted());
        if batch.is_empty() {
            continue;
        }
        let failed = run_batch(&pool, &db, &mut batch).await.err();
        if let Some(e) = &failed {
            tracing::debug!(error = %e, writes = batch.len(), "a batch of store writes failed");
        }
        for job in batch.drain(..) {
            job.answer(failed.as_ref());
        }
    }
}

/// One transaction for the whole batch. Writes rarely fail, so the batch first runs without
/// savepoints (two statements less per write: on SQLite every statement is a round trip to
/// the connection's thread). When one fails, the whole transaction is rolled back and the
/// batch runs again with every write in its own savepoint, so that the failed one is undone
/// alone (a write alone in its batch needs neither: its failure rolls back the transaction).
async fn run_batch(
    pool: &AnyPool,
    db: &Db,
    batch: &mut [Box<dyn Queued>],
) -> Result<(), StoreError> {
    let mut tx = db.begin(pool).await?;
    let mut all_ok = true;
    for job in batch.iter_mut() {
        if !job.apply(db, &mut tx).await {
            all_ok = false;
            break;
        }
    }
    if all_ok {
        return tx.commit().await.map_err(|e| db.err(e));
    }
    tx.rollback().await.map_err(|e| db.err(e))?;
    if let [_only] = batch {
        // Its own error is its answer; nothing was written.
        return Ok(());
    }
    for job in batch.iter_mut() {
        job.forget();
    }
    let mut tx = db.begin(pool).await?;
    for job in batch.iter_mut() {
        let mut savepoint = Connection::begin(&mut *tx).await.map_err(|e| db.err(e))?;
        if job.apply(db, &mut savepoint).await {
            savepoint.commit().await.map_err(|e| db.err(e))?;
        } else {
            savepoint.rollback().await.map_err(|e| db.err(e))?;
        }
    }
    tx.commit().await.map_err(|e| db.err(e))
}
