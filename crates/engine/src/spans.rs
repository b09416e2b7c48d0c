//! The spans a run leaves for export (`mcpflow_telemetry`): one per run and one per node
//! execution, each a child of whatever span is current (the MCP request, or the node that
//! started a branch). They are `Span::none()` unless traces are exported.

use mcpflow_telemetry::trace;
use tracing::Span;
use tracing::field::Empty;

use crate::error::RunError;
use crate::graph::Step;
use crate::history::Parent;
use crate::run::RunStatus;

/// The span of run `id` of `tool`.
pub(crate) fn run(tool: &str, id: &str, resumed: bool) -> Span {
    if !trace::on() {
        return Span::none();
    }
    mcpflow_telemetry::span!(
        "mcpflow.run",
        otel.name = format!("run {tool}"),
        otel.status_code = Empty,
        error.type = Empty,
        mcpflow.tool = tool,
        mcpflow.run.id = id,
        mcpflow.run.resumed = resumed,
        mcpflow.run.status = Empty,
    )
}

/// Records how the run of `span` ended.
pub(crate) fn run_ended(span: &Span, status: RunStatus, error: Option<&RunError>) {
    if span.is_disabled() {
        return;
    }
    span.record("mcpflow.run.status", status.as_str());
    if let Some(err) = error.filter(|_| status == RunStatus::Failed) {
        span.record("otel.status_code", "ERROR");
        span.record("error.type", err.kind.as_str());
    }
}

/// The span of one execution of `step` (all its attempts), in a branch or item when
/// `parent` says so.
pub(crate) fn node(step: &Step, parent: Option<&Parent>) -> Span {
    if !trace::on() {
        return Span::none();
    }
    let kind = step.kind.type_name();
    mcpflow_telemetry::span!(
        "mcpflow.node",
        otel.name = format!("{kind} {}", step.id),
        otel.status_code = Empty,
        error.type = Empty,
        mcpflow.node.id = &*step.id,
        mcpflow.node.type = kind,
        mcpflow.node.attempts = Empty,
        mcpflow.branch = parent.and_then(|p| p.branch.as_deref()),
        mcpflow.item = parent.and_then(|p| p.item),
    )
}

/// Records the attempts a node made and, when it failed, the kind of error.
pub(crate) fn node_ended(span: &Span, attempts: u32, error: Option<&RunError>) {
    if span.is_disabled() {
        return;
    }
    span.record("mcpflow.node.attempts", attempts);
    if let Some(err) = error {
        span.record("otel.status_code", "ERROR");
        span.record("error.type", err.kind.as_str());
    }
}
