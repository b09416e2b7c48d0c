//! The `await` node: where a run stops for its client. In client mode the run suspends: the
//! node's attempt is [`Attempt::Wait`], which the durable layer turns into a session. In elicit
//! mode the client is asked inline and the answer becomes the node's output at once.

use std::sync::Arc;

use futures::future::BoxFuture;
use mcpflow_expr::{Template, Value};
use mcpflow_model::{AwaitMode, AwaitNode};
use serde_json::Value as Json;

use crate::compile::Compiler;
use crate::error::{RunError, RunErrorKind};
use crate::frame::Frame;
use crate::graph::{Graph, NodeSite, StepKind};
use crate::run::{Attempt, Done, Executor, Failure};
use crate::schema::SchemaValidator;

/// An await node, compiled.
#[derive(Debug)]
pub(crate) struct AwaitStep {
    pub message: Template,
    pub options: Option<Template>,
    pub input_schema: Json,
    pub validator: Arc<SchemaValidator>,
    pub mode: AwaitMode,
    pub next: usize,
}

impl AwaitStep {
    pub(crate) fn compile(
        node: &AwaitNode,
        site: &NodeSite<'_>,
        next: usize,
        c: &mut Compiler<'_>,
    ) -> Option<AwaitStep> {
        let ptr = &site.ptr;
        let owner = format!(" in {}", site.label(&node.id));
        let validator = c.schema(
            &node.input_schema,
            &format!("{ptr}/inputSchema"),
            "inputSchema",
            &owner,
        );
        let message = c.template(&node.message, &format!("{ptr}/message"), &node.id);
        let options = match &node.options {
            Some(o) => Some(c.template(o, &format!("{ptr}/options"), &node.id)?),
            None => None,
        };
        Some(AwaitStep {
            message: message?,
            options,
            validator: Arc::new(validator?),
            input_schema: node.input_schema.clone(),
            mode: node.mode.unwrap_or_default(),
            next,
        })
    }

    /// Every violation of the input schema, each as `at /pointer: message`.
    pub(crate) fn check(&self, input: &Json) -> Result<(), Vec<String>> {
        self.validator.check(input)
    }
}

impl Graph {
    /// Whether a run of this tool can stop for its client (it has an `await` node).
    pub fn can_wait(&self) -> bool {
        self.nodes
            .iter()
            .any(|s| matches!(s.kind, StepKind::Await(_)))
    }

    /// Whether the tool is marked `resumable: true`.
    pub fn is_resumable(&self) -> bool {
        self.tool.resumable == Some(true)
    }

    pub(crate) fn await_step(&self, node_id: &str) -> Option<(usize, &AwaitStep)> {
        self.nodes
            .iter()
            .enumerate()
            .find_map(|(i, s)| match &s.kind {
                StepKind::Await(a) if &*s.id == node_id => Some((i, &**a)),
                _ => None,
            })
    }

    /// Checks a client's input for the await node `node_id`.
    pub fn check_await_input(&self, node_id: &str, input: &Json) -> Result<(), Vec<String>> {
        match self.await_step(node_id) {
            Some((_, a)) => a.check(input),
            None => Err(vec![format!(
                "tool `{}` has no await node `{node_id}`",
                self.name()
            )]),
        }
    }
}

/// Where a run stopped for its client, as it was rendered.
#[derive(Debug, Clone, PartialEq)]
pub struct Suspension {
    pub node_id: String,
    pub message: Json,
    pub options: Option<Json>,
    pub input_schema: Json,
}

/// The client's side of an inline question (MCP elicitation), supplied by the server.
pub trait Ask: Send + Sync {
    /// Whether the client declared that it can be asked (for `mode: auto`).
    fn can_elicit(&self) -> bool;
    /// A `'static` future (it owns what it needs), so the run loop stays `Send`.
    fn ask(&self, message: String, schema: Json) -> BoxFuture<'static, Answer>;
}

