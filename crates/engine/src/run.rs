//! The run loop: [`Executor::run_chain`] walks a graph's nodes, checks the limits before each,
//! honours debug pauses, runs a node with its timeout and retries ([`Executor::attempts`]),
//! and hands what the node did to [`Executor::finish_node`], the one place that records,
//! emits and commits a node's outcome and decides where the run goes next. What each node
//! kind does lives in [`crate::nodes`]. A run ends [`RunEnd::Finished`] or
//! [`RunEnd::Waiting`]: a wait is a value, not an error.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use indexmap::IndexMap;
use mcpflow_expr::{Limits, Scope, Value};
use mcpflow_upstream::UpstreamPool;
use serde::Serialize;
use serde_json::{Value as Json, json};
use tokio::sync::broadcast;

use crate::control::{Control, Here};
use crate::error::{RunError, RunErrorKind};
use crate::event::Event;
use crate::frame::Frame;
use crate::graph::{Graph, Step, StepKind};
use crate::history::{History, Record};
use crate::nodes::{self, await_node::Suspension};
use crate::resilience::{backoff, error_object, retryable};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum RunStatus {
    /// Suspended at an await node ([`RunEnd::Waiting`]).
    Waiting,
    Succeeded,
    Failed,
    Stopped,
    /// The client cancelled the call ([`Control::cancel`]).
    Cancelled,
}

impl RunStatus {
    /// The status of a run that finished with `result` under `control`.
    pub(crate) fn of(result: &Result<Value, RunError>, control: &Control) -> RunStatus {
        match result {
            Ok(_) => RunStatus::Succeeded,
            Err(e) if e.kind == RunErrorKind::Stopped && control.is_cancelled() => {
                RunStatus::Cancelled
            }
            Err(e) if e.kind == RunErrorKind::Stopped => RunStatus::Stopped,
            Err(_) => RunStatus::Failed,
        }
    }

    /// The status as serialized (`succeeded`, `waiting`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Waiting => "waiting",
            RunStatus::Succeeded => "succeeded",
            RunStatus::Failed => "failed",
            RunStatus::Stopped => "stopped",
            RunStatus::Cancelled => "cancelled",
        }
    }
}

/// One execution of a graph tool: how it ended, and everything it did.
#[derive(Debug, Clone)]
pub struct Run {
    pub id: Arc<str>,
    pub tool: Arc<str>,
    pub status: RunStatus,
    pub end: RunEnd,
    pub history: History,
}

/// How a run ended.
#[derive(Debug, Clone)]
pub enum RunEnd {
    /// It ran to its end: its output, or why it failed.
    Finished(Result<Value, RunError>),
    /// It stopped at an await node and is kept as a session until its client continues it.
    /// Boxed: a waiting run is rare, and a finished one should not carry its size.
    Waiting(Box<Waiting>),
}

/// A run waiting for its client: the session that holds it and what it asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct Waiting {
    pub session_id: String,
    pub run_id: String,
    /// Milliseconds since the epoch.
    pub expires_at: i64,
    pub suspension: Suspension,
}

impl Waiting {
    /// What a tool call answers when its run waits: `{status: "waiting", sessionId, runId,
    /// nodeId, message, inputSchema, expiresAt, options?}`.
    pub fn to_json(&self) -> Json {
        let s = &self.suspension;
        let mut out = json!({
            "status": "waiting",
            "sessionId": self.session_id,
            "runId": self.run_id,
            "nodeId": s.node_id,
            "message": s.message,
            "inputSchema": s.input_schema,
            "expiresAt": self.expires_at,
        });
        if let (Some(options), Json::Object(map)) = (&s.options, &mut out) {
            map.insert("options".into(), options.clone());
        }
        out
    }
}

impl Run {
    /// The output of a run that succeeded.
    pub fn output(&self) -> Option<&Value> {
        match &self.end {
            RunEnd::Finished(Ok(v)) => Some(v),
            _ => None,
        }
    }

    /// Why a run failed.
    pub fn error(&self) -> Option<&RunError> {
        match &self.end {
            RunEnd::Finished(Err(e)) => Some(e),
            _ => None,
        }
    }

    /// Where a waiting run waits.
    pub fn waiting(&self) -> Option<&Waiting> {
        match &self.end {
            RunEnd::Waiting(w) => Some(w),
            RunEnd::Finished(_) => None,
        }
    }

    /// What a caller that does not distinguish waiting gets: the output, the waiting answer
    /// ([`Waiting::to_json`]) or the error.
    pub fn into_result(self) -> Result<Value, RunError> {
        match self.end {
            RunEnd::Finished(result) => result,
            RunEnd::Waiting(w) => Ok(Value::from_json(w.to_json())),
        }
    }

