//! Spans of our own: made, kept current and ended here, and handed to the installed [`Sink`]
//! as a [`Finished`] view the moment they end, to be encoded where they end.
//!
//! Why not the SDK's tracer: a span went SpanBuilder → the SDK's span → `SpanData`, copying
//! every attribute three times, behind an OpenTelemetry `Context` cloned into a thread-local
//! stack at every poll; that was most of what tracing still cost per call once the export was
//! ours (bench/README.md, telemetry). A span here is one allocation shared by its clones, and
//! being current is an `Arc` in a thread-local cell.

use std::borrow::Cow;
use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::SystemTime;

use opentelemetry::trace::{SpanId, SpanKind, Status, TraceFlags, TraceId};
use opentelemetry::{KeyValue, Value};

use super::{Parent, Pipeline, ids, pipeline};

/// Receives each sampled span as it ends, on the thread that ends it.
pub trait Sink: Send + Sync {
    fn on_end(&self, span: &Finished<'_>);
}

/// A span that has ended, as the sink sees it.
#[derive(Debug)]
pub struct Finished<'a> {
    pub trace_id: TraceId,
    pub span_id: SpanId,
    pub flags: TraceFlags,
    /// The W3C `tracestate` inherited from the remote parent, when it sent one.
    pub trace_state: &'a str,
    /// [`SpanId::INVALID`] for a root span.
    pub parent_span_id: SpanId,
    pub parent_is_remote: bool,
    pub name: &'a str,
    pub kind: SpanKind,
    pub start: SystemTime,
    pub end: SystemTime,
    pub attributes: &'a [KeyValue],
    pub status: &'a Status,
}

/// What a span's children and outgoing requests inherit from it.
#[derive(Debug, Clone)]
pub(crate) struct Ids {
    pub trace_id: TraceId,
    pub span_id: SpanId,
    pub flags: TraceFlags,
    pub state: Option<Arc<str>>,
}

#[derive(Debug)]
pub(crate) struct Live {
    pub ids: Ids,
    parent_span_id: SpanId,
    parent_is_remote: bool,
    name: Cow<'static, str>,
    kind: SpanKind,
    start: SystemTime,
    /// What is still written to; `None` once ended, and from the start when not sampled (an
    /// unsampled span only carries its ids to its children and upstreams).
    open: Mutex<Option<Open>>,
}

#[derive(Debug)]
struct Open {
    attributes: Vec<KeyValue>,
    status: Status,
}

impl Live {
    fn finish(&self, open: Open) {
        let Some(pipeline) = pipeline() else { return };
        pipeline.sink.on_end(&Finished {
            trace_id: self.ids.trace_id,
            span_id: self.ids.span_id,
            flags: self.ids.flags,
            trace_state: self.ids.state.as_deref().unwrap_or_default(),
            parent_span_id: self.parent_span_id,
            parent_is_remote: self.parent_is_remote,
            name: &self.name,
            kind: self.kind.clone(),
            start: self.start,
            end: SystemTime::now(),
            attributes: &open.attributes,
            status: &open.status,
        });
    }

    fn with_open(&self, write: impl FnOnce(&mut Open)) {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(open) = open.as_mut() {
            write(open);
        }
    }
}

impl Drop for Live {
    /// A span dropped before it ended (its work was cancelled) ends now, as the SDK's did.
    fn drop(&mut self) {
        let open = self
            .open
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(open) = open {
            self.finish(open);
        }
    }
}

thread_local! {
    /// The span whose work this thread is polling now.
    static CURRENT: Cell<Option<Arc<Live>>> = const { Cell::new(None) };
}

/// `read` given the span current on this thread, if any.
pub(crate) fn with_current<T>(read: impl FnOnce(Option<&Live>) -> T) -> T {
    CURRENT.with(|cell| {
        let current = cell.take();
        let result = read(current.as_deref());
        cell.set(current);
        result
    })
}

/// One exported span while its work runs, or nothing when spans are off. Cheap to clone.
#[derive(Clone, Default, Debug)]
pub struct Span {
    live: Option<Arc<Live>>,
}

impl Span {
    /// No span (traces off, or nothing to record).
    pub fn none() -> Span {
        Span { live: None }
    }

