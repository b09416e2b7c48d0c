//! Durable runs: tools that can wait for their client (an `await` node) or are `resumable`.
//!
//! What cannot be recomputed is committed before the next node starts: the arguments (with the
//! run), every upstream or sub-run result, every input a client sent. Pure nodes (entry,
//! transform, switch, script, exit) are buffered and written with the next impure step, or at the
//! end: after a crash they are simply computed again. A suspended run keeps all its records,
//! so a continue restores the history and context from the store and goes on at the await
//! node's `next` without re-running anything.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use mcpflow_expr::Value;
use mcpflow_store::{
    Lease, NewRun, NewSession, RecordRow, RunEnd, Session, SessionStatus, SessionUpdate, Store,
    StoreError, new_session_id, now_ms,
};
use serde_json::{Value as Json, json};
use tokio::sync::broadcast;

use crate::Engine;
use crate::await_node::{Ask, Suspension};
use crate::control::Control;
use crate::error::{RunError, RunErrorKind};
use crate::event::Event;
use crate::frame::Frame;
use crate::graph::{Graph, StepKind};
use crate::history::{History, Parent, Record};
use crate::run::{Executor, Run, RunStatus, Shared};

/// How an engine keeps durable runs: the store, who this process is, and the session policy.
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
}

impl Durability {
    pub const DEFAULT_LEASE_MS: i64 = 30_000;

    pub fn lease(&self) -> Lease {
        Lease::new(self.owner.clone(), now_ms() + self.lease_ms)
    }
}

/// Why a continue, cancel or status request for a session was refused. The session is left
/// as it was, except where the message says otherwise.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error(
        "no session {0:?}: it never existed, or it was purged; call the tool again to start a \
         new run"
    )]
    Unknown(String),
    #[error(
        "session {id:?} expired at {expired_at_ms} ms since the epoch before it was continued; \
         call the tool again to start a new run"
    )]
    Expired { id: String, expired_at_ms: i64 },
    #[error("session {id:?} has ended ({status}); it cannot be continued")]
    Ended { id: String, status: SessionStatus },
    #[error(
        "session {0:?} is being continued by another request right now; only one continue can \
         win: check its status, then continue again if it is waiting"
    )]
    Busy(String),
    #[error(
        "session {id:?} belongs to tool `{tool}`: use `{tool}_continue`, `{tool}_status` or `{tool}_cancel`"
    )]
    WrongTool { id: String, tool: String },
    #[error(
        "session {id:?} was started on config version {started}, and this server runs {current}: \
         the config changed since, and mcpflow never continues a run on another config; cancel \
         it and start a new run, or serve the old config to finish it"
    )]
    ConfigChanged {
        id: String,
        started: String,
        current: String,
    },
    #[error(
        "input does not match the inputSchema of await node `{node}`: {}; the session is \
         unchanged and still waiting", .errors.join("; ")
    )]
    InvalidInput { node: String, errors: Vec<String> },
    #[error("this server keeps no sessions: no store is configured")]
    NoStore,
    #[error("{0}")]
    Store(#[from] StoreError),
}

/// The durable side of one run in this process.
pub(crate) struct DurableRun {
    pub durability: Durability,
    pub run_id: String,
    /// Records `..flushed` of the main history are in the store.
    pub flushed: AtomicUsize,
    pub suspended: Mutex<Option<Suspension>>,
    pub ask: Option<Arc<dyn Ask>>,
}

impl DurableRun {
    pub(crate) fn suspend(&self, s: Suspension) {
        if let Ok(mut slot) = self.suspended.lock() {
            *slot = Some(s);
        }
    }

