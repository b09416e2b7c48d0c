//! One span and one count per MCP request served: the request's method and outcome, a
//! `tools/call`'s tool and kind, and the caller's trace context (the request's
//! `_meta.traceparent`, else the HTTP request's `traceparent` header) as the span's parent.
//! `LiveServer`'s handler puts every request it answers through [`Observation`]; with neither
//! metrics nor traces on there is none, and the request goes straight through.

use std::future::Future;
use std::time::Instant;

use mcpflow_telemetry::metrics::{self, Outcome, ToolKind};
use mcpflow_telemetry::trace::{self, KeyValue, Span, SpanKind};
use rmcp::model::{CallToolResponse, JsonObject};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};

/// What the server answered, as an outcome: only a tool result can be a tool error.
pub(crate) trait Answer {
    fn is_tool_error(&self) -> bool {
        false
    }
}

impl Answer for CallToolResponse {
    fn is_tool_error(&self) -> bool {
        matches!(self, CallToolResponse::Complete(r) if r.is_error == Some(true))
    }
}

macro_rules! plain_answers {
    ($($t:ty),* $(,)?) => { $(impl Answer for $t {})* };
}

plain_answers!(
    (),
    rmcp::model::InitializeResult,
    rmcp::model::ListToolsResult,
    rmcp::model::ListResourcesResult,
    rmcp::model::ListResourceTemplatesResult,
    rmcp::model::ReadResourceResponse,
    rmcp::model::CompleteResult,
    rmcp::model::ListPromptsResult,
    rmcp::model::GetPromptResponse,
);

/// One request being answered, when metrics or traces are on.
pub(crate) struct Observation {
    method: &'static str,
    tool: Option<String>,
    span: Span,
    started: Instant,
}

impl Observation {
    /// Starts observing a `method` request (`tool` and its `arguments` for a `tools/call`);
    /// nothing when neither metrics nor traces are on.
    pub(crate) fn start(
        method: &'static str,
        tool: Option<&str>,
        arguments: Option<&JsonObject>,
        context: &RequestContext<RoleServer>,
    ) -> Option<Observation> {
        if metrics::get().is_none() && !trace::on() {
            return None;
        }
        Some(Observation {
            method,
            tool: tool.map(str::to_owned),
            span: request_span(method, tool, arguments, context),
            started: Instant::now(),
        })
    }

    /// Answers with `answer` inside the request's span, then counts it; `kind` says whose
    /// tool a `tools/call` reached.
    pub(crate) async fn around<T: Answer>(
        observation: Option<Observation>,
        answer: impl Future<Output = Result<T, McpError>>,
        kind: impl FnOnce(&str) -> ToolKind,
    ) -> Result<T, McpError> {
        let Some(o) = observation else {
            return answer.await;
        };
        let result = o.span.around(answer).await;
        let outcome = match &result {
            Err(_) => Outcome::Error,
            Ok(answer) if answer.is_tool_error() => Outcome::ToolError,
            Ok(_) => Outcome::Ok,
        };
        if outcome != Outcome::Ok && !o.span.is_none() {
            match &result {
                Err(e) => o.span.fail(format!("jsonrpc {}", e.code.0)),
                Ok(_) => o.span.fail("tool_error"),
            };
        }
        o.span.end();
        let elapsed = o.started.elapsed();
        metrics::request(o.method, outcome, elapsed);
        if let Some(tool) = &o.tool {
            metrics::tool_call(tool, kind(tool), outcome, elapsed);
        }
        result
    }
}

fn request_span(
    method: &'static str,
    tool: Option<&str>,
    arguments: Option<&JsonObject>,
    context: &RequestContext<RoleServer>,
) -> Span {
    if !trace::on() {
        return Span::none();
    }
    let mut more = vec![KeyValue::new("jsonrpc.request.id", context.id.to_string())];
    if tool.is_some() {
        more.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
    }
    if let Some(arguments) = arguments
        .filter(|_| trace::record_arguments())
        .and_then(|a| serde_json::to_string(a).ok())
    {
        more.push(KeyValue::new(
            "mcp.tool.arguments",
            trace::bounded(&arguments).to_owned(),
        ));
    }
    let from_meta = context
        .meta
        .get_traceparent()
        .map(|tp| (tp, context.meta.get_tracestate()));
    let parts = context.extensions.get::<axum::http::request::Parts>();
    let header = |name: &str| {
        parts
            .and_then(|p| p.headers.get(name))
            .and_then(|v| v.to_str().ok())
    };
    let from_header = || header("traceparent").map(|tp| (tp, header("tracestate")));
    // The caller's span, or none: a request starts a trace of its own, whatever span
    // happens to be current on this thread.
    let parent = match from_meta.or_else(from_header) {
        Some((traceparent, tracestate)) => trace::remote_parent(traceparent, tracestate),
        None => trace::Parent::root(),
    };
    trace::mcp_request(SpanKind::Server, method, tool, more, Some(&parent))
}
