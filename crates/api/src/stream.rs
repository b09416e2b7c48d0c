//! The live event streams (SSE): one run's (what was recorded, then what follows) and all
//! runs' (the live runs, then every event of every run). Each event is serialised once by the
//! run's recorder and shared by every watcher; a watcher costs a cursor, not a copy.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;

use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::Stream;
use serde_json::json;
use tokio::sync::broadcast::{self, error::RecvError};

use crate::registry::{Frame, LOG_BYTES, LOG_LIMIT, LiveRun, Registry};

pub(crate) fn sse(frame: &Frame) -> SseEvent {
    SseEvent::default()
        .id(frame.seq.to_string())
        .event(frame.name)
        .data(&frame.data)
}

pub(crate) fn end(reason: &str, run: Option<&str>) -> SseEvent {
    SseEvent::default()
        .event("end")
        .data(json!({"event": "end", "runId": run, "reason": reason}).to_string())
}

struct RunWatch {
    run: Arc<LiveRun>,
    queue: VecDeque<Arc<Frame>>,
    follow: Option<broadcast::Receiver<Arc<Frame>>>,
    last: u64,
    over: bool,
}

/// One run's stream: the replay, then what follows, until the run ends. A watcher that falls
/// behind its channel catches up from the run's log; one that falls behind the log too is
/// dropped with an `end` event saying so.
pub fn run_stream(registry: &Arc<Registry>, run: Arc<LiveRun>) -> Response {
    let watch = registry.watch(&run);
    let state = RunWatch {
        run,
        queue: watch.replay.into(),
        follow: watch.follow,
        last: 0,
        over: false,
    };
    respond(futures::stream::unfold(state, next_of_run))
}

async fn next_of_run(mut w: RunWatch) -> Option<(Result<SseEvent, Infallible>, RunWatch)> {
    loop {
        if w.over {
            return None;
        }
        if let Some(frame) = w.queue.pop_front() {
            if frame.seq <= w.last && w.last != 0 {
                continue;
            }
            w.last = frame.seq;
            if frame.name == "end" {
                w.over = true;
            }
            return Some((Ok(sse(&frame)), w));
        }
        let Some(rx) = &mut w.follow else {
            w.over = true;
            return Some((Ok(end("the run ended", Some(&*w.run.id))), w));
        };
        match rx.recv().await {
            Ok(frame) => w.queue.push_back(frame),
            Err(RecvError::Closed) => w.follow = None,
            Err(RecvError::Lagged(_)) => match w.run.resubscribe(w.last) {
                Some((frames, follow)) => {
                    w.queue.extend(frames);
                    w.follow = follow;
                }
                None => {
                    w.over = true;
                    let reason = format!(
                        "dropped: this watcher fell behind by more than the {LOG_LIMIT} events \
                         ({} MiB) kept per run; reconnect to read what is kept, or GET the run's \
                         history",
                        LOG_BYTES >> 20
                    );
                    return Some((Ok(end(&reason, Some(&*w.run.id))), w));
                }
            },
        }
    }
}

struct AllWatch {
    first: Option<Arc<Frame>>,
    rx: broadcast::Receiver<Arc<Frame>>,
    over: bool,
}

/// All runs' stream: the live runs, then every recorded event of every run, until the
/// watcher falls behind the shared channel (then an `end` event says so) or goes away.
pub fn all_stream(registry: &Arc<Registry>) -> Response {
    let (first, rx) = registry.watch_all();
    all_stream_from(first, rx)
}

/// The same, from a watch already taken.
pub(crate) fn all_stream_from(first: Arc<Frame>, rx: broadcast::Receiver<Arc<Frame>>) -> Response {
    let state = AllWatch {
        first: Some(first),
        rx,
        over: false,
    };
    respond(futures::stream::unfold(state, |mut w| async move {
        if w.over {
            return None;
        }
        if let Some(frame) = w.first.take() {
            return Some((Ok(sse(&frame)), w));
        }
        match w.rx.recv().await {
            Ok(frame) => Some((Ok(sse(&frame)), w)),
            Err(RecvError::Closed) => None,
            Err(RecvError::Lagged(n)) => {
                w.over = true;
                let reason = format!(
                    "dropped: this watcher fell {n} events behind all runs' stream; reconnect \
                     (GET /api/runs lists the runs, GET /api/runs/{{id}}/events replays one)"
                );
                Some((Ok(end(&reason, None)), w))
            }
        }
    }))
}

pub(crate) fn respond(
    stream: impl Stream<Item = Result<SseEvent, Infallible>> + Send + 'static,
) -> Response {
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}