    fn take_suspension(&self) -> Option<Suspension> {
        self.suspended.lock().ok().and_then(|mut s| s.take())
    }

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
        let from = self.flushed.load(Ordering::Acquire);
        let records = history.records();
        if from >= records.len() {
            return None;
        }
        let rows: Vec<RecordRow> = records[from..].iter().map(to_row).collect();
        // Marked written now: on failure the run stops, so nothing is written after a gap.
        self.flushed.store(records.len(), Ordering::Release);
        let store = self.durability.store.clone();
        let lease = self.durability.lease();
        let run_id = self.run_id.clone();
        Some(Box::pin(async move {
            store.append_records(&run_id, &lease, &rows).await?;
            Ok(())
        }))
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

fn store_error(history: &History, e: &StoreError) -> RunError {
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
    /// durability shape). A store that fails costs only this run's record, logged.
    pub(crate) fn save_plain(&self, graph: &Graph, args: Json, started_at: i64, run: &Run) {
        let new = NewRun {
            id: run.id.to_string(),
            tool: graph.name().to_owned(),
            config_version: self.config_version.clone(),
            args,
            started_at,
            resumable: false,
        };
        let rows: Vec<RecordRow> = run.history.records().iter().map(to_row).collect();
        let end = match (&run.status, &run.result) {
            (_, Ok(v)) => RunEnd::Succeeded(v.to_json()),
            (RunStatus::Cancelled, _) => RunEnd::Cancelled,
            (_, Err(e)) => RunEnd::Failed(error_json(e)),
        };
        let store = self.store.clone();
        tokio::spawn(async move {
            if let Err(e) = store.save_finished_run(&new, &rows, &end, now_ms()).await {
                tracing::warn!(run = %new.id, tool = %new.tool, error = %e, "the finished run could not be recorded");
            }
        });
    }
}

fn to_row(r: &Record) -> RecordRow {
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
fn restore(rows: Vec<RecordRow>) -> Frame<'static> {
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
fn next_after(graph: &Graph, record: &Record) -> Option<usize> {
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

/// How a durable execution starts.
enum Start {
    Fresh(Json),
    /// A restored frame, going on at node `at`.
    Resumed(Box<Frame<'static>>, usize),
}

/// Whose session a durable execution continues.
struct Claim {
    session_id: String,
    version: i64,
}

impl Engine {
    /// Whether runs of `tool` are durable here: a store is attached and the tool can wait or
    /// is resumable.
    pub fn is_durable(&self, tool: &str) -> bool {
        self.durability().is_some()
            && self
                .graph(tool)
                .is_some_and(|g| g.can_wait() || g.is_resumable())
    }

    /// A new durable run of `graph`.
    pub(crate) async fn start_durable(
        &self,
        durability: &Durability,
        graph: &Graph,
        args: Json,
        control: &Control,
        events: Option<&broadcast::Sender<Event>>,
        ask: Option<Arc<dyn Ask>>,
    ) -> Run {
        let run_id = match new_session_id() {
            Ok(id) => id,
            Err(e) => return failed_run("".into(), graph.name(), store_run_error(&e)),
        };
        let new = NewRun {
            id: run_id.clone(),
            tool: graph.name().to_owned(),
            config_version: durability.config_version.clone(),
            args: args.clone(),
            started_at: now_ms(),
            resumable: graph.is_resumable(),
        };
        if let Err(e) = durability.store.create_run(&new, &durability.lease()).await {
            return failed_run(run_id.into(), graph.name(), store_run_error(&e));
        }
        self.execute_durable(
            durability,
            graph,
            run_id,
            Start::Fresh(args),
            None,
            control,
            events,
            ask,
        )
        .await
    }

    /// Continues the session `session_id` of `tool` with the client's `input`: validated
    /// against the await node's schema (a rejected input leaves the session waiting), claimed
    /// (of concurrent continues exactly one wins), recorded as the await node's output, and
    /// the run goes on to its next wait or its end.
    pub async fn continue_session(
        &self,
        tool: &str,
        session_id: &str,
        input: Json,
        control: &Control,
        events: Option<&broadcast::Sender<Event>>,
        ask: Option<Arc<dyn Ask>>,
    ) -> Result<Run, SessionError> {
        let durability = self.durability().ok_or(SessionError::NoStore)?;
        let session = self.live_session(durability, tool, session_id).await?;
        let graph = self
            .graph(tool)
            .ok_or_else(|| SessionError::Unknown(session_id.to_owned()))?;
        let Some((at, step)) = graph.await_step(&session.node_id) else {
            return Err(SessionError::ConfigChanged {
                id: session.id.clone(),
                started: session.config_version.clone(),
                current: durability.config_version.clone(),
            });
        };
        step.check(&input)
            .map_err(|errors| SessionError::InvalidInput {
                node: session.node_id.clone(),
                errors,
            })?;
        let next = step.next;
        let claimed = durability
            .store
            .claim_session(&session.id, session.version, &durability.lease(), now_ms())
            .await
            .map_err(|e| claim_error(e, &session.id))?;
        let rows = match durability.store.get_records(&claimed.run_id).await {
            Ok(rows) => rows,
            Err(e) => {
                // Give the claim back so the client can try again once the store is back.
                let _ = durability
                    .store
                    .release_session(&claimed.id, claimed.version, now_ms())
                    .await;
                return Err(e.into());
            }
        };
        let mut frame = restore(rows);
        let node = graph.nodes[at].id.clone();
        let at_ms = now_ms() as f64;
        let output = Value::from_json(input);
        frame.context.set(&node, Some(output.clone()));
        let record = frame.history.push(
            &node,
            "await",
            std::time::Duration::ZERO,
            std::time::Duration::ZERO,
            None,
            Some(output),
            None,
        );
        record.start_time = at_ms;
        record.end_time = at_ms;
        let claim = Claim {
            session_id: claimed.id.clone(),
            version: claimed.version,
        };
        Ok(self
            .execute_durable(
                durability,
                graph,
                claimed.run_id.clone(),
                Start::Resumed(Box::new(frame), next),
                Some(claim),
                control,
                events,
                ask,
            )
            .await)
    }

    /// A session of `tool` that may be continued now, or why not.
    async fn live_session(
        &self,
        durability: &Durability,
        tool: &str,
        session_id: &str,
    ) -> Result<Session, SessionError> {
        let session = self.session(tool, session_id).await?;
        match session.status {
            SessionStatus::Waiting if now_ms() < session.expires_at => {}
            SessionStatus::Waiting | SessionStatus::Expired => {
                return Err(SessionError::Expired {
                    id: session.id,
                    expired_at_ms: session.expires_at,
                });
            }
            SessionStatus::Claimed => return Err(SessionError::Busy(session.id)),
            status => {
                return Err(SessionError::Ended {
                    id: session.id,
                    status,
                });
            }
        }
        if session.config_version != durability.config_version {
            return Err(SessionError::ConfigChanged {
                id: session.id,
                started: session.config_version,
                current: durability.config_version.clone(),
            });
        }
        Ok(session)
    }

    /// The session `session_id`, checked to belong to `tool`.
    pub async fn session(&self, tool: &str, session_id: &str) -> Result<Session, SessionError> {
        let durability = self.durability().ok_or(SessionError::NoStore)?;
        let session = durability
            .store
            .get_session(session_id)
            .await
            .map_err(|e| match e {
                StoreError::NotFound { .. } => SessionError::Unknown(session_id.to_owned()),
                other => other.into(),
            })?;
        if session.tool != tool {
            return Err(SessionError::WrongTool {
                id: session.id,
                tool: session.tool,
            });
        }
        Ok(session)
    }

    /// Cancels a waiting session of `tool` and its run.
    pub async fn cancel_session(
        &self,
        tool: &str,
        session_id: &str,
    ) -> Result<Session, SessionError> {
        let durability = self.durability().ok_or(SessionError::NoStore)?;
        let session = self.session(tool, session_id).await?;
        match session.status {
            SessionStatus::Waiting => {}
            SessionStatus::Claimed => return Err(SessionError::Busy(session.id)),
            status => {
                return Err(SessionError::Ended {
                    id: session.id,
                    status,
                });
            }
        }
        durability
            .store
            .cancel_session(&session.id, now_ms())
            .await
            .map_err(|e| claim_error(e, &session.id))
    }

    /// Restarts an interrupted run of a `resumable` tool from its last completed node, in the
    /// background of the caller; returns how it ended (or where it waits).
    pub async fn resume_interrupted(&self, run_id: &str) -> Result<Run, SessionError> {
        let durability = self.durability().ok_or(SessionError::NoStore)?;
        let run = durability.store.get_run(run_id).await?;
        let graph = self
            .graph(&run.summary.tool)
            .ok_or_else(|| SessionError::Unknown(run_id.to_owned()))?;
        if run.summary.config_version != durability.config_version {
            return Err(SessionError::ConfigChanged {
                id: run_id.to_owned(),
                started: run.summary.config_version,
                current: durability.config_version.clone(),
            });
        }
        let rows = durability.store.get_records(run_id).await?;
        durability
            .store
            .take_over_run(run_id, &durability.lease(), now_ms())
            .await?;
        let frame = restore(rows);
        let last_main = frame
            .history
            .records()
            .iter()
            .rev()
            .find(|r| r.parent.is_none());
        let start = match last_main.and_then(|r| next_after(graph, r)) {
            Some(at) => Start::Resumed(Box::new(frame), at),
            // Nothing (or only the entry's buffered records) was stored: start over.
            None => Start::Fresh(run.args.clone()),
        };
        Ok(self
            .execute_durable(
                durability,
                graph,
                run_id.to_owned(),
                start,
                None,
                &Control::new(),
                None,
                None,
            )
            .await)
    }

    #[allow(clippy::too_many_arguments)]
    async fn execute_durable(
        &self,
        durability: &Durability,
        graph: &Graph,
        run_id: String,
        start: Start,
        claim: Option<Claim>,
        control: &Control,
        events: Option<&broadcast::Sender<Event>>,
        ask: Option<Arc<dyn Ask>>,
    ) -> Run {
        let id: Arc<str> = run_id.as_str().into();
        let tool: Arc<str> = graph.name().into();
        if let Some(tx) = events {
            let _ = tx.send(Event::RunStarted {
                run_id: id.clone(),
                tool: tool.clone(),
            });
        }
        let durable = DurableRun {
            durability: durability.clone(),
            run_id: run_id.clone(),
            flushed: AtomicUsize::new(0),
            suspended: Mutex::new(None),
            ask,
        };
        let (frame, at) = match start {
            Start::Fresh(args) => (None, Some(args)),
            Start::Resumed(frame, at) => {
                // What is restored is already stored, except the await record just pushed.
                let stored = frame.history.len().saturating_sub(1);
                durable.flushed.store(stored, Ordering::Release);
                (Some((frame, at)), None)
            }
        };
        let executed = frame.as_ref().map_or(0, |(f, _)| f.history.len() as u64);
        let shared = self.shared(
            control,
            events,
            Some(&durable),
            Instant::now(),
            AtomicU64::new(executed),
        );
        let exec = Executor {
            shared: &shared,
            graph,
            depth: 0,
            deadline: graph.timeout.map(|t| shared.started + t),
        };
        let (result, history) = match (frame, at) {
            (Some((mut frame, at)), _) => {
                // The client's input is committed before anything else runs.
                if let Err(e) = durable.flush(&frame.history).await {
                    let err = store_error(&frame.history, &e);
                    return self
                        .end_run(
                            durability,
                            &durable,
                            id,
                            tool,
                            Err(err),
                            frame.history,
                            claim,
                            control,
                            events,
                        )
                        .await;
                }
                let result = exec.run_chain(&mut frame, at, None, None).await.map(|o| {
                    o.unwrap_or_else(|| Value::from_json(Json::Object(Default::default())))
                });
                (result, frame.history)
            }
            (None, args) => exec.execute(args.unwrap_or(Json::Null)).await,
        };
        self.end_run(
            durability, &durable, id, tool, result, history, claim, control, events,
        )
        .await
    }

    /// Records how a durable execution stopped: suspended (a session created or updated),
    /// or ended (the run finished, its session completed).
    #[allow(clippy::too_many_arguments)]
    async fn end_run(
        &self,
        durability: &Durability,
        durable: &DurableRun,
        id: Arc<str>,
        tool: Arc<str>,
        result: Result<Value, RunError>,
        history: History,
        claim: Option<Claim>,
        control: &Control,
        events: Option<&broadcast::Sender<Event>>,
    ) -> Run {
        let (status, result) = self
            .record_end(durability, durable, &id, result, &history, claim, control)
            .await;
        if let Some(tx) = events {
            let _ = tx.send(Event::RunFinished { status });
        }
        Run {
            id,
            tool,
            status,
            result,
            history,
        }
    }

    #[allow(clippy::too_many_arguments)]
    async fn record_end(
        &self,
        durability: &Durability,
        durable: &DurableRun,
        id: &str,
        result: Result<Value, RunError>,
        history: &History,
        claim: Option<Claim>,
        control: &Control,
    ) -> (RunStatus, Result<Value, RunError>) {
        let finish = |status, result| (status, result);
        let store = &durability.store;
        let suspended = match &result {
            Err(e) if e.kind == RunErrorKind::Suspended => durable.take_suspension(),
            _ => None,
        };
        if matches!(&result, Err(e) if e.kind == RunErrorKind::Store) {
            // A step could not be written: write nothing more (the run's lease lapses and it
            // is marked interrupted, history intact up to the last committed step).
            return finish(RunStatus::Failed, result);
        }
        if let Err(e) = durable.flush(history).await {
            let err = store_error(history, &e);
            return finish(RunStatus::Failed, Err(err));
        }
        if let Some(s) = suspended {
            let now = now_ms();
            let expires_at = now.saturating_add(durability.session_ttl_ms);
            let state = json!({"message": s.message, "options": s.options});
            let session = match &claim {
                None => {
                    store
                        .create_session(
                            &NewSession {
                                run_id: id.to_owned(),
                                node_id: s.node_id.clone(),
                                state,
                                input_schema: s.input_schema.clone(),
                                created_at: now,
                                expires_at,
                            },
                            &durability.owner,
                            durability.max_sessions,
                        )
                        .await
                }
                Some(c) => {
                    store
                        .update_session(
                            &c.session_id,
                            c.version,
                            &SessionUpdate {
                                node_id: s.node_id.clone(),
                                state,
                                input_schema: s.input_schema.clone(),
                                updated_at: now,
                                expires_at,
                            },
                        )
                        .await
                }
            };
            return match session {
                Ok(session) => finish(
                    RunStatus::Waiting,
                    Ok(Value::from_json(waiting_json(&session, &s))),
                ),
                Err(e) => {
                    // The run cannot wait without its session: end it rather than leave it hanging.
                    let err = RunError::new(
                        RunErrorKind::Store,
                        Some(&s.node_id),
                        format!("the run could not be suspended: {e}"),
                    );
                    let end = RunEnd::Failed(error_json(&err));
                    let _ = store
                        .finish_run(id, &durability.owner, &end, now_ms())
                        .await;
                    finish(RunStatus::Failed, Err(err))
                }
            };
        }
        let (status, end) = match &result {
            Ok(v) => (RunStatus::Succeeded, RunEnd::Succeeded(v.to_json())),
            Err(e) if e.kind == RunErrorKind::Stopped && control.is_cancelled() => {
                (RunStatus::Cancelled, RunEnd::Cancelled)
            }
            Err(e) if e.kind == RunErrorKind::Stopped => {
                (RunStatus::Stopped, RunEnd::Failed(error_json(e)))
            }
            Err(e) => (RunStatus::Failed, RunEnd::Failed(error_json(e))),
        };
        if let Err(e) = store
            .finish_run(id, &durability.owner, &end, now_ms())
            .await
        {
            let err = RunError::new(
                RunErrorKind::Store,
                None,
                format!("the run ended but its end could not be recorded: {e}"),
            );
            return finish(RunStatus::Failed, Err(err));
        }
        finish(status, result)
    }

    pub(crate) fn shared<'a>(
        &'a self,
        control: &'a Control,
        events: Option<&'a broadcast::Sender<Event>>,
        durable: Option<&'a DurableRun>,
        started: Instant,
        executed: AtomicU64,
    ) -> Shared<'a> {
        Shared {
            graphs: &self.inner.graphs,
            pool: &self.inner.pool,
            control,
            events,
            limits: &self.inner.limits,
            started,
            executed,
            durable,
        }
    }
}

/// What the tool call answers when its run waits.
pub fn waiting_json(session: &Session, s: &Suspension) -> Json {
    let mut out = json!({
        "status": "waiting",
        "sessionId": session.id,
        "runId": session.run_id,
        "nodeId": s.node_id,
        "message": s.message,
        "inputSchema": s.input_schema,
        "expiresAt": session.expires_at,
    });
    if let (Some(options), Json::Object(map)) = (&s.options, &mut out) {
        map.insert("options".into(), options.clone());
    }
    out
}

fn error_json(e: &RunError) -> Json {
    serde_json::to_value(e).unwrap_or_else(|_| json!({"message": e.to_string()}))
}

fn store_run_error(e: &StoreError) -> RunError {
    RunError::new(
        RunErrorKind::Store,
        None,
        format!("the run could not be started: {e}"),
    )
}

fn failed_run(id: Arc<str>, tool: &str, err: RunError) -> Run {
    Run {
        id,
        tool: tool.into(),
        status: RunStatus::Failed,
        result: Err(err),
        history: History::default(),
    }
}

fn claim_error(e: StoreError, id: &str) -> SessionError {
    match e {
        StoreError::Conflict { .. } => SessionError::Busy(id.to_owned()),
        StoreError::Expired { id, expired_at_ms } => SessionError::Expired { id, expired_at_ms },
        StoreError::NotFound { .. } => SessionError::Unknown(id.to_owned()),
        other => SessionError::Store(other),
    }
}