    /// Starts a span named `name`, a child of the span current now (or a root).
    pub fn start(
        name: impl Into<Cow<'static, str>>,
        kind: SpanKind,
        attributes: Vec<KeyValue>,
    ) -> Span {
        let Some(pipeline) = pipeline() else {
            return Span::none();
        };
        with_current(|parent| {
            begin(
                pipeline,
                parent.map(|p| &p.ids),
                false,
                name,
                kind,
                attributes,
            )
        })
    }

    /// Starts a span named `name`, a child of `parent` (a caller's span, or none: a root).
    pub fn start_in(
        parent: &Parent,
        name: impl Into<Cow<'static, str>>,
        kind: SpanKind,
        attributes: Vec<KeyValue>,
    ) -> Span {
        let Some(pipeline) = pipeline() else {
            return Span::none();
        };
        let remote = parent.0.as_ref();
        begin(pipeline, remote, remote.is_some(), name, kind, attributes)
    }

    pub fn is_none(&self) -> bool {
        self.live.is_none()
    }

    /// Adds an attribute (an outcome known only at the end).
    pub fn set(&self, key: &'static str, value: impl Into<Value>) {
        if let Some(live) = &self.live {
            live.with_open(|open| open.attributes.push(KeyValue::new(key, value)));
        }
    }

    /// Marks the span failed, with the conventions' `error.type`.
    pub fn fail(&self, error_type: impl Into<Value>) {
        if let Some(live) = &self.live {
            live.with_open(|open| {
                open.status = Status::error("");
                open.attributes
                    .push(KeyValue::new("error.type", error_type));
            });
        }
    }

    /// Ends the span (its end time is now); later calls do nothing.
    pub fn end(&self) {
        if let Some(live) = &self.live {
            let open = live.open.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some(open) = open {
                live.finish(open);
            }
        }
    }

    /// The span's trace and span ids, when it has them.
    pub fn ids(&self) -> Option<(TraceId, SpanId)> {
        self.live
            .as_ref()
            .map(|live| (live.ids.trace_id, live.ids.span_id))
    }

    /// `work`, with this span current whenever it is polled, so the spans it starts are
    /// this one's children.
    pub fn around<F: Future>(&self, work: F) -> Around<F> {
        Around {
            live: self.live.clone(),
            work,
        }
    }
}

fn begin(
    pipeline: &Pipeline,
    parent: Option<&Ids>,
    parent_is_remote: bool,
    name: impl Into<Cow<'static, str>>,
    kind: SpanKind,
    attributes: Vec<KeyValue>,
) -> Span {
    let trace_id = parent.map_or_else(ids::trace_id, |p| p.trace_id);
    let sampled = pipeline
        .sampler
        .sample(parent.map(|p| p.flags.is_sampled()), trace_id);
    let live = Live {
        ids: Ids {
            trace_id,
            span_id: ids::span_id(),
            flags: if sampled {
                TraceFlags::SAMPLED
            } else {
                TraceFlags::default()
            },
            state: parent.and_then(|p| p.state.clone()),
        },
        parent_span_id: parent.map_or(SpanId::INVALID, |p| p.span_id),
        parent_is_remote,
        name: if sampled {
            name.into()
        } else {
            Cow::Borrowed("")
        },
        kind,
        start: if sampled {
            SystemTime::now()
        } else {
            SystemTime::UNIX_EPOCH
        },
        open: Mutex::new(sampled.then_some(Open {
            attributes,
            status: Status::Unset,
        })),
    };
    Span {
        live: Some(Arc::new(live)),
    }
}

pin_project_lite::pin_project! {
    /// A future run with a span current: see [`Span::around`].
    pub struct Around<F> {
        live: Option<Arc<Live>>,
        #[pin]
        work: F,
    }
}

/// Puts back the span that was current before a poll, even when the poll panics.
struct Restore(Option<Arc<Live>>);

impl Drop for Restore {
    fn drop(&mut self) {
        let before = self.0.take();
        CURRENT.with(|cell| cell.set(before));
    }
}

impl<F: Future> Future for Around<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, task: &mut std::task::Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let Some(live) = this.live.as_ref() else {
            return this.work.poll(task);
        };
        let _restore = Restore(CURRENT.with(|cell| cell.replace(Some(live.clone()))));
        this.work.poll(task)
    }
}
