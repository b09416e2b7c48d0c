//! Durable runs: tools that can wait for their client (an `await` node) or are `resumable`.
//!
//! What cannot be recomputed is committed before the next node starts: the arguments (with the
//! run), every upstream or sub-run result, every input a client sent. Pure nodes (entry,
//! transform, switch, script, exit) are buffered and written with the next impure step, or at the
//! end: after a crash they are simply computed again. A suspended run keeps all its records,
//! so a continue restores the history and context from the store and goes on at the await
//! node's `next` without re-running anything.
//!
//! - this file: [`Durability`] (the store and policy an engine keeps runs in), the commit of
//!   a step, the record of a plain run, and the frame restored from stored records;
//! - [`execute`]: a durable execution from its start to its wait or its end;
//! - [`recorder`]: the records of plain runs, queued and written many to a transaction;
//! - [`session`]: continue, cancel and read a waiting run's session;
//! - [`upkeep`]: what a serving process does in the background (lease heartbeats, session
//!   expiry, sweeping dead replicas' runs and restarting the resumable ones, dropping config
//!   versions no run references);
//! - [`versions`]: the engine of the config version a run started on (versioned sessions).

mod execute;
mod recorder;
mod session;
mod upkeep;
mod versions;

pub use session::SessionError;
pub use versions::Versions;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use mcpflow_expr::Value;
use mcpflow_model::{Retention, SessionsConfig};
use mcpflow_store::{
    DEFAULT_SESSION_TTL_MS, FinishedRun, Lease, NewRun, RecordRow, RunEnd as StoreEnd, Store,
    StoreError, now_ms,
};
use serde_json::{Value as Json, json};
use tokio::sync::broadcast;

use crate::Engine;
use crate::control::Control;
use crate::error::{RunError, RunErrorKind};
use crate::event::Event;
use crate::frame::Frame;
use crate::graph::{Graph, StepKind};
use crate::history::{History, Parent, Record};
use crate::nodes::await_node::Ask;
use crate::run::{Executor, Run, RunStatus, Shared};

/// How an engine keeps durable runs: the store, who this process is, the session policy and
/// how long finished runs are kept.
#[derive(Debug, Clone)]
pub struct Durability {
    pub store: Arc<dyn Store>,
    /// Stable across restarts of this replica (see [`mcpflow_store::Lease`]).
    pub owner: String,
    /// The hash of the config this engine was compiled from; runs are pinned to it.
    pub config_version: String,
    pub session_ttl_ms: i64,
    pub max_sessions: Option<u64>,
    /// How long a running run stays ours without a write or heartbeat.
    pub lease_ms: i64,
    /// Which finished runs the upkeep keeps (`store.retention`).
    pub retention: Retention,
    /// Compiles the config versions runs started on that this process has not in memory.
    pub versions: Option<Arc<dyn Versions>>,
    /// Records of plain runs on their way to the store (shared by clones).
    recorder: Arc<recorder::Recorder>,
}

impl Durability {
    pub const DEFAULT_LEASE_MS: i64 = 30_000;

    /// Runs kept in `store` by `owner`, pinned to `config_version`, with the config's
    /// `sessions:` policy (its TTL and its cap on waiting sessions).
    pub fn new(
        store: Arc<dyn Store>,
        owner: String,
        config_version: String,
        sessions: SessionsConfig,
    ) -> Durability {
        let session_ttl_ms = i64::try_from(sessions.ttl_seconds().saturating_mul(1000))
            .unwrap_or(DEFAULT_SESSION_TTL_MS);
        Durability {
            recorder: Arc::new(recorder::Recorder::new(store.clone())),
            store,
            owner,
            config_version,
            session_ttl_ms,
            max_sessions: sessions.max_count,
            lease_ms: Durability::DEFAULT_LEASE_MS,
            retention: Retention::default(),
            versions: None,
        }
    }

    /// The same, continuing runs of config versions this process does not hold in memory
    /// through `versions`.
    pub fn with_versions(mut self, versions: Arc<dyn Versions>) -> Durability {
        self.versions = Some(versions);
        self
    }

    /// The same, holding the runs this process executes for `lease` without a write or a
    /// heartbeat (`store.leaseSeconds`; the default is 30 s). The upkeep renews it about three
    /// times per lease.
    pub fn with_lease(mut self, lease: std::time::Duration) -> Durability {
        self.lease_ms = i64::try_from(lease.as_millis()).unwrap_or(Durability::DEFAULT_LEASE_MS);
        self
    }

