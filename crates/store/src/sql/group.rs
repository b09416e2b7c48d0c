//! Group commit: the writes on a session's path (start a run, commit a step, suspend, claim,
//! finish, …) are queued to a writer task that runs many of them in ONE transaction and
//! commits once, so that the steps of many runs share one fsync.
//!
//! Each write still behaves as its own transaction to its caller:
//! - it runs inside a SAVEPOINT of the batch's transaction; when it fails (a database error or
//!   a logical `Conflict`, `LimitReached`, …) its savepoint is rolled back, so nothing of it
//!   is applied, and only its caller gets the error;
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

/// The body of one write: runs on the batch's connection, inside its savepoint.
pub(super) type Work<T> = Box<
    dyn for<'c> FnOnce(&'c Db, &'c mut AnyConnection) -> BoxFuture<'c, Result<T, StoreError>>
        + Send,
>;

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

    /// Runs `work` as one atomic write and answers once it is committed.
    pub(super) async fn write<T: Send + 'static>(
        &self,
        db: &Db,
        work: Work<T>,
    ) -> Result<T, StoreError> {
        let (reply, answer) = oneshot::channel();
        let job = Box::new(Job {
            work: Some(work),
            outcome: None,
            reply,
        });
        self.queue.send(job).await.map_err(|_| db.closed())?;
        // The writer drops the job unanswered only when it stops mid-batch (the runtime is
        // shutting down): whether the write landed is then unknown, as with a lost connection.
        answer.await.map_err(|_| db.closed())?
    }
}

/// A queued write with its caller's answer, its result type erased.
trait Queued: Send {
    /// The caller still waits for the answer.
    fn wanted(&self) -> bool;
    /// Runs the write; whether it succeeded (its savepoint is kept).
    fn apply<'c>(&'c mut self, db: &'c Db, conn: &'c mut AnyConnection) -> BoxFuture<'c, bool>;
    /// Answers the caller with the write's own outcome, or with `failed` (the batch's
    /// commit failed, so a write that succeeded was not applied after all).
    fn answer(self: Box<Self>, failed: Option<&StoreError>);
}

struct Job<T> {
    work: Option<Work<T>>,
    outcome: Option<Result<T, StoreError>>,
    reply: oneshot::Sender<Result<T, StoreError>>,
}

impl<T: Send + 'static> Queued for Job<T> {
    fn wanted(&self) -> bool {
        !self.reply.is_closed()
    }

    fn apply<'c>(&'c mut self, db: &'c Db, conn: &'c mut AnyConnection) -> BoxFuture<'c, bool> {
        Box::pin(async move {
            let Some(work) = self.work.take() else {
                return false;
            };
            let outcome = work(db, conn).await;
            let ok = outcome.is_ok();
            self.outcome = Some(outcome);
            ok
        })
    }

    fn answer(self: Box<Self>, failed: Option<&StoreError>) {
        let answer = match (self.outcome, failed) {
            // Its own failure stands: its savepoint was rolled back either way.
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

/// One transaction for the whole batch; every write in its own savepoint unless it is alone
/// (then a failure rolls back the transaction, which is as good and saves two statements).
async fn run_batch(
    pool: &AnyPool,
    db: &Db,
    batch: &mut [Box<dyn Queued>],
) -> Result<(), StoreError> {
    let mut tx = db.begin(pool).await?;
    if let [only] = batch {
        if only.apply(db, &mut tx).await {
            return tx.commit().await.map_err(|e| db.err(e));
        }
        // Its own error is its answer; nothing was written.
        let _ = tx.rollback().await;
        return Ok(());
    }
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
