use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use futures::future::BoxFuture;
use indexmap::IndexMap;
use mcpflow_expr::{ExprError, Limits, Logic, Scope, Template, Value, truthy};
use mcpflow_upstream::{UpstreamError, UpstreamPool};
use serde::Serialize;
use serde_json::Value as Json;
use tokio::sync::broadcast;

use crate::control::Control;
use crate::error::{RunError, RunErrorKind};
use crate::event::Event;
use crate::frame::Frame;
use crate::graph::{Graph, Step, StepKind};
use crate::history::{History, Record};
use crate::output::{mcp_output, tool_error_message};
use crate::resilience::{backoff, error_object, retryable};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum RunStatus {
    /// Suspended at an await node; the result is the session handle for the client.
    Waiting,
    Succeeded,
    Failed,
    Stopped,
    /// The client cancelled the call ([`Control::cancel`]).
    Cancelled,
}

/// One finished execution of a graph tool: its result or error, and everything it did.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Run {
    pub id: Arc<str>,
    pub tool: Arc<str>,
    pub status: RunStatus,
    pub result: Result<Value, RunError>,
    pub history: History,
}

impl Run {
    pub fn output(&self) -> Option<&Value> {
        self.result.as_ref().ok()
    }
}

/// What every part of one run shares, sub-runs and branches included.
pub(crate) struct Shared<'a> {
    pub graphs: &'a IndexMap<String, Arc<Graph>>,
    pub pool: &'a UpstreamPool,
    pub control: &'a Control,
    pub events: Option<&'a broadcast::Sender<Event>>,
    pub limits: &'a Limits,
    pub started: Instant,
    /// Nodes started in the whole run (branches and sub-runs included), for `maxNodeExecutions`.
    pub executed: AtomicU64,
    /// Set for tools that can wait or are resumable, when a store is attached.
    pub durable: Option<&'a crate::durable::DurableRun>,
}

/// Runs the nodes of one graph: the top-level tool, or a tool invoked by a `call` node.
pub(crate) struct Executor<'a> {
    pub shared: &'a Shared<'a>,
    pub graph: &'a Graph,
    /// Nesting of `call` nodes: 0 for the tool the client called.
    pub depth: u32,
    /// When the innermost tool `timeoutMs` expires.
    pub deadline: Option<Instant>,
}

/// What one attempt of a node produced.
pub(crate) struct Done {
    pub output: Option<Value>,
    pub next: Option<usize>,
    pub input: Option<Json>,
    /// Records of the node's branches or items, in the order they are appended.
    pub children: Vec<Record>,
    pub sub_history: Option<Arc<History>>,
    /// A script node's console lines.
    pub logs: Option<Vec<String>>,
}

/// A failed attempt, with the records its branches or items made before it failed.
pub(crate) struct Failure {
    pub err: RunError,
    pub children: Vec<Record>,
    /// A failed `call`'s sub-run, kept for inspection.
    pub sub_history: Option<Arc<History>>,
}

impl From<RunError> for Failure {
    fn from(err: RunError) -> Failure {
        Failure {
            err,
            children: Vec::new(),
            sub_history: None,
        }
    }
}

impl Done {
    pub(crate) fn plain(output: Option<Value>, next: Option<usize>) -> Done {
        Done {
            output,
            next,
            input: None,
            children: Vec::new(),
            sub_history: None,
            logs: None,
        }
    }
}

impl<'a> Executor<'a> {
    pub(crate) fn emit(&self, event: impl FnOnce() -> Event) {
        // Building an event clones a record: skip it when nobody listens.
        if let Some(tx) = self.shared.events
            && tx.receiver_count() > 0
        {
            let _ = tx.send(event());
        }
    }

    pub async fn execute(&self, args: Json) -> (Result<Value, RunError>, History) {
        let mut frame = Frame::new();
        let result = self
            .run_chain(
                &mut frame,
                self.graph.entry,
                None,
                Some(Value::from_json(args)),
            )
            .await
            .map(|out| out.unwrap_or_else(empty_object));
        (result, frame.history)
    }

