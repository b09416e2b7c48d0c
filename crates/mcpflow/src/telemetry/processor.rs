//! The span processor: a span is encoded into the export buffer on the thread where it ends,
//! and freed there; a thread of its own sends each full buffer, and every schedule delay what
//! has gathered.
//!
//! Why not the SDK's batch processor: it moves each `SpanData` through a channel into a batch
//! on its own thread and frees it there, so every span was copied twice and its allocations
//! freed across threads; a traced call cost ~3 points more CPU than its instructions showed
//! (bench/README.md, telemetry, 2026-11-27). The knobs are the SDK's, from the same variables:
//! `OTEL_BSP_MAX_QUEUE_SIZE` (2048 spans buffered; past it new spans are dropped and counted),
//! `OTEL_BSP_MAX_EXPORT_BATCH_SIZE` (512 per request) and `OTEL_BSP_SCHEDULE_DELAY` (5000 ms).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use mcpflow_telemetry::otlp::{EncodedResource, SpanBatch, request};
use opentelemetry::Context;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{Span, SpanData, SpanProcessor};

use super::env;
use super::export::Exporter;

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Settings {
    pub max_queue: usize,
    pub max_batch: usize,
    pub delay: Duration,
}

impl Settings {
    /// The SDK's defaults, or what the `OTEL_BSP_*` variables say.
    pub(super) fn from_env() -> Settings {
        let number = |name: &str| env(name).and_then(|v| v.trim().parse::<u64>().ok());
        let max_queue = number("OTEL_BSP_MAX_QUEUE_SIZE")
            .and_then(|n| usize::try_from(n).ok())
            .filter(|&n| n > 0)
            .unwrap_or(2048);
        let max_batch = number("OTEL_BSP_MAX_EXPORT_BATCH_SIZE")
            .and_then(|n| usize::try_from(n).ok())
            .filter(|&n| n > 0)
            .unwrap_or(512)
            .min(max_queue);
        let delay =
            number("OTEL_BSP_SCHEDULE_DELAY").map_or(Duration::from_secs(5), Duration::from_millis);
        Settings {
            max_queue,
            max_batch,
            delay,
        }
    }
}

pub(super) struct EncodingProcessor {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

struct Shared {
    settings: Settings,
    state: Mutex<State>,
    /// Wakes the export thread: a batch is full, a flush is asked for, or it is time to stop.
    work: Condvar,
    /// Wakes those waiting for a flush: everything asked for has been sent.
    done: Condvar,
    resource: Mutex<EncodedResource>,
    exporter: Exporter,
    dropped: AtomicU64,
}

struct State {
    /// The batch being filled: one per instrumentation scope (mcpflow has one).
    filling: Vec<SpanBatch>,
    /// Full batches waiting for the export thread.
    full: VecDeque<Vec<SpanBatch>>,
    /// Spans buffered in all (filling, full and being sent): the queue's size.
    queued: usize,
    /// Flushes asked for and flushes done: a flush waits until `flushed` reaches its number.
    flush_asked: u64,
    flushed: u64,
    stopping: bool,
    /// Bytes per encoded span in the last full batch, to size the next one up front.
    span_bytes: usize,
}

impl State {
    fn new() -> State {
        State {
            filling: Vec::new(),
            full: VecDeque::new(),
            queued: 0,
            flush_asked: 0,
            flushed: 0,
            stopping: false,
            span_bytes: 256,
        }
    }

    fn seal(&mut self) {
        let bytes: usize = self.filling.iter().map(SpanBatch::encoded_bytes).sum();
        if let Some(per_span) = bytes.checked_div(spans(&self.filling)) {
            self.span_bytes = per_span.max(1);
            self.full.push_back(std::mem::take(&mut self.filling));
        }
    }
}

fn spans(batches: &[SpanBatch]) -> usize {
    batches.iter().map(SpanBatch::len).sum()
}

impl std::fmt::Debug for EncodingProcessor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EncodingProcessor")
            .field("settings", &self.shared.settings)
            .finish_non_exhaustive()
    }
}