/// What the client answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    Accepted(Json),
    Declined,
    Cancelled,
    /// It could not be asked (no capability, a schema elicitation cannot carry, a broken pipe).
    Failed(String),
    /// It will be asked through the call's result (protocol 2026-07-28 "input required": no
    /// server-to-client requests): the run suspends into a session, as in client mode, and
    /// the server turns the wait into the question.
    Deferred,
}

impl Executor<'_> {
    /// An await node in the main flow: elicit inline, or suspend the run.
    pub(crate) async fn await_node(
        &self,
        frame: &Frame<'_>,
        at: usize,
        input: &mut Option<Json>,
    ) -> Result<Attempt, Failure> {
        let step = &self.graph.nodes[at];
        let id = &*step.id;
        let StepKind::Await(a) = &step.kind else {
            return Err(
                RunError::new(RunErrorKind::Expression, Some(id), "not an await node").into(),
            );
        };
        if !frame.is_main() || self.depth != 0 {
            return Err(RunError::new(
                RunErrorKind::Expression,
                Some(id),
                "an await node can only run in the main flow of the tool the client called, \
                 not in a parallel branch, a foreach body or a called tool",
            )
            .into());
        }
        let Some(durable) = self.shared.durable else {
            return Err(RunError::new(
                RunErrorKind::Store,
                Some(id),
                format!(
                    "tool `{}` waits for its client here, but no store is configured to keep \
                     the session: serve it with `mcpflow serve` (a SQLite store is the default) \
                     or pass --store",
                    self.graph.name()
                ),
            )
            .into());
        };
        // The scope borrows the history as a non-`Sync` view: it must be gone before any await.
        let (message, options) = {
            let scope = self.full_scope(frame);
            let message = a
                .message
                .render(&scope)
                .map_err(|e| RunError::expression(id, e))?
                .unwrap_or(Json::Null);
            let options = match &a.options {
                Some(t) => t.render(&scope).map_err(|e| RunError::expression(id, e))?,
                None => None,
            };
            (message, options)
        };
        let asker = durable.ask.as_ref().filter(|ask| match a.mode {
            AwaitMode::Client => false,
            AwaitMode::Elicit => true,
            AwaitMode::Auto => ask.can_elicit(),
        });
        let mut deferred = false;
        if let Some(ask) = asker {
            let text = match &message {
                Json::String(s) => s.clone(),
                other => other.to_string(),
            };
            *input = Some(serde_json::json!({ "message": message }));
            match ask.ask(text, a.input_schema.clone()).await {
                Answer::Accepted(value) => {
                    return match a.check(&value) {
                        Ok(()) => {
                            Ok(Done::plain(Some(Value::from_json(value)), Some(a.next)).into())
                        }
                        Err(errors) => Err(RunError::new(
                            RunErrorKind::Declined,
                            Some(id),
                            format!(
                                "the client's answer does not match the node's inputSchema: {}",
                                errors.join("; ")
                            ),
                        )
                        .into()),
                    };
                }
                Answer::Declined => return Err(declined(id, "declined")),
                Answer::Cancelled => return Err(declined(id, "cancelled")),
                Answer::Failed(why) => {
                    return Err(RunError::new(
                        RunErrorKind::Declined,
                        Some(id),
                        format!("could not ask the client for input (mode: elicit): {why}"),
                    )
                    .into());
                }
                // Asked through the call's result: wait as a session.
                Answer::Deferred => deferred = true,
            }
        }
        if a.mode == AwaitMode::Elicit && !deferred {
            return Err(RunError::new(
                RunErrorKind::Declined,
                Some(id),
                "this node asks the client inline (mode: elicit), but the call has no client to \
                 ask; use mode: auto to fall back to a session",
            )
            .into());
        }
        Ok(Attempt::Wait(Suspension {
            node_id: id.to_owned(),
            message,
            options,
            input_schema: a.input_schema.clone(),
        }))
    }
}

fn declined(id: &str, how: &str) -> Failure {
    RunError::new(
        RunErrorKind::Declined,
        Some(id),
        format!("the client {how} the request for input"),
    )
    .into()
}
