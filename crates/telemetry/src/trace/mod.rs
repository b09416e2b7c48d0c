//! Spans for export and W3C trace context.
//!
//! Spans are our own ([`Span`], `span.rs`), sampled by the installed [`Sampler`] and handed,
//! as they end, to the installed [`Sink`] (the binary's OTLP processor); until [`install`]
//! every [`Span`] is empty and costs one atomic load. A span's children find it as the span
//! current while its work is polled ([`Span::around`]), so a node's span is the child of its
//! run's, and an upstream call's the child of its node's, without passing the parent through
//! every signature.
//!
//! Why not `tracing` spans bridged by tracing-opentelemetry, nor the SDK's tracer: each cost
//! copies of every span that were most of what tracing cost per call (41 %, then 12 % more
//! instructions than an untraced call; bench/README.md, telemetry).

mod ids;
mod sampler;
mod span;

use std::sync::{Arc, OnceLock};

use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry::trace::TraceContextExt;
// What the other crates name their spans with, so they need no OpenTelemetry dependency.
pub use opentelemetry::KeyValue;
pub use opentelemetry::trace::SpanKind;
use opentelemetry_sdk::propagation::TraceContextPropagator;

pub use sampler::Sampler;
pub use span::{Around, Finished, Sink, Span};
use span::{Ids, with_current};

/// Where spans go and which are kept.
pub struct Pipeline {
    pub sampler: Sampler,
    pub sink: Arc<dyn Sink>,
    /// Whether tool arguments may go into span attributes (`telemetry.traces.recordArguments`).
    pub record_arguments: bool,
}

static PIPELINE: OnceLock<Pipeline> = OnceLock::new();

/// Starts recording spans into `pipeline`. A second call is ignored (the first stays).
pub fn install(pipeline: Pipeline) {
    let _ = PIPELINE.set(pipeline);
}

#[inline]
fn pipeline() -> Option<&'static Pipeline> {
    PIPELINE.get()
}

/// Whether spans are exported: when not, skip building what only a span would carry.
#[inline]
pub fn on() -> bool {
    PIPELINE.get().is_some()
}

/// Whether tool arguments may go into span attributes (`telemetry.traces.recordArguments`).
pub fn record_arguments() -> bool {
    pipeline().is_some_and(|p| p.record_arguments)
}

/// Longest argument text put in an attribute.
pub const ARGUMENTS_LIMIT: usize = 4096;

/// `text` cut to [`ARGUMENTS_LIMIT`] bytes at a character boundary.
pub fn bounded(text: &str) -> &str {
    if text.len() <= ARGUMENTS_LIMIT {
        return text;
    }
    let mut end = ARGUMENTS_LIMIT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// `{method} {tool}`, or the method alone: the MCP semantic conventions' span name.
pub fn span_name(method: &str, tool: Option<&str>) -> String {
    match tool {
        Some(tool) => format!("{method} {tool}"),
        None => method.to_owned(),
    }
}

/// The span of an MCP request, served (`Server`, a child of `parent`) or sent upstream
/// (`Client`, a child of the current span), named and labelled as the MCP semantic
/// conventions say, with `more` attributes after the method and tool.
pub fn mcp_request(
    kind: SpanKind,
    method: &'static str,
    tool: Option<&str>,
    more: impl IntoIterator<Item = KeyValue>,
    parent: Option<&Parent>,
) -> Span {
    if !on() {
        return Span::none();
    }
    let mut attributes = vec![KeyValue::new("mcp.method.name", method)];
    if let Some(tool) = tool {
        attributes.push(KeyValue::new("gen_ai.tool.name", tool.to_owned()));
    }
    attributes.extend(more);
    let name = span_name(method, tool);
    match parent {
        Some(parent) => Span::start_in(parent, name, kind, attributes),
        None => Span::start(name, kind, attributes),
    }
}

/// W3C trace context, as sent in `traceparent` / `tracestate`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    pub traceparent: String,
    pub tracestate: Option<String>,
}

struct Incoming<'a> {
    traceparent: &'a str,
    tracestate: Option<&'a str>,
}

impl Extractor for Incoming<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        match key {
            "traceparent" => Some(self.traceparent),
            "tracestate" => self.tracestate,
            _ => None,
        }
    }

    fn keys(&self) -> Vec<&str> {
        vec!["traceparent", "tracestate"]
    }
}

/// The parent a request names: a caller's span, or none (the span starts a trace).
#[derive(Debug, Clone, Default)]
pub struct Parent(Option<Ids>);

impl Parent {
    /// No parent: the span is the root of a trace of its own.
    pub fn root() -> Parent {
        Parent(None)
    }

    /// Whether a caller's span was named (and valid).
    pub fn is_remote(&self) -> bool {
        self.0.is_some()
    }
}

/// The caller's span named by `traceparent` as a parent, when it is valid W3C trace context;
/// anything else gives no parent (the span starts a trace of its own).
pub fn remote_parent(traceparent: &str, tracestate: Option<&str>) -> Parent {
    let incoming = Incoming {
        traceparent,
        tracestate,
    };
    let parent = TraceContextPropagator::new().extract(&incoming);
    let span = parent.span();
    let context = span.span_context();
    if !context.is_valid() {
        return Parent::root();
    }
    let state = context.trace_state().header();
    Parent(Some(Ids {
        trace_id: context.trace_id(),
        span_id: context.span_id(),
        flags: context.trace_flags(),
        state: (!state.is_empty()).then(|| Arc::from(state)),
    }))
}

/// The trace context to send with a request made now: the current span as the parent, or
/// nothing when spans are not exported or none is current.
pub fn carry() -> Option<TraceContext> {
    if !on() {
        return None;
    }
    with_current(|current| {
        let ids = &current?.ids;
        Some(TraceContext {
            traceparent: format!(
                "00-{}-{}-{:02x}",
                ids.trace_id,
                ids.span_id,
                ids.flags.to_u8()
            ),
            tracestate: ids.state.as_deref().map(str::to_owned),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_cuts_at_a_character_boundary() {
        let text = "é".repeat(ARGUMENTS_LIMIT);
        let cut = bounded(&text);
        assert!(cut.len() <= ARGUMENTS_LIMIT && cut.len() >= ARGUMENTS_LIMIT - 1);
        assert_eq!(bounded("short"), "short");
    }

    #[test]
    fn nothing_is_carried_or_started_while_spans_are_off() {
        assert!(carry().is_none());
        assert!(Span::start("x", SpanKind::Internal, Vec::new()).is_none());
    }

    #[test]
    fn an_invalid_traceparent_starts_a_trace_of_its_own() {
        assert!(!remote_parent("00-not-a-trace-01", None).is_remote());
        let parent = remote_parent(
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            Some("k=v"),
        );
        let ids = parent.0.expect("a remote parent");
        assert_eq!(ids.trace_id.to_string(), "0af7651916cd43dd8448eb211c80319c");
        assert_eq!(ids.span_id.to_string(), "b7ad6b7169203331");
        assert!(ids.flags.is_sampled());
        assert_eq!(ids.state.as_deref(), Some("k=v"));
    }
}
