use std::sync::Arc;
use std::time::{Instant, SystemTime};

use mcpflow_expr::{Context, ExprError, Limits, Logic, Scope, Value, truthy};
use mcpflow_upstream::UpstreamPool;
use serde::Serialize;
use serde_json::Value as Json;
use tokio::sync::broadcast;

use crate::control::Control;
use crate::error::{RunError, RunErrorKind};
use crate::event::Event;
use crate::graph::{Graph, StepKind};
use crate::history::History;
use crate::output::{mcp_output, tool_error_message};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum RunStatus {
    Succeeded,
    Failed,
    Stopped,
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

/// The state of a run while it executes. Only the executor touches it.
pub(crate) struct Executor<'a> {
    pub graph: &'a Graph,
    pub pool: &'a UpstreamPool,
    pub control: &'a Control,
    pub events: Option<&'a broadcast::Sender<Event>>,
    pub limits: &'a Limits,
}

impl Executor<'_> {
    fn emit(&self, event: impl FnOnce() -> Event) {
        // Building an event clones a record: skip it when nobody listens.
        if let Some(tx) = self.events
            && tx.receiver_count() > 0
        {
            let _ = tx.send(event());
        }
    }

    pub async fn execute(&self, args: Json) -> (Result<Value, RunError>, History) {
        let started = Instant::now();
        let mut history = History::new(SystemTime::now());
        let mut context = Context::new();
        let result = self
            .run_loop(args, started, &mut history, &mut context)
            .await;
        (result, history)
    }

    async fn run_loop(
        &self,
        args: Json,
        started: Instant,
        history: &mut History,
        context: &mut Context,
    ) -> Result<Value, RunError> {
        let graph = self.graph;
        let mut args = Some(Value::from_json(args));
        let mut at = graph.entry;
        loop {
            let step = &graph.nodes[at];
            let id = &*step.id;
            let index = history.len();
            if index as u64 >= graph.max_nodes {
                return Err(RunError::new(
                    RunErrorKind::Limit,
                    Some(id),
                    format!(
                        "execution limit reached: maxNodeExecutions is {} and {index} nodes ran",
                        graph.max_nodes
                    ),
                ));
            }
            let elapsed = started.elapsed();
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
            let stopped = || RunError::new(RunErrorKind::Stopped, Some(id), "the run was stopped");
            match self.control.should_pause(id) {
                Err(_) => return Err(stopped()),
                Ok(Some(reason)) => {
                    self.emit(|| Event::Paused {
                        index,
                        node_id: step.id.clone(),
                        reason,
                    });
                    self.control
                        .wait_paused(index, id)
                        .await
                        .map_err(|_| stopped())?;
                    self.emit(|| Event::Resumed);
                }
                Ok(None) => {}
            }
            self.emit(|| Event::NodeStarted {
                index,
                node_id: step.id.clone(),
                node_type: step.kind.type_name(),
            });

            let node_start = started.elapsed();
            // Expressions are evaluated synchronously; only an upstream call awaits, after the
            // scope (which borrows the history) is gone.
            let evaluated: Result<Outcome, RunError> = {
                let scope = Scope {
                    context,
                    history: &*history,
                    limits: self.limits,
                };
                match &step.kind {
                    StepKind::Entry { next } => Ok(Outcome::Done(args.take(), Some(*next))),
                    StepKind::Exit => {
                        let last = history.last().and_then(|r| r.output.clone());
                        let out = match last {
                            Some(v) if !js_falsy(&v) => v,
                            _ => Value::from_json(Json::Object(Default::default())),
                        };
                        Ok(Outcome::Done(Some(out), None))
                    }
                    StepKind::Transform { expr, next } => expr
                        .evaluate(&scope)
                        .map(|v| Outcome::Done(v, Some(*next)))
                        .map_err(|e| RunError::expression(id, e)),
                    StepKind::Switch {
                        conditions,
                        default,
                    } => route(conditions, *default, &scope)
                        .map_err(|e| RunError::expression(id, e))
                        .map(|t| {
                            let routed = Json::String(graph.nodes[t].id.to_string());
                            Outcome::Done(Some(Value::from_json(routed)), Some(t))
                        }),
                    StepKind::Mcp {
                        server,
                        tool,
                        args: template,
                        next,
                    } => template
                        .render(&scope)
                        .map(|rendered| Outcome::Call {
                            server,
                            tool,
                            args: rendered.unwrap_or(Json::Object(Default::default())),
                            next: *next,
                        })
                        .map_err(|e| RunError::expression(id, e)),
                }
            };
            let mut input = None;
            let outcome = match evaluated {
                Ok(Outcome::Done(out, next)) => Ok((out, next)),
                Ok(Outcome::Call {
                    server,
                    tool,
                    args,
                    next,
                }) => {
                    input = Some(args.clone());
                    self.call(id, server, tool, args)
                        .await
                        .map(|v| (v, Some(next)))
                }
                Err(e) => Err(e),
            };
            let node_end = started.elapsed();
            match outcome {
                Ok((output, next)) => {
                    context.set(id, output.clone());
                    let type_name = step.kind.type_name();
                    let record = history.push(
                        &step.id, type_name, node_start, node_end, input, output, None,
                    );
                    self.emit(|| Event::NodeFinished {
                        record: record.clone(),
                    });
                    match next {
                        Some(n) => at = n,
                        None => {
                            return Ok(record.output.clone().unwrap_or_else(|| {
                                Value::from_json(Json::Object(Default::default()))
                            }));
                        }
                    }
                }
                Err(err) => {
                    let msg = Some(err.to_string());
                    let record = history.push(
                        &step.id,
                        step.kind.type_name(),
                        node_start,
                        node_end,
                        input,
                        None,
                        msg,
                    );
                    self.emit(|| Event::NodeFinished {
                        record: record.clone(),
                    });
                    return Err(err);
                }
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
        let call = self.pool.call_tool(server, tool, args);
        let result = tokio::select! {
            r = call => r,
            _ = self.control.cancelled().cancelled() => {
                return Err(RunError::new(RunErrorKind::Stopped, Some(id), "the run was stopped during an upstream call"));
            }
        };
        match result {
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

enum Outcome<'g> {
    Done(Option<Value>, Option<usize>),
    Call {
        server: &'g str,
        tool: &'g str,
        args: Json,
        next: usize,
    },
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