    pub(crate) fn stop_error(&self, id: &str) -> RunError {
        let message = if self.shared.control.is_cancelled() {
            "the run was cancelled"
        } else {
            "the run was stopped"
        };
        RunError::new(RunErrorKind::Stopped, Some(id), message)
    }

    /// Runs nodes from `at` until the exit, or until a node routes to `stop` (a branch's
    /// join, a foreach body's way back), which is not run. Returns the last output.
    pub(crate) fn run_chain<'f, 'p: 'f>(
        &'f self,
        frame: &'f mut Frame<'p>,
        mut at: usize,
        stop: Option<usize>,
        mut args: Option<Value>,
    ) -> BoxFuture<'f, Result<Option<Value>, RunError>> {
        Box::pin(async move {
            let graph = self.graph;
            let shared = self.shared;
            loop {
                let step = &graph.nodes[at];
                let id = &*step.id;
                self.check_limits(id)?;
                let index = frame.len();
                if frame.is_main() {
                    match shared.control.should_pause(id) {
                        Err(_) => return Err(self.stop_error(id)),
                        Ok(Some(reason)) => {
                            self.emit(|| Event::Paused {
                                index,
                                node_id: step.id.clone(),
                                reason,
                            });
                            shared
                                .control
                                .wait_paused(index, id)
                                .await
                                .map_err(|_| self.stop_error(id))?;
                            self.emit(|| Event::Resumed);
                        }
                        Ok(None) => {}
                    }
                } else if shared.control.cancelled().is_cancelled() {
                    // Debug pauses apply to the main flow only; a stop reaches every branch.
                    return Err(self.stop_error(id));
                }
                self.emit(|| Event::NodeStarted {
                    index,
                    node_id: step.id.clone(),
                    node_type: step.kind.type_name(),
                });
                let node_start = shared.started.elapsed();
                let (outcome, attempts) = self.attempts(frame, at, &mut args).await;
                let node_end = shared.started.elapsed();
                let attempts = (step.options.retry.is_some() || attempts > 1).then_some(attempts);
                match outcome {
                    Ok(done) => {
                        let own_index = frame.len() + done.children.len();
                        for child in done.children {
                            frame.context.set(&child.node_id, child.output.clone());
                            frame.append(set_parent_index(child, &step.id, own_index));
                        }
                        frame.context.set(id, done.output.clone());
                        let record = frame.push(
                            &step.id,
                            step.kind.type_name(),
                            node_start,
                            node_end,
                            done.input,
                            done.output,
                            None,
                        );
                        record.attempts = attempts;
                        record.sub_history = done.sub_history;
                        record.logs = done.logs;
                        let record = &*record;
                        self.emit(|| Event::NodeFinished {
                            record: Box::new(record.clone()),
                        });
                        self.commit_step(frame, &step.kind).await?;
                        match done.next {
                            Some(n) if Some(n) == stop => return Ok(last_output(frame)),
                            Some(n) => at = n,
                            None => return Ok(last_output(frame)),
                        }
                    }
                    Err((
                        Failure {
                            err,
                            children,
                            sub_history,
                        },
                        input,
                    )) => {
                        if err.kind == RunErrorKind::Suspended {
                            // Not a failure: the await node's record comes with the input.
                            return Err(err);
                        }
                        let own_index = frame.len() + children.len();
                        for child in children {
                            frame.context.set(&child.node_id, child.output.clone());
                            frame.append(set_parent_index(child, &step.id, own_index));
                        }
                        let route = if err.kind.is_routable() {
                            step.options.on_error.or_else(|| {
                                step.options
                                    .optional
                                    .then(|| step.kind.default_next())
                                    .flatten()
                            })
                        } else {
                            None
                        };
                        let output = route.map(|_| error_object(&err, attempts.unwrap_or(1)));
                        if route.is_some() {
                            frame.context.set(id, output.clone());
                        }
                        let record = frame.push(
                            &step.id,
                            step.kind.type_name(),
                            node_start,
                            node_end,
                            input,
                            output,
                            Some(err.to_string()),
                        );
                        record.attempts = attempts;
                        record.sub_history = sub_history;
                        let record = &*record;
                        self.emit(|| Event::NodeFinished {
                            record: Box::new(record.clone()),
                        });
                        if route.is_some() {
                            self.commit_step(frame, &step.kind).await?;
                        }
                        match route {
                            Some(n) if Some(n) == stop => return Ok(last_output(frame)),
                            Some(n) => at = n,
                            None => return Err(err),
                        }
                    }
                }
            }
        })
    }

    fn check_limits(&self, id: &str) -> Result<(), RunError> {
        let graph = self.graph;
        let shared = self.shared;
        let ran = shared.executed.load(Ordering::Relaxed);
        if ran >= graph.max_nodes {
            return Err(RunError::new(
                RunErrorKind::Limit,
                Some(id),
                format!(
                    "execution limit reached: maxNodeExecutions is {} and {ran} nodes ran",
                    graph.max_nodes
                ),
            ));
        }
        let elapsed = shared.started.elapsed();
        if elapsed >= graph.max_time {
            return Err(RunError::new(
                RunErrorKind::Limit,
                Some(id),
                format!(
                    "execution limit reached: maxExecutionTimeMs is {} and the run has taken {} ms",
                    graph.max_time.as_millis(),
                    elapsed.as_millis()
                ),
            ));
        }
        if let Some(deadline) = self.deadline
            && Instant::now() >= deadline
        {
            return Err(self.tool_timeout(id));
        }
        shared.executed.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn tool_timeout(&self, id: &str) -> RunError {
        RunError::new(
            RunErrorKind::Limit,
            Some(id),
            format!(
                "tool `{}` timed out: its timeoutMs is {}",
                self.graph.name(),
                self.graph.timeout.map_or(0, |t| t.as_millis())
            ),
        )
    }

    /// Runs one node with its timeout and retry policy. Returns the outcome and the attempts
    /// made; a failure carries the input of the last attempt.
    async fn attempts(
        &self,
        frame: &Frame<'_>,
        at: usize,
        args: &mut Option<Value>,
    ) -> (Result<Done, (Failure, Option<Json>)>, u32) {
        let step = &self.graph.nodes[at];
        let max = step
            .options
            .retry
            .as_ref()
            .map_or(1, |r| r.max_attempts.max(1));
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut input = None;
            let result = self
                .bounded(step, self.once(frame, at, args, &mut input))
                .await;
            match result {
                Ok(mut done) => {
                    // What an mcp or call node sent belongs in its record when it succeeds
                    // too, not only when it fails.
                    if done.input.is_none() {
                        done.input = input;
                    }
                    return (Ok(done), attempt);
                }
                Err(failure) => {
                    let retry = step.options.retry.as_ref();
                    if attempt < max
                        && let Some(retry) = retry
                        && retryable(retry, failure.err.kind)
                    {
                        tracing::debug!(node = %step.id, attempt, error = %failure.err, "retrying");
                        let wait = backoff(retry, attempt);
                        tokio::select! {
                            () = tokio::time::sleep(wait) => continue,
                            () = self.shared.control.cancelled().cancelled() => {
                                return (Err((self.stop_error(&step.id).into(), input)), attempt);
                            }
                        }
                    }
                    return (Err((failure, input)), attempt);
                }
            }
        }
    }

    /// `fut` bounded by the node's `timeoutMs` and the tool's deadline.
    async fn bounded(
        &self,
        step: &Step,
        fut: impl Future<Output = Result<Done, Failure>>,
    ) -> Result<Done, Failure> {
        let by_deadline = self
            .deadline
            .map(|d| d.saturating_duration_since(Instant::now()));
        let limit = match (step.options.timeout, by_deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let Some(limit) = limit else {
            return fut.await;
        };
        match tokio::time::timeout(limit, fut).await {
            Ok(r) => r,
            Err(_) if Some(limit) == by_deadline && step.options.timeout != Some(limit) => {
                Err(self.tool_timeout(&step.id).into())
            }
            Err(_) => Err(RunError::new(
                RunErrorKind::Timeout,
                Some(&step.id),
                format!("timed out after {} ms (timeoutMs)", limit.as_millis()),
            )
            .into()),
        }
    }

    /// One attempt of the node at `at`.
    async fn once(
        &self,
        frame: &Frame<'_>,
        at: usize,
        args: &mut Option<Value>,
        input: &mut Option<Json>,
    ) -> Result<Done, Failure> {
        let graph = self.graph;
        let step = &graph.nodes[at];
        let id = &*step.id;
        // Expressions are evaluated synchronously; only upstream calls and sub-chains await,
        // after the scope (which borrows the history) is gone.
        let scope = || Scope {
            context: &frame.context,
            history: frame,
            limits: self.shared.limits,
        };
        // Nodes that wait (upstream calls, scripts, awaits, sub-runs, fan-outs) are boxed: their
        // futures are kilobytes, and inline they would make every node's future, pure ones
        // included, that large, copied at each of the layers above (measured: most of the
        // engine's cost per call was memcpy of this future).
        match &step.kind {
            StepKind::Entry { next } => Ok(Done::plain(args.take(), Some(*next))),
            StepKind::Exit => {
                let last = frame.last_output();
                let out = match last {
                    Some(v) if !js_falsy(&v) => v,
                    _ => empty_object(),
                };
                Ok(Done::plain(Some(out), None))
            }
            StepKind::Transform { expr, next } => expr
                .evaluate(&scope())
                .map(|v| Done::plain(v, Some(*next)))
                .map_err(|e| RunError::expression(id, e).into()),
            StepKind::Switch {
                conditions,
                default,
            } => {
                let t = route(conditions, *default, &scope())
                    .map_err(|e| RunError::expression(id, e))?;
                let routed = Json::String(graph.nodes[t].id.to_string());
                Ok(Done::plain(Some(Value::from_json(routed)), Some(t)))
            }
            StepKind::Mcp {
                server,
                tool,
                args: template,
                next,
            } => {
                let rendered = render_args(template, &scope(), id)?;
                *input = Some(rendered.clone());
                let out = Box::pin(self.call(id, server, tool, rendered)).await?;
                Ok(Done::plain(out, Some(*next)))
            }
            StepKind::Await(_) => Box::pin(self.await_node(frame, at, input)).await,
            StepKind::Script(script) => {
                let (argument, shaped) = script.argument(&scope(), id)?;
                let result = Box::pin(self.script(id, script, &argument)).await;
                let recorded = shaped.then_some(argument);
                match result {
                    Ok(mut done) => {
                        done.input = recorded;
                        Ok(done)
                    }
                    Err(failure) => {
                        *input = recorded;
                        Err(failure)
                    }
                }
            }
            StepKind::Call {
                tool,
                args: template,
                next,
            } => {
                let rendered = render_args(template, &scope(), id)?;
                *input = Some(rendered.clone());
                let (out, sub) = Box::pin(self.sub_run(id, tool, rendered)).await;
                let sub = Some(Arc::new(sub));
                match out {
                    Ok(v) => {
                        let mut done = Done::plain(Some(v), Some(*next));
                        done.sub_history = sub;
                        Ok(done)
                    }
                    Err(err) => Err(Failure {
                        err,
                        children: Vec::new(),
                        sub_history: sub,
                    }),
                }
            }
            StepKind::Parallel {
                branches,
                join,
                fail_fast,
            } => Box::pin(self.parallel(frame, step, branches, *join, *fail_fast)).await,
            StepKind::Foreach {
                items,
                concurrency,
                body,
                next,
            } => {
                let list = items
                    .evaluate(&scope())
                    .map_err(|e| RunError::expression(id, e))?;
                let list = match list.map(Value::into_json) {
                    None => Vec::new(),
                    Some(Json::Array(a)) => a,
                    Some(one) => vec![one],
                };
                Box::pin(self.foreach(frame, step, at, list, *concurrency, *body, *next)).await
            }
        }
    }

    async fn call(
        &self,
        id: &str,
        server: &str,
        tool: &str,
        args: Json,
    ) -> Result<Option<Value>, RunError> {
        let args = match args {
            Json::Object(map) => map,
            other => {
                return Err(RunError::new(
                    RunErrorKind::Expression,
                    Some(id),
                    format!("args must evaluate to an object, got {other}"),
                ));
            }
        };
        // Dropping the call (a stop, a timeout, a failing sibling branch) makes the client
        // send `notifications/cancelled` to the upstream.
        let listened = self.shared.events.is_some_and(|tx| tx.receiver_count() > 0);
        let result = if listened {
            self.call_with_progress(id, server, tool, args).await?
        } else {
            let call = self.shared.pool.call_tool(server, tool, args);
            tokio::select! {
                r = call => r,
                _ = self.shared.control.cancelled().cancelled() => {
                    return Err(self.stop_error(id));
                }
            }
        };
        match result {
            Err(e @ UpstreamError::Timeout { .. }) => Err(RunError::new(
                RunErrorKind::Timeout,
                Some(id),
                e.to_string(),
            )),
            Err(e) => Err(RunError::new(
                RunErrorKind::Upstream,
                Some(id),
                e.to_string(),
            )),
            Ok(r) if r.is_error => Err(RunError::new(
                RunErrorKind::ToolError,
                Some(id),
                format!(
                    "tool `{tool}` of `{server}` failed: {}",
                    tool_error_message(&r)
                ),
            )),
            Ok(r) => Ok(mcp_output(r).map(Value::from_json)),
        }
    }

    /// An upstream call whose progress notifications become [`Event::UpstreamProgress`].
    async fn call_with_progress(
        &self,
        id: &str,
        server: &str,
        tool: &str,
        args: serde_json::Map<String, Json>,
    ) -> Result<Result<mcpflow_upstream::ToolResult, UpstreamError>, RunError> {
        let (sink, mut progress) = tokio::sync::mpsc::unbounded_channel();
        let call = self
            .shared
            .pool
            .call_tool_with_progress(server, tool, args, sink);
        tokio::pin!(call);
        let node_id: Arc<str> = id.into();
        loop {
            tokio::select! {
                r = &mut call => {
                    // rmcp handles notifications on their own tasks: take what already came.
                    while let Ok(p) = progress.try_recv() {
                        self.emit(|| Event::UpstreamProgress {
                            node_id: node_id.clone(),
                            progress: p.progress,
                            total: p.total,
                            message: p.message,
                        });
                    }
                    return Ok(r);
                }
                Some(p) = progress.recv() => self.emit(|| Event::UpstreamProgress {
                    node_id: node_id.clone(),
                    progress: p.progress,
                    total: p.total,
                    message: p.message,
                }),
                _ = self.shared.control.cancelled().cancelled() => {
                    return Err(self.stop_error(id));
                }
            }
        }
    }
}