impl EncodingProcessor {
    pub(super) fn new(exporter: Exporter, settings: Settings) -> Result<Self, String> {
        let shared = Arc::new(Shared {
            settings,
            state: Mutex::new(State::new()),
            work: Condvar::new(),
            done: Condvar::new(),
            resource: Mutex::new(EncodedResource::default()),
            exporter,
            dropped: AtomicU64::new(0),
        });
        let thread = std::thread::Builder::new()
            .name("mcpflow-spans".into())
            .spawn({
                let shared = shared.clone();
                move || shared.export_loop()
            })
            .map_err(|e| format!("telemetry.traces: cannot start the export thread: {e}"))?;
        Ok(EncodingProcessor {
            shared,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Sends everything buffered and waits until it is sent (or failed).
    fn flush(&self) {
        let shared = &self.shared;
        let mut state = shared.lock();
        // Stopped: the last flush has sent everything, and no span is taken since.
        if state.stopping {
            return;
        }
        state.seal();
        state.flush_asked += 1;
        let ticket = state.flush_asked;
        shared.work.notify_one();
        while state.flushed < ticket {
            state = shared.done.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn export_loop(&self) {
        let mut state = self.lock();
        loop {
            if state.full.is_empty() {
                let asked = state.flush_asked;
                if state.stopping {
                    state.flushed = asked;
                    self.done.notify_all();
                    return;
                }
                if state.flushed < asked {
                    state.flushed = asked;
                    self.done.notify_all();
                }
                let (next, timeout) = self
                    .work
                    .wait_timeout(state, self.settings.delay)
                    .unwrap_or_else(|e| e.into_inner());
                state = next;
                if timeout.timed_out() {
                    state.seal();
                }
                continue;
            }
            let Some(batches) = state.full.pop_front() else {
                continue;
            };
            let spans = spans(&batches);
            drop(state);
            let body = {
                let resource = self.resource.lock().unwrap_or_else(|e| e.into_inner());
                request(&resource, &batches)
            };
            drop(batches);
            if let Err(why) = self.exporter.send(body) {
                tracing::warn!("traces: {spans} span(s) not exported: {why}");
            }
            // Flushes are marked done at the top of the loop, once nothing is left to send.
            state = self.lock();
            state.queued -= spans;
        }
    }
}

impl SpanProcessor for EncodingProcessor {
    fn on_start(&self, _span: &mut Span, _cx: &Context) {}

    fn on_end(&self, span: SpanData) {
        if !span.span_context.is_sampled() {
            return;
        }
        let shared = &self.shared;
        let mut state = shared.lock();
        if state.stopping {
            return;
        }
        if state.queued >= shared.settings.max_queue {
            drop(state);
            if shared.dropped.fetch_add(1, Ordering::Relaxed) == 0 {
                tracing::warn!(
                    "traces: the export queue is full ({} spans): spans are dropped until it \
                     drains (OTEL_BSP_MAX_QUEUE_SIZE)",
                    shared.settings.max_queue
                );
            }
            return;
        }
        match state
            .filling
            .iter_mut()
            .find(|b| *b.scope() == span.instrumentation_scope)
        {
            Some(batch) => batch.push(&span),
            None => {
                // Room for a full batch of spans of the last batch's size and a little more,
                // within reason: a batch that ends at the schedule delay may hold one span.
                let room = (shared.settings.max_batch * state.span_bytes * 9 / 8).min(4 << 20);
                let mut batch = SpanBatch::with_capacity(span.instrumentation_scope.clone(), room);
                batch.push(&span);
                state.filling.push(batch);
            }
        }
        state.queued += 1;
        if spans(&state.filling) >= shared.settings.max_batch {
            state.seal();
            shared.work.notify_one();
        }
        // `span` is freed here, on the thread that made it.
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.flush();
        Ok(())
    }

    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        let Some(thread) = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take() else {
            return Err(OTelSdkError::AlreadyShutdown);
        };
        self.flush();
        self.shared.lock().stopping = true;
        self.shared.work.notify_one();
        let _ = thread.join();
        let dropped = self.shared.dropped.load(Ordering::Relaxed);
        if dropped > 0 {
            tracing::warn!("traces: {dropped} span(s) dropped in all (the export queue was full)");
        }
        Ok(())
    }

    fn set_resource(&mut self, resource: &Resource) {
        *self
            .shared
            .resource
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = EncodedResource::from(resource);
    }
}