    pub(crate) fn failed(id: Arc<str>, tool: &str, err: RunError) -> Run {
        Run {
            id,
            tool: tool.into(),
            status: RunStatus::Failed,
            end: RunEnd::Finished(Err(err)),
            history: History::default(),
        }
    }
}

/// What every part of one run shares, sub-runs and branches included.
pub(crate) struct Shared<'a> {
    pub graphs: &'a IndexMap<String, Arc<Graph>>,
    pub pool: &'a UpstreamPool,
    pub control: &'a Control,
    pub events: Option<&'a broadcast::Sender<Event>>,
    /// The full limits of an evaluation (off the request path, or where there is no going
    /// there: scripts' arguments, await messages).
    pub limits: &'a Limits,
    /// The limits of an evaluation in place, with the small step budget (see
    /// [`crate::offload`]).
    pub quick: &'a Limits,
    pub started: Instant,
    /// Nodes started in the whole run (branches and sub-runs included), for `maxNodeExecutions`.
    pub executed: AtomicU64,
    /// Set for tools that can wait or are resumable, when a store is attached.
    pub durable: Option<&'a crate::durable::DurableRun>,
    /// Who the run is for (`$caller` in every expression of it, sub-runs and branches too).
    pub caller: &'a crate::caller::Caller,
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

/// How a chain of nodes ended: at its exit (or a branch's join) with the last output, or at an
/// await node that suspends the run (only ever in the main flow of the tool the client called).
pub(crate) enum Chain {
    Done(Option<Value>),
    Waiting(Box<Suspension>),
}

impl Chain {
    /// The output of a chain that cannot wait (a branch, an item, a sub-run, a run without a
    /// store): await nodes refuse to suspend there, so a wait reaching here is reported as
    /// a failure rather than lost.
    pub(crate) fn output(self, node: Option<&str>) -> Result<Option<Value>, RunError> {
        match self {
            Chain::Done(v) => Ok(v),
            Chain::Waiting(s) => Err(RunError::new(
                RunErrorKind::Store,
                node.or(Some(&s.node_id)),
                "the run cannot wait for its client here",
            )),
        }
    }
}

/// What one attempt of a node produced: it is done, or (an await node) the run waits.
pub(crate) enum Attempt {
    Done(Done),
    Wait(Suspension),
}

impl From<Done> for Attempt {
    fn from(done: Done) -> Attempt {
        Attempt::Done(done)
    }
}

/// What a node that is done produced.
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

/// How a node ended after its attempts: what it produced, or its last failure with the input
/// of the attempt that failed.
type Outcome = Result<Done, (Failure, Option<Json>)>;

/// When a node ran, as offsets from the run's start.
#[derive(Clone, Copy)]
pub(crate) struct Span {
    pub start: Duration,
    pub end: Duration,
    /// Attempts made, when the node has `retry` or needed more than one.
    pub attempts: Option<u32>,
}

/// An empty output (`{}`) for a run whose last node produced nothing.
pub(crate) fn or_empty(output: Option<Value>) -> Value {
    output.unwrap_or_else(empty_object)
}

pub(crate) fn empty_object() -> Value {
    Value::from_json(Json::Object(Default::default()))
}