    /// The same, keeping finished runs as `retention` says (the default: 7 days, 10000 runs).
    pub fn with_retention(mut self, retention: Retention) -> Durability {
        self.retention = retention;
        self
    }

    /// Finished runs of tools that can neither wait nor resume whose record could not be
    /// written, even after retrying, since this process started (each also logged as an error).
    pub fn unrecorded_runs(&self) -> u64 {
        self.recorder.lost()
    }

    /// Waits until the records of the plain runs finished so far are in the store (or given
    /// up), for `limit` at most (a server stopping); whether they are.
    pub async fn settle_records(&self, limit: Duration) -> bool {
        self.recorder.settle(limit).await
    }

    pub fn lease(&self) -> Lease {
        Lease::new(self.owner.clone(), now_ms() + self.lease_ms)
    }
}

/// The durable side of one run in this process.
pub(crate) struct DurableRun {
    pub durability: Durability,
    pub run_id: String,
    /// Records `..flushed` of the main history are in the store.
    pub flushed: AtomicUsize,
    pub ask: Option<Arc<dyn Ask>>,
    /// When the run started, as stored: the clock its scripts see. Read from the store on the
    /// first script call, then kept for the rest of the execution.
    pub started_at: tokio::sync::OnceCell<f64>,
}

impl DurableRun {
    /// Writes the records not yet in the store, as one transaction.
    pub(crate) async fn flush(&self, history: &History) -> Result<(), StoreError> {
        match self.write(history) {
            Some(write) => write.await,
            None => Ok(()),
        }
    }

    /// The write of the records not yet in the store, as a future that owns what it needs
    /// (a `'static` future keeps the run loop's future `Send` for the compiler).
    pub(crate) fn write(
        &self,
        history: &History,
    ) -> Option<futures::future::BoxFuture<'static, Result<(), StoreError>>> {
        let rows = self.unflushed(history)?;
        let store = self.durability.store.clone();
        let lease = self.durability.lease();
        let run_id = self.run_id.clone();
        Some(Box::pin(async move {
            store.append_records(&run_id, &lease, &rows).await?;
            Ok(())
        }))
    }

    /// The records not yet in the store, counted as written from now on: whoever takes them
    /// writes them, and on failure the run stops, so nothing is written after a gap.
    pub(crate) fn unflushed(&self, history: &History) -> Option<Vec<RecordRow>> {
        let from = self.flushed.load(Ordering::Acquire);
        let records = history.records();
        if from >= records.len() {
            return None;
        }
        let rows: Vec<RecordRow> = records[from..].iter().map(to_row).collect();
        self.flushed.store(records.len(), Ordering::Release);
        Some(rows)
    }
}

impl Executor<'_> {
    /// After a node of the main flow finished: commit it if it touched the world (its output
    /// cannot be recomputed), with the pure records buffered before it.
    pub(crate) async fn commit_step(
        &self,
        frame: &Frame<'_>,
        kind: &StepKind,
    ) -> Result<(), RunError> {
        let pure = matches!(
            kind,
            StepKind::Entry { .. }
                | StepKind::Transform { .. }
                | StepKind::Switch { .. }
                | StepKind::Script(_)
                | StepKind::Exit
        );
        let Some(durable) = self.shared.durable else {
            return Ok(());
        };
        if pure || !frame.is_main() || self.depth != 0 {
            return Ok(());
        }
        let Some(write) = durable.write(&frame.history) else {
            return Ok(());
        };
        let node = frame.history.last().map(|r| r.node_id.clone());
        write.await.map_err(|e| {
            RunError::new(
                RunErrorKind::Store,
                node.as_deref(),
                format!("the run stopped because its step could not be recorded: {e}"),
            )
        })
    }
}

pub(super) fn store_error(history: &History, e: &StoreError) -> RunError {
    let node = history.last().map(|r| r.node_id.to_string());
    RunError::new(
        RunErrorKind::Store,
        node.as_deref(),
        format!("the run stopped because its step could not be recorded: {e}"),
    )
}

