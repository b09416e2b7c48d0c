//! A durable execution from its start to where it stops: a new run, a continued session or
//! a restarted interrupted run all go through [`Engine::execute_durable`], which commits the
//! client's input first and ends by recording either a session (the run waits) or the run's
//! end.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use mcpflow_store::{
    NewRun, NewSession, RunEnd as StoreEnd, SessionUpdate, new_session_id, now_ms,
};
use serde_json::{Value as Json, json};

use super::{Durability, DurableRun, SessionError, error_json, next_after, restore, store_error};
use crate::Engine;
use crate::caller::Caller;
use crate::error::{RunError, RunErrorKind};
use crate::event::Event;
use crate::frame::Frame;
use crate::graph::Graph;
use crate::history::History;
use crate::nodes::await_node::Suspension;
use crate::request::RunRequest;
use crate::run::{Chain, Executor, Run, RunEnd, RunStatus, Waiting, or_empty};

/// How a durable execution starts.
pub(super) enum Start {
    Fresh(Json),
    /// A restored frame, going on at node `at`; its first `stored` records are in the store.
    Resumed {
        frame: Box<Frame<'static>>,
        at: usize,
        stored: usize,
    },
}

/// Whose session a durable execution continues.
pub(super) struct Claim {
    pub session_id: String,
    pub version: i64,
}

/// One durable execution: which run, where it starts, whose session it continues, and the
/// request it runs for (its control, events and asker; its arguments are in `start`).
pub(super) struct Execution<'a> {
    pub graph: &'a Graph,
    pub run_id: String,
    pub start: Start,
    pub claim: Option<Claim>,
    pub request: RunRequest,
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
        mut request: RunRequest,
    ) -> Run {
        let run_id = match new_session_id() {
            Ok(id) => id,
            Err(e) => return Run::failed("".into(), graph.name(), store_run_error(&e)),
        };
        let args = std::mem::take(&mut request.args);
        let new = NewRun {
            id: run_id.clone(),
            tool: graph.name().to_owned(),
            config_version: durability.config_version.clone(),
            args: args.clone(),
            started_at: now_ms(),
            resumable: graph.is_resumable(),
            started_by: request.caller.subject().map(str::to_owned),
            caller: request.caller.recorded_json(),
        };
        if let Err(e) = durability.store.create_run(&new, &durability.lease()).await {
            return Run::failed(run_id.into(), graph.name(), store_run_error(&e));
        }
        let execution = Execution {
            graph,
            run_id,
            start: Start::Fresh(args),
            claim: None,
            request,
        };
        self.execute_durable(durability, execution).await
    }

    /// Restarts an interrupted run of a `resumable` tool from its last completed node, in the
    /// background of the caller; returns how it ended (or where it waits).
    pub async fn resume_interrupted(&self, run_id: &str) -> Result<Run, SessionError> {
        let durability = self.durability().ok_or(SessionError::NoStore)?;
        let run = durability.store.get_run(run_id).await?;
        if run.summary.config_version != durability.config_version
            && let Some(older) = self.engine_of_version(&run.summary.config_version).await
        {
            self.check_revision(&older, &run.summary.tool, run_id)?;
            return Box::pin(older.resume_interrupted(run_id)).await;
        }
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
            Some(at) => {
                // The last record is written again (a no-op on `(run_id, index)`).
                let stored = frame.history.len().saturating_sub(1);
                Start::Resumed {
                    frame: Box::new(frame),
                    at,
                    stored,
                }
            }
            // Nothing (or only the entry's buffered records) was stored: start over.
            None => Start::Fresh(run.args.clone()),
        };
        let execution = Execution {
            graph,
            run_id: run_id.to_owned(),
            start,
            claim: None,
            // Nobody calls: the run goes on for whoever started it.
            request: RunRequest::new(graph.name(), Json::Null)
                .with_caller(Caller::recorded(run.summary.started_by, run.caller)),
        };
        Ok(self.execute_durable(durability, execution).await)
    }

    pub(super) async fn execute_durable(
        &self,
        durability: &Durability,
        execution: Execution<'_>,
    ) -> Run {
        let resumed = matches!(execution.start, Start::Resumed { .. });
        let span = crate::spans::run(execution.graph.name(), &execution.run_id, resumed);
        let run = span
            .around(self.execute_in_span(durability, execution))
            .await;
        crate::spans::run_ended(&span, run.status, run.error());
        run
    }

    async fn execute_in_span(&self, durability: &Durability, execution: Execution<'_>) -> Run {
        let Execution {
            graph,
            run_id,
            start,
            claim,
            mut request,
        } = execution;
        let id: Arc<str> = run_id.as_str().into();
        let tool: Arc<str> = graph.name().into();
        let args = match &start {
            Start::Fresh(args) => args,
            Start::Resumed { .. } => &Json::Null,
        };
        self.observe_start(&id, &tool, args, &request.control, &mut request.events);
        if let Some(tx) = &request.events {
            let _ = tx.send(Event::RunStarted {
                run_id: id.clone(),
                tool: tool.clone(),
            });
        }
        let durable = DurableRun {
            durability: durability.clone(),
            run_id,
            flushed: AtomicUsize::new(0),
            ask: request.asker.clone(),
            started_at: tokio::sync::OnceCell::new(),
        };
        let (resumed, args) = match start {
            Start::Fresh(args) => (None, args),
            Start::Resumed { frame, at, stored } => {
                durable.flushed.store(stored, Ordering::Release);
                (Some((frame, at)), Json::Null)
            }
        };
        let executed = resumed.as_ref().map_or(0, |(f, _)| f.history.len() as u64);
        let shared = self.shared(
            &request.control,
            request.events.as_ref(),
            Some(&durable),
            Instant::now(),
            AtomicU64::new(executed),
            &request.caller,
        );
        let exec = Executor::top(&shared, graph);
        let (chain, history) = match resumed {
            Some((mut frame, at)) => {
                // The client's input is committed before anything else runs.
                let chain = match durable.flush(&frame.history).await {
                    Err(e) => Err(store_error(&frame.history, &e)),
                    Ok(()) => exec.run_chain(&mut frame, at, None, None).await,
                };
                (chain, frame.history)
            }
            None => exec.execute(args).await,
        };
        let end = durable.record_end(chain, &history, claim, &request).await;
        let status = match &end {
            RunEnd::Waiting(_) => RunStatus::Waiting,
            RunEnd::Finished(result) => RunStatus::of(result, &request.control),
        };
        let attached = request.control.attached_events();
        if let Some(tx) = request.events.as_ref().or(attached) {
            let _ = tx.send(Event::RunFinished { status });
        }
        let run = Run {
            id,
            tool,
            status,
            end,
            history,
        };
        self.observe_end(&run);
        run
    }
}

