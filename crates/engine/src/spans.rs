//! The spans a run leaves for export (`mcpflow_telemetry`): one per run and one per node
//! execution, each a child of whatever span is current (the MCP request, or the node that
//! started a branch). They are empty unless traces are exported.

use mcpflow_telemetry::trace::{self, KeyValue, Span, SpanKind};

use crate::error::RunError;
use crate::graph::Step;
use crate::history::Parent;
use crate::run::RunStatus;

/// The span of run `id` of `tool`.
pub(crate) fn run(tool: &str, id: &str, resumed: bool) -> Span {
    if !trace::on() {
        return Span::none();
    }
    Span::start(
        format!("run {tool}"),
        SpanKind::Internal,
        vec![
            KeyValue::new("mcpflow.tool", tool.to_owned()),
            KeyValue::new("mcpflow.run.id", id.to_owned()),
            KeyValue::new("mcpflow.run.resumed", resumed),
        ],
    )
}

/// Records how the run of `span` ended, and ends it.
pub(crate) fn run_ended(span: &Span, status: RunStatus, error: Option<&RunError>) {
    if span.is_none() {
        return;
    }
    span.set("mcpflow.run.status", status.as_str());
    if let Some(err) = error.filter(|_| status == RunStatus::Failed) {
        span.fail(err.kind.as_str());
    }
    span.end();
}

/// The span of one execution of `step` (all its attempts), in a branch or item when
/// `parent` says so.
pub(crate) fn node(step: &Step, parent: Option<&Parent>) -> Span {
    if !trace::on() {
        return Span::none();
    }
    let kind = step.kind.type_name();
    let mut attributes = vec![
        KeyValue::new("mcpflow.node.id", step.id.clone()),
        KeyValue::new("mcpflow.node.type", kind),
    ];
    if let Some(branch) = parent.and_then(|p| p.branch.clone()) {
        attributes.push(KeyValue::new("mcpflow.branch", branch));
    }
    if let Some(item) = parent.and_then(|p| p.item) {
        attributes.push(KeyValue::new(
            "mcpflow.item",
            i64::try_from(item).unwrap_or(i64::MAX),
        ));
    }
    Span::start(
        format!("{kind} {}", step.id),
        SpanKind::Internal,
        attributes,
    )
}

/// Records the attempts a node made and, when it failed, the kind of error; ends the span.
pub(crate) fn node_ended(span: &Span, attempts: u32, error: Option<&RunError>) {
    if span.is_none() {
        return;
    }
    span.set("mcpflow.node.attempts", i64::from(attempts));
    if let Some(err) = error {
        span.fail(err.kind.as_str());
    }
    span.end();
}
