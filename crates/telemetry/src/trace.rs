//! Spans for export and W3C trace context.
//!
//! Spans are OpenTelemetry SDK spans, made with the tracer the binary installs
//! ([`install`]); until then every [`Span`] is empty and costs one atomic load. A span's
//! children find it as the OpenTelemetry context made current while its work is polled
//! ([`Span::around`]), so a node's span is the child of its run's, and an upstream call's the
//! child of its node's, without passing the parent through every signature.
//!
//! Why not `tracing` spans bridged by tracing-opentelemetry: each span then lived twice (a
//! registry entry with its field visitor, and a span builder the bridge sampled ahead for its
//! children), and a traced call cost 41 % more instructions than an untraced one.

use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::Poll;

use opentelemetry::Value;
use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry::trace::{SpanBuilder, Status, TraceContextExt, Tracer as _};
// What the other crates name their spans with, so they need no OpenTelemetry dependency.
pub use opentelemetry::trace::SpanKind;
pub use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracer;

static ON: AtomicBool = AtomicBool::new(false);
static ARGUMENTS: AtomicBool = AtomicBool::new(false);
static TRACER: OnceLock<SdkTracer> = OnceLock::new();

/// Starts exporting spans through `tracer`; `arguments` allows tool arguments in attributes.
/// A second call is ignored (the first tracer stays).
pub fn install(tracer: SdkTracer, arguments: bool) {
    if TRACER.set(tracer).is_ok() {
        ARGUMENTS.store(arguments, Ordering::Relaxed);
        ON.store(true, Ordering::Relaxed);
    }
}

/// Whether spans are exported: when not, skip building what only a span would carry.
#[inline]
pub fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// Whether tool arguments may go into span attributes (`telemetry.traces.recordArguments`).
pub fn record_arguments() -> bool {
    ARGUMENTS.load(Ordering::Relaxed)
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
    parent: Option<&Context>,
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

/// The caller's span named by `traceparent` as a parent, when it is valid W3C trace context;
/// anything else gives an empty context (the span starts a trace of its own).
pub fn remote_parent(traceparent: &str, tracestate: Option<&str>) -> Context {
    let incoming = Incoming {
        traceparent,
        tracestate,
    };
    let parent = TraceContextPropagator::new().extract(&incoming);
    if parent.span().span_context().is_valid() {
        parent
    } else {
        Context::new()
    }
}

/// The trace context to send with a request made now: the current span as the parent, or
/// nothing when spans are not exported or none is current.
pub fn carry() -> Option<TraceContext> {
    if !on() {
        return None;
    }
    Context::map_current(|cx| {
        let span = cx.span();
        let context = span.span_context();
        if !context.is_valid() {
            return None;
        }
        let state = context.trace_state().header();
        Some(TraceContext {
            traceparent: format!(
                "00-{}-{}-{:02x}",
                context.trace_id(),
                context.span_id(),
                context.trace_flags().to_u8()
            ),
            tracestate: (!state.is_empty()).then_some(state),
        })
    })
}

/// One exported span while its work runs, or nothing when spans are off. Cheap to clone.
#[derive(Clone, Default, Debug)]
pub struct Span {
    context: Option<Context>,
}

impl Span {
    /// No span (traces off, or nothing to record).
    pub fn none() -> Span {
        Span { context: None }
    }

    /// Starts a span named `name`, a child of the span current now (or a root).
    pub fn start(
        name: impl Into<Cow<'static, str>>,
        kind: SpanKind,
        attributes: Vec<KeyValue>,
    ) -> Span {
        if !on() {
            return Span::none();
        }
        Context::map_current(|parent| Span::start_in(parent, name, kind, attributes))
    }

    /// Starts a span named `name`, a child of `parent`'s span (or a root when it has none).
    pub fn start_in(
        parent: &Context,
        name: impl Into<Cow<'static, str>>,
        kind: SpanKind,
        attributes: Vec<KeyValue>,
    ) -> Span {
        let Some(tracer) = TRACER.get().filter(|_| on()) else {
            return Span::none();
        };
        let builder = SpanBuilder::from_name(name)
            .with_kind(kind)
            .with_attributes(attributes);
        let span = tracer.build_with_context(builder, parent);
        Span {
            context: Some(parent.with_span(span)),
        }
    }

    pub fn is_none(&self) -> bool {
        self.context.is_none()
    }

    /// Adds an attribute (an outcome known only at the end).
    pub fn set(&self, key: &'static str, value: impl Into<Value>) {
        if let Some(cx) = &self.context {
            cx.span().set_attribute(KeyValue::new(key, value));
        }
    }

    /// Marks the span failed, with the conventions' `error.type`.
    pub fn fail(&self, error_type: impl Into<Value>) {
        if let Some(cx) = &self.context {
            let span = cx.span();
            span.set_status(Status::error(""));
            span.set_attribute(KeyValue::new("error.type", error_type));
        }
    }

    /// Ends the span (its end time is now); later calls do nothing.
    pub fn end(&self) {
        if let Some(cx) = &self.context {
            cx.span().end();
        }
    }

    /// `work`, with this span current whenever it is polled, so the spans it starts are
    /// this one's children.
    pub fn around<F: Future>(&self, work: F) -> Around<F> {
        Around {
            context: self.context.clone(),
            work,
        }
    }
}

pin_project_lite::pin_project! {
    /// A future run with a span current: see [`Span::around`].
    pub struct Around<F> {
        context: Option<Context>,
        #[pin]
        work: F,
    }
}

impl<F: Future> Future for Around<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, task: &mut std::task::Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let _current = this.context.as_ref().map(|cx| cx.clone().attach());
        this.work.poll(task)
    }
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
        let cx = remote_parent("00-not-a-trace-01", None);
        assert!(!cx.span().span_context().is_valid());
        let cx = remote_parent(
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            Some("k=v"),
        );
        let span = cx.span();
        let context = span.span_context();
        assert_eq!(
            context.trace_id().to_string(),
            "0af7651916cd43dd8448eb211c80319c"
        );
        assert_eq!(context.trace_state().header(), "k=v");
    }
}