impl<'a> Executor<'a> {
    /// The executor of the tool the client called.
    pub(crate) fn top(shared: &'a Shared<'a>, graph: &'a Graph) -> Executor<'a> {
        Executor {
            shared,
            graph,
            depth: 0,
            deadline: graph.timeout.map(|t| shared.started + t),
        }
    }

    pub(crate) fn emit(&self, event: impl FnOnce() -> Event) {
        // Building an event clones a record: skip it when nobody listens. A run without a
        // channel pays one atomic load here (a channel attached later, see `Control`).
        let tx = match self.shared.events {
            Some(tx) => Some(tx),
            None => self.shared.control.attached_events(),
        };
        if let Some(tx) = tx
            && tx.receiver_count() > 0
            && tx.send(event()).is_ok()
        {
            self.shared.control.count_emitted();
        }
    }

    /// The scope expressions of the node about to run read.
    /// The scope of an evaluation in place, within the quick step budget: only for
    /// evaluations that go through [`Executor::evaluate`], which takes the heavy ones off the
    /// request path.
    pub(crate) fn scope<'s>(&'s self, frame: &'s Frame<'_>) -> Scope<'s> {
        Scope {
            context: &frame.context,
            history: frame,
            limits: self.shared.quick,
            caller: Some(self.shared.caller.json()),
        }
    }

    /// The scope of an evaluation in place with the full limits.
    pub(crate) fn full_scope<'s>(&'s self, frame: &'s Frame<'_>) -> Scope<'s> {
        Scope {
            context: &frame.context,
            history: frame,
            limits: self.shared.limits,
            caller: Some(self.shared.caller.json()),
        }
    }

    pub async fn execute(&self, args: Json) -> (Result<Chain, RunError>, History) {
        let mut frame = Frame::new();
        let result = self
            .run_chain(
                &mut frame,
                self.graph.entry,
                None,
                Some(Value::from_json(args)),
            )
            .await;
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
    /// join, a foreach body's way back), which is not run. Returns the last output, or where
    /// the run waits.
    pub(crate) fn run_chain<'f, 'p: 'f>(
        &'f self,
        frame: &'f mut Frame<'p>,
        mut at: usize,
        stop: Option<usize>,
        mut args: Option<Value>,
    ) -> BoxFuture<'f, Result<Chain, RunError>> {
        Box::pin(async move {
            let shared = self.shared;
            loop {
                let step = &self.graph.nodes[at];
                let id = &*step.id;
                // The clock read for the time limit is also the node's start, unless a debug
                // pause comes between them.
                let mut start = self.check_limits(id)?;
                let index = frame.len();
                // Debug control reaches every line: the main flow, branches and items.
                match shared.control.should_pause(id, || self.scope(frame)) {
                    Err(_) => return Err(self.stop_error(id)),
                    Ok(Some(reason)) => {
                        let parent = frame.parent.as_ref();
                        let branch = parent.and_then(|p| p.branch.clone());
                        let item = parent.and_then(|p| p.item);
                        self.emit(|| Event::Paused {
                            index,
                            node_id: step.id.clone(),
                            reason: reason.clone(),
                            branch: branch.clone(),
                            item,
                        });
                        let here = Here {
                            index,
                            node_id: id,
                            reason,
                            branch: branch.as_deref(),
                            item,
                        };
                        shared
                            .control
                            .wait_paused(here, frame.context.to_json())
                            .await
                            .map_err(|_| self.stop_error(id))?;
                        self.emit(|| Event::Resumed);
                        start = shared.started.elapsed();
                    }
                    Ok(None) => {}
                }
                self.emit(|| Event::NodeStarted {
                    index,
                    node_id: step.id.clone(),
                    node_type: step.kind.type_name(),
                });
                let node_span = crate::spans::node(step, frame.parent.as_ref());
                let (outcome, attempts) =
                    node_span.around(self.attempts(frame, at, &mut args)).await;
                let failed = outcome.as_ref().err().map(|(f, _)| &f.err);
                crate::spans::node_ended(&node_span, attempts, failed);
                let span = Span {
                    start,
                    end: shared.started.elapsed(),
                    attempts: (step.options.retry.is_some() || attempts > 1).then_some(attempts),
                };
                let outcome = match outcome {
                    // Not a node that finished: the await node's record comes with the input.
                    Ok(Attempt::Wait(s)) => return Ok(Chain::Waiting(Box::new(s))),
                    Ok(Attempt::Done(done)) => Ok(done),
                    Err(failed) => Err(failed),
                };
                match self.finish_node(frame, step, span, outcome).await? {
                    Some(n) if Some(n) != stop => at = n,
                    _ => return Ok(Chain::Done(last_output(frame))),
                }
            }
        })
    }

    /// The one place a node's outcome is recorded, emitted and committed: the records of its
    /// branches or items first, then its own; a failure is routed (`onError`, `optional`,
    /// where the error object becomes its output) or ends the chain. Returns where the chain
    /// goes next (`None`: it ends here).
    async fn finish_node(
        &self,
        frame: &mut Frame<'_>,
        step: &Step,
        span: Span,
        outcome: Outcome,
    ) -> Result<Option<usize>, RunError> {
        // A failure that `onError` or `optional` routes goes on like a success, with the error
        // object as its output; one that nothing routes ends the chain.
        let (done, error, fails) = match outcome {
            Ok(done) => (done, None, None),
            Err((failure, input)) => {
                let route = if failure.err.kind.is_routable() {
                    step.options.on_error.or_else(|| {
                        step.options
                            .optional
                            .then(|| step.kind.default_next())
                            .flatten()
                    })
                } else {
                    None
                };
                let done = Done {
                    output: route.map(|_| error_object(&failure.err, span.attempts.unwrap_or(1))),
                    next: route,
                    input,
                    children: failure.children,
                    sub_history: failure.sub_history,
                    logs: None,
                };
                let text = failure.err.to_string();
                (done, Some(text), route.is_none().then_some(failure.err))
            }
        };
        let own_index = frame.len() + done.children.len();
        for child in done.children {
            frame.context.set(&child.node_id, child.output.clone());
            frame.append(set_parent_index(child, &step.id, own_index));
        }
        if fails.is_none() {
            frame.context.set(&step.id, done.output.clone());
        }
        let mut record =
            frame
                .history
                .record(&step.id, step.kind.type_name(), span.start, span.end);
        record.input = done.input;
        record.output = done.output;
        record.error = error;
        record.attempts = span.attempts;
        record.sub_history = done.sub_history;
        record.logs = done.logs;
        record.parent = frame.parent.clone();
        frame.append(record);
        if let Some(record) = frame.history.last() {
            self.emit(|| Event::NodeFinished {
                record: Box::new(record.clone()),
            });
        }
        if let Some(err) = fails {
            return Err(err);
        }
        self.commit_step(frame, &step.kind).await?;
        Ok(done.next)
    }

    /// Checks the limits before a node starts; returns the time since the run started.
    fn check_limits(&self, id: &str) -> Result<Duration, RunError> {
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
        Ok(elapsed)
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
    ) -> (Result<Attempt, (Failure, Option<Json>)>, u32) {
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
            let result = {
                // Lent pinned: passed by value, `bounded` kept the attempt's future twice (the
                // argument and the awaited copy), bytes copied for every node.
                let once = std::pin::pin!(self.once(frame, at, args, &mut input));
                self.bounded(step, once).await
            };
            match result {
                Ok(Attempt::Done(mut done)) => {
                    // What an mcp or call node sent belongs in its record when it succeeds
                    // too, not only when it fails.
                    if done.input.is_none() {
                        done.input = input;
                    }
                    return (Ok(Attempt::Done(done)), attempt);
                }
                Ok(wait) => return (Ok(wait), attempt),
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
        fut: impl Future<Output = Result<Attempt, Failure>>,
    ) -> Result<Attempt, Failure> {
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

    /// One attempt of the node at `at`: what each kind does lives in [`crate::nodes`].
    async fn once(
        &self,
        frame: &Frame<'_>,
        at: usize,
        args: &mut Option<Value>,
        input: &mut Option<Json>,
    ) -> Result<Attempt, Failure> {
        let step = &self.graph.nodes[at];
        let id = &*step.id;
        // Expressions are evaluated in place within a small step budget (a heavy one goes to a
        // blocking thread, boxed, see `crate::offload`); only upstream calls and sub-chains
        // await, after the scope (which borrows the history) is gone. Nodes that wait (upstream
        // calls, scripts, awaits, sub-runs, fan-outs) are boxed: their futures are kilobytes,
        // and inline they would make every node's future, pure ones included, that large,
        // copied at each of the layers above (measured: most of the engine's cost per call was
        // memcpy of this future).
        let done = match &step.kind {
            StepKind::Entry { next } => Done::plain(args.take(), Some(*next)),
            StepKind::Exit => nodes::transform::exit(frame),
            StepKind::Transform { expr, next } => self.transform(frame, id, expr, *next).await?,
            StepKind::Switch {
                conditions,
                default,
            } => self.switch(frame, id, conditions, *default).await?,
            StepKind::Mcp {
                server,
                tool,
                args: template,
                next,
            } => {
                let rendered = self.render_args(frame, template, id).await?;
                *input = Some(rendered.clone());
                let out = Box::pin(self.call(id, server, tool, rendered)).await?;
                Done::plain(out, Some(*next))
            }
            StepKind::Await(_) => return Box::pin(self.await_node(frame, at, input)).await,
            StepKind::Script(script) => {
                let (argument, shaped) = script.argument(&self.full_scope(frame), id)?;
                let result = Box::pin(self.script(id, script, &argument)).await;
                let recorded = shaped.then_some(argument);
                match result {
                    Ok(mut done) => {
                        done.input = recorded;
                        done
                    }
                    Err(failure) => {
                        *input = recorded;
                        return Err(failure);
                    }
                }
            }
            StepKind::Call {
                tool,
                args: template,
                next,
            } => {
                let rendered = self.render_args(frame, template, id).await?;
                *input = Some(rendered.clone());
                Box::pin(self.call_node(id, tool, rendered, *next)).await?
            }
            StepKind::Parallel {
                branches,
                join,
                fail_fast,
            } => Box::pin(self.parallel(frame, step, branches, *join, *fail_fast)).await?,
            StepKind::Foreach(foreach) => {
                let items = &foreach.items;
                let list = self
                    .evaluate(
                        frame,
                        |scope| items.evaluate(scope),
                        || {
                            let items = items.clone();
                            move |scope: &Scope<'_>| items.evaluate(scope)
                        },
                    )
                    .await
                    .map_err(|e| RunError::expression(id, e))?;
                let list = match list.map(Value::into_json) {
                    None => Vec::new(),
                    Some(Json::Array(a)) => a,
                    Some(one) => vec![one],
                };
                Box::pin(self.foreach(frame, step, at, foreach, list)).await?
            }
        };
        Ok(Attempt::Done(done))
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