impl Durability {
    /// Records a finished run of a tool that can neither wait nor resume: once, at its end,
    /// in the background, so the caller's answer never waits on the store (DESIGN's
    /// durability shape). The [`recorder`] writes it with others in one transaction, tries an
    /// unavailable store (full disk, restarting database) again for a minute, and logs as an
    /// error and counts ([`Durability::unrecorded_runs`]) a record it gives up, never dropping
    /// one quietly.
    pub(crate) fn save_plain(
        &self,
        graph: &Graph,
        (args, started_at): (Json, i64),
        caller: &crate::caller::Caller,
        run: &Run,
    ) {
        let end = match (run.output(), run.error()) {
            (Some(v), _) => StoreEnd::Succeeded(v.to_json()),
            _ if run.status == RunStatus::Cancelled => StoreEnd::Cancelled,
            (_, Some(e)) => StoreEnd::Failed(error_json(e)),
            // Only a durable run waits, and it is recorded as it goes.
            (None, None) => return,
        };
        self.recorder.record(FinishedRun {
            run: NewRun {
                id: run.id.to_string(),
                tool: graph.name().to_owned(),
                config_version: self.config_version.clone(),
                args,
                started_at,
                resumable: false,
                started_by: caller.subject().map(str::to_owned),
                caller: caller.recorded_json(),
            },
            records: run.history.records().iter().map(to_row).collect(),
            end,
            ended_at: now_ms(),
        });
    }
}

pub(super) fn to_row(r: &Record) -> RecordRow {
    RecordRow {
        index: r.index as i64,
        node_id: r.node_id.to_string(),
        node_type: r.node_type.to_owned(),
        start_ms: r.start_time,
        end_ms: r.end_time,
        input: r.input.clone(),
        output: r.output.as_ref().map(Value::to_json),
        error: r.error.clone(),
        parent: r.parent.as_ref().and_then(|p| p.index).map(|i| i as i64),
    }
}

/// The type names records carry, as `'static` strings.
fn static_type(name: &str) -> &'static str {
    const KNOWN: [&str; 11] = [
        "entry",
        "exit",
        "mcp",
        "transform",
        "switch",
        "parallel",
        "foreach",
        "call",
        "await",
        "script",
        "proxy",
    ];
    KNOWN.into_iter().find(|k| *k == name).unwrap_or("unknown")
}

/// A main-flow frame rebuilt from stored records: the same history and context the run had.
pub(super) fn restore(rows: Vec<RecordRow>) -> Frame<'static> {
    let mut frame = Frame::new();
    let ids: Vec<Arc<str>> = rows.iter().map(|r| Arc::from(r.node_id.as_str())).collect();
    for (i, row) in rows.into_iter().enumerate() {
        let output = row.output.map(Value::from_json);
        let node_id = ids[i].clone();
        let parent = row.parent.and_then(|p| {
            let node = ids.get(usize::try_from(p).ok()?)?.clone();
            Some(Parent {
                node,
                index: usize::try_from(p).ok(),
                branch: None,
                item: None,
            })
        });
        frame.context.set(&node_id, output.clone());
        frame.append(Record {
            index: 0,
            node_id,
            node_type: static_type(&row.node_type),
            start_time: row.start_ms,
            end_time: row.end_ms,
            duration_ms: (row.end_ms - row.start_ms).max(0.0),
            input: row.input,
            output,
            error: row.error,
            attempts: None,
            parent,
            sub_history: None,
            logs: None,
        });
    }
    frame
}

/// Where a run goes after its last stored main-flow record (to restart an interrupted run).
pub(super) fn next_after(graph: &Graph, record: &Record) -> Option<usize> {
    let (at, step) = graph
        .nodes
        .iter()
        .enumerate()
        .find(|(_, s)| *s.id == *record.node_id)?;
    let _ = at;
    if record.error.is_some() {
        return step.options.on_error.or_else(|| {
            step.options
                .optional
                .then(|| step.kind.default_next())
                .flatten()
        });
    }
    match &step.kind {
        StepKind::Switch { .. } => {
            let to = record.output.as_ref()?.to_json();
            let to = to.as_str()?;
            graph.nodes.iter().position(|s| &*s.id == to)
        }
        other => other.default_next(),
    }
}

impl Engine {
    pub(crate) fn shared<'a>(
        &'a self,
        control: &'a Control,
        events: Option<&'a broadcast::Sender<Event>>,
        durable: Option<&'a DurableRun>,
        started: Instant,
        executed: AtomicU64,
        caller: &'a crate::caller::Caller,
    ) -> Shared<'a> {
        Shared {
            graphs: &self.inner.graphs,
            pool: &self.inner.pool,
            control,
            events,
            limits: &self.inner.limits,
            quick: &self.inner.quick_limits,
            started,
            executed,
            durable,
            caller,
        }
    }
}

pub(super) fn error_json(e: &RunError) -> Json {
    serde_json::to_value(e).unwrap_or_else(|_| json!({"message": e.to_string()}))
}