/// The output of the record just pushed.
fn last_output(frame: &Frame<'_>) -> Option<Value> {
    frame.history.last().and_then(|r| r.output.clone())
}

/// Links a direct child of `node` to the record `node` is about to get.
fn set_parent_index(mut child: Record, node: &Arc<str>, index: usize) -> Record {
    if let Some(p) = &mut child.parent
        && p.node == *node
        && p.index.is_none()
    {
        p.index = Some(index);
    }
    child
}

fn empty_object() -> Value {
    Value::from_json(Json::Object(Default::default()))
}

/// JavaScript's falsy values, which mcpGraph's exit turns into `{}`. Unlike JSON Logic's
/// truthiness, an empty array is not falsy here.
fn js_falsy(v: &Value) -> bool {
    match v.to_json() {
        Json::Null | Json::Bool(false) => true,
        Json::Number(n) => n.as_f64() == Some(0.0),
        Json::String(s) => s.is_empty(),
        _ => false,
    }
}

/// The first condition whose rule is truthy, else the default.
fn route(
    conditions: &[(Logic, usize)],
    default: usize,
    scope: &Scope<'_>,
) -> Result<usize, ExprError> {
    for (logic, next) in conditions {
        if truthy(&logic.evaluate(scope)?) {
            return Ok(*next);
        }
    }
    Ok(default)
}

/// An mcp or call node's arguments; an undefined template gives `{}`.
fn render_args(template: &Template, scope: &Scope<'_>, id: &str) -> Result<Json, RunError> {
    Ok(template
        .render(scope)
        .map_err(|e| RunError::expression(id, e))?
        .unwrap_or(Json::Object(Default::default())))
}