impl DurableRun {
    /// Records how a durable execution stopped: waiting (a session created, or the continued
    /// one updated), or ended (the run finished, its session completed).
    async fn record_end(
        &self,
        chain: Result<Chain, RunError>,
        history: &History,
        claim: Option<Claim>,
        request: &RunRequest,
    ) -> RunEnd {
        let chain = match chain {
            // A step could not be written: write nothing more (the run's lease lapses and it
            // is marked interrupted, history intact up to the last committed step).
            Err(e) if e.kind == RunErrorKind::Store => return RunEnd::Finished(Err(e)),
            other => other,
        };
        let result = match chain {
            Ok(Chain::Waiting(s)) => {
                if let Err(e) = self.flush(history).await {
                    return RunEnd::Finished(Err(store_error(history, &e)));
                }
                return self.wait(*s, claim).await;
            }
            Ok(Chain::Done(v)) => Ok(or_empty(v)),
            Err(e) => Err(e),
        };
        let end = match &result {
            Ok(v) => StoreEnd::Succeeded(v.to_json()),
            Err(e) if e.kind == RunErrorKind::Stopped && request.control.is_cancelled() => {
                StoreEnd::Cancelled
            }
            Err(e) => StoreEnd::Failed(error_json(e)),
        };
        let durability = &self.durability;
        // The records buffered since the last committed step (pure ones) land with the end:
        // one commit.
        let rows = self.unflushed(history).unwrap_or_default();
        if let Err(e) = durability
            .store
            .finish_run_with_records(&self.run_id, &durability.owner, &rows, &end, now_ms())
            .await
        {
            return RunEnd::Finished(Err(RunError::new(
                RunErrorKind::Store,
                None,
                format!("the run ended but its end could not be recorded: {e}"),
            )));
        }
        RunEnd::Finished(result)
    }

    /// Keeps the run as a session waiting at `s`: a new one, or the continued one updated.
    async fn wait(&self, s: Suspension, claim: Option<Claim>) -> RunEnd {
        let durability = &self.durability;
        let store = &durability.store;
        let now = now_ms();
        let expires_at = now.saturating_add(durability.session_ttl_ms);
        let state = json!({"message": s.message, "options": s.options});
        let session = match &claim {
            None => {
                store
                    .create_session(
                        &NewSession {
                            run_id: self.run_id.clone(),
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
        match session {
            Ok(session) => RunEnd::Waiting(Box::new(Waiting {
                session_id: session.id,
                run_id: session.run_id,
                expires_at: session.expires_at,
                suspension: s,
            })),
            Err(e) => {
                // The run cannot wait without its session: end it rather than leave it hanging.
                let err = RunError::new(
                    RunErrorKind::Store,
                    Some(&s.node_id),
                    format!("the run could not be suspended: {e}"),
                );
                let end = StoreEnd::Failed(error_json(&err));
                let _ = store
                    .finish_run(&self.run_id, &durability.owner, &end, now_ms())
                    .await;
                RunEnd::Finished(Err(err))
            }
        }
    }
}

fn store_run_error(e: &mcpflow_store::StoreError) -> RunError {
    RunError::new(
        RunErrorKind::Store,
        None,
        format!("the run could not be started: {e}"),
    )
}
