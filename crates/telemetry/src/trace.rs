//! Spans for export and W3C trace context.
//!
//! Every span meant for OpenTelemetry is a `tracing` span with `target: TARGET` (use
//! [`span!`](crate::span)). The log output never shows them (the binary's log filter turns the
//! target off), and until an exporter is installed [`Exporting`]'s filter disables them at
//! creation: the span is `Span::none()` and costs an atomic load.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry::trace::TraceContextExt;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Event, Metadata, Span, Subscriber};
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::layer::{Context, Filter, Layer};
use tracing_subscriber::registry::LookupSpan;

/// The `tracing` target of the spans that are exported (and never logged).
pub const TARGET: &str = "mcpflow_otel";

static ON: AtomicBool = AtomicBool::new(false);
static ARGUMENTS: AtomicBool = AtomicBool::new(false);

/// A span for export: `tracing::info_span!` under [`TARGET`].
#[macro_export]
macro_rules! span {
    ($name:expr $(, $($fields:tt)*)?) => {
        ::tracing::info_span!(target: "mcpflow_otel", $name $(, $($fields)*)?)
    };
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

/// Makes `span` a child of the caller's span named by `traceparent`, when it is valid W3C
/// trace context (anything else is ignored: the span starts a trace of its own). Call it
/// before the span is entered.
pub fn follow(span: &Span, traceparent: &str, tracestate: Option<&str>) {
    if span.is_disabled() {
        return;
    }
    let incoming = Incoming {
        traceparent,
        tracestate,
    };
    let parent = TraceContextPropagator::new().extract(&incoming);
    if parent.span().span_context().is_valid() {
        let _ = span.set_parent(parent);
    }
}

/// The trace context to send on with a request made inside `span` (the current span when
/// that is the one to name), or nothing when spans are not exported.
pub fn carry(span: &Span) -> Option<TraceContext> {
    if !on() || span.is_disabled() {
        return None;
    }
    let mut fields = HashMap::new();
    TraceContextPropagator::new().inject_context(&span.context(), &mut fields);
    Some(TraceContext {
        traceparent: fields.remove("traceparent")?,
        tracestate: fields.remove("tracestate").filter(|s| !s.is_empty()),
    })
}

/// A layer that holds the exporting layer once there is one. Put it in the subscriber at
/// start (filtered by [`ExportFilter`]); [`ExportSlot::install`] fills it later, when the
/// config has said where spans go.
pub struct Exporting<L> {
    slot: Arc<OnceLock<L>>,
}

/// Fills an [`Exporting`] layer.
pub struct ExportSlot<L> {
    slot: Arc<OnceLock<L>>,
}

/// An empty [`Exporting`] layer, its filter and the handle that fills it.
pub fn exporting<L>() -> (Exporting<L>, ExportFilter, ExportSlot<L>) {
    let slot = Arc::new(OnceLock::new());
    (
        Exporting { slot: slot.clone() },
        ExportFilter,
        ExportSlot { slot },
    )
}

impl<L> ExportSlot<L> {
    /// Starts exporting through `layer`; `arguments` allows tool arguments in attributes.
    /// A second call is ignored (the first exporter stays).
    pub fn install(&self, layer: L, arguments: bool) {
        if self.slot.set(layer).is_ok() {
            ARGUMENTS.store(arguments, Ordering::Relaxed);
            ON.store(true, Ordering::Relaxed);
        }
    }
}

/// Lets [`TARGET`]'s spans through while an exporter is installed, and nothing else ever.
pub struct ExportFilter;

impl<S> Filter<S> for ExportFilter {
    fn enabled(&self, meta: &Metadata<'_>, _: &Context<'_, S>) -> bool {
        meta.target() == TARGET && on()
    }

    fn callsite_enabled(&self, meta: &'static Metadata<'static>) -> Interest {
        if meta.target() == TARGET && meta.is_span() {
            Interest::sometimes()
        } else {
            Interest::never()
        }
    }

    fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
        Some(tracing::level_filters::LevelFilter::INFO)
    }
}

impl<S, L> Layer<S> for Exporting<L>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    L: Layer<S>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if let Some(layer) = self.slot.get() {
            layer.on_new_span(attrs, id, ctx);
        }
    }

    fn on_record(&self, span: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(layer) = self.slot.get() {
            layer.on_record(span, values, ctx);
        }
    }

    fn on_follows_from(&self, span: &Id, follows: &Id, ctx: Context<'_, S>) {
        if let Some(layer) = self.slot.get() {
            layer.on_follows_from(span, follows, ctx);
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        if let Some(layer) = self.slot.get() {
            layer.on_event(event, ctx);
        }
    }

    fn on_enter(&self, id: &Id, ctx: Context<'_, S>) {
        if let Some(layer) = self.slot.get() {
            layer.on_enter(id, ctx);
        }
    }

    fn on_exit(&self, id: &Id, ctx: Context<'_, S>) {
        if let Some(layer) = self.slot.get() {
            layer.on_exit(id, ctx);
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        if let Some(layer) = self.slot.get() {
            layer.on_close(id, ctx);
        }
    }

    fn on_id_change(&self, old: &Id, new: &Id, ctx: Context<'_, S>) {
        if let Some(layer) = self.slot.get() {
            layer.on_id_change(old, new, ctx);
        }
    }

    // tracing-opentelemetry finds its span data through a downcast of the dispatcher
    // (`OpenTelemetrySpanExt::context`): it must reach the layer inside.
    unsafe fn downcast_raw(&self, id: std::any::TypeId) -> Option<*const ()> {
        if id == std::any::TypeId::of::<Self>() {
            return Some(std::ptr::from_ref(self).cast());
        }
        // SAFETY: forwarded unchanged to the inner layer's own implementation.
        self.slot
            .get()
            .and_then(|layer| unsafe { layer.downcast_raw(id) })
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
    fn nothing_is_carried_while_spans_are_off() {
        assert!(carry(&Span::current()).is_none());
    }
}
