//! The span processor: a span is encoded into the export buffer on the thread where it ends,
//! and freed there; a thread of its own sends each full buffer, and every schedule delay what
//! has gathered.
//!
//! Why not the SDK's batch processor: it moves each `SpanData` through a channel into a batch
//! on its own thread and frees it there, so every span was copied twice and its allocations
//! freed across threads; a traced call cost ~3 points more CPU than its instructions showed
//! (bench/README.md, telemetry, 2026-11-27). It is the [`Sink`] `mcpflow_telemetry::trace`'s
//! spans end into. The knobs are the SDK's, from the same variables:
//! `OTEL_BSP_MAX_QUEUE_SIZE` (2048 spans buffered; past it new spans are dropped and counted),
//! `OTEL_BSP_MAX_EXPORT_BATCH_SIZE` (512 per request) and `OTEL_BSP_SCHEDULE_DELAY` (5000 ms).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use mcpflow_telemetry::otlp::{EncodedResource, EncodedScope, SpanBatch, request};
use mcpflow_telemetry::trace::{Finished, Sink};

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
    resource: EncodedResource,
    scope: EncodedScope,
    exporter: Exporter,
    dropped: AtomicU64,
}

struct State {
    /// The batch being filled.
    filling: SpanBatch,
    /// Full batches waiting for the export thread.
    full: VecDeque<SpanBatch>,
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
            filling: SpanBatch::new(),
            full: VecDeque::new(),
            queued: 0,
            flush_asked: 0,
            flushed: 0,
            stopping: false,
            span_bytes: 256,
        }
    }

    fn seal(&mut self) {
        let bytes = self.filling.encoded_bytes();
        if let Some(per_span) = bytes.checked_div(self.filling.len()) {
            self.span_bytes = per_span.max(1);
            self.full.push_back(std::mem::take(&mut self.filling));
        }
    }
}

impl std::fmt::Debug for EncodingProcessor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EncodingProcessor")
            .field("settings", &self.shared.settings)
            .finish_non_exhaustive()
    }
}

impl EncodingProcessor {
    pub(super) fn new(
        exporter: Exporter,
        settings: Settings,
        resource: EncodedResource,
        scope: EncodedScope,
    ) -> Result<Self, String> {
        let shared = Arc::new(Shared {
            settings,
            state: Mutex::new(State::new()),
            work: Condvar::new(),
            done: Condvar::new(),
            resource,
            scope,
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
            let Some(batch) = state.full.pop_front() else {
                continue;
            };
            let spans = batch.len();
            drop(state);
            let body = request(&self.resource, &self.scope, &batch);
            drop(batch);
            if let Err(why) = self.exporter.send(body) {
                tracing::warn!("traces: {spans} span(s) not exported: {why}");
            }
            // Flushes are marked done at the top of the loop, once nothing is left to send.
            state = self.lock();
            state.queued -= spans;
        }
    }
}

impl Sink for EncodingProcessor {
    fn on_end(&self, span: &Finished<'_>) {
        self.shared.push(span);
    }
}

impl Shared {
    fn push(&self, span: &Finished<'_>) {
        let mut state = self.lock();
        if state.stopping {
            return;
        }
        if state.queued >= self.settings.max_queue {
            drop(state);
            if self.dropped.fetch_add(1, Ordering::Relaxed) == 0 {
                tracing::warn!(
                    "traces: the export queue is full ({} spans): spans are dropped until it \
                     drains (OTEL_BSP_MAX_QUEUE_SIZE)",
                    self.settings.max_queue
                );
            }
            return;
        }
        if state.filling.is_empty() {
            // Room for a full batch of spans of the last batch's size and a little more,
            // within reason: a batch that ends at the schedule delay may hold one span.
            let room = (self.settings.max_batch * state.span_bytes * 9 / 8).min(4 << 20);
            state.filling = SpanBatch::with_capacity(room);
        }
        state.filling.push(span);
        state.queued += 1;
        if state.filling.len() >= self.settings.max_batch {
            state.seal();
            self.work.notify_one();
        }
    }
}

impl EncodingProcessor {
    /// Sends what is buffered, stops the export thread and takes no span after it.
    pub(super) fn shutdown(&self) {
        let Some(thread) = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take() else {
            return;
        };
        self.flush();
        self.shared.lock().stopping = true;
        self.shared.work.notify_one();
        let _ = thread.join();
        let dropped = self.shared.dropped.load(Ordering::Relaxed);
        if dropped > 0 {
            tracing::warn!("traces: {dropped} span(s) dropped in all (the export queue was full)");
        }
    }
}
