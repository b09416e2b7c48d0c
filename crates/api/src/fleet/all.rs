//! All runs' event stream (`/api/events`) across the fleet: a watcher on one replica sees the
//! runs executing on every replica on the same PostgreSQL store.
//!
//! The watcher's replica says `watchAll` on the fleet channel when the watcher comes and every
//! [`REFRESH`] while it stays, and `unwatchAll` when it goes. A replica that heard of one
//! watcher elsewhere or more answers each new one with its live runs (`live`, tagged with the
//! watch's id), records its runs as a local watcher of all runs would, and sends their events
//! in batches (`all`, as many events as one NOTIFY carries), once for every remote watcher
//! together. A watcher not heard of for [`FORGET_AFTER`] (its replica died) is forgotten, and
//! with the last one forgotten the sending stops: a fleet nobody watches sends nothing, and a
//! replica records nothing more than without a fleet (the registry's "someone watches all"
//! test is a receiver count, and the sender holds its receiver only while someone watches).
//!
//! A watcher holds a cursor in its replica's fleet feed (bounded, shared by the process) and
//! in its registry's channel of all runs; one that falls behind either is dropped with an `end`
//! event saying so, as a watcher of one replica is.

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::response::Response;
use axum::response::sse::Event as SseEvent;
use mcpflow_store::{FLEET_MESSAGE_BYTES, Store};
use serde_json::{Value as Json, json};
use tokio::sync::broadcast::{self, error::RecvError, error::TryRecvError};

use crate::Api;
use crate::registry::Frame;
use crate::stream::{end, respond, sse};

/// How often a watcher's replica says again that it watches.
const REFRESH: Duration = Duration::from_secs(5);
/// A watcher not heard of for this long is taken to be gone (its replica died).
const FORGET_AFTER: Duration = Duration::from_secs(15);
/// How often a sending replica checks whether anyone still watches.
const PRUNE_EVERY: Duration = Duration::from_secs(1);

/// This replica's side of the fleet's stream of all runs.
pub(crate) struct FleetAll {
    /// This process's id in the fleet's messages, so that it skips its own.
    me: String,
    store: Arc<dyn Store>,
    watchers: Mutex<Watchers>,
}

#[derive(Default)]
struct Watchers {
    /// Watchers on other replicas, and when each was last heard of.
    remote: HashMap<String, Instant>,
    /// Whether this replica's sender runs.
    sending: bool,
}

impl FleetAll {
    pub(crate) fn new(store: Arc<dyn Store>, me: String) -> Arc<FleetAll> {
        Arc::new(FleetAll {
            me,
            store,
            watchers: Mutex::default(),
        })
    }

    fn watchers(&self) -> MutexGuard<'_, Watchers> {
        self.watchers.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A fleet message about the stream of all runs (`watchAll`, `unwatchAll`).
    pub(crate) fn hear(self: &Arc<Self>, api: &Api, message: &Json) {
        let (Some(w), Some(from)) = (message["w"].as_str(), message["from"].as_str()) else {
            return;
        };
        if from == self.me {
            return;
        }
        match message["t"].as_str() {
            Some("watchAll") => {
                let (new, start) = {
                    let mut watchers = self.watchers();
                    let new = watchers
                        .remote
                        .insert(w.to_owned(), Instant::now())
                        .is_none();
                    let start = !watchers.sending;
                    watchers.sending = true;
                    (new, start)
                };
                if start {
                    tokio::spawn(send(api.clone(), self.clone()));
                }
                if new {
                    tokio::spawn(send_live(api.clone(), self.clone(), w.to_owned()));
                }
            }
            Some("unwatchAll") => {
                self.watchers().remote.remove(w);
            }
            _ => {}
        }
    }

    /// Whether the sender should go on: someone heard of recently still watches. Stops it
    /// (under the lock a new watcher's start takes) when nobody does.
    fn still_watched(&self) -> bool {
        let mut watchers = self.watchers();
        watchers
            .remote
            .retain(|_, heard| heard.elapsed() < FORGET_AFTER);
        if watchers.remote.is_empty() {
            watchers.sending = false;
            return false;
        }
        true
    }
}

/// Answers a new remote watcher with this replica's live runs.
async fn send_live(api: Api, fleet: Arc<FleetAll>, w: String) {
    let (live, _) = api.registry().watch_all();
    let mut message = json!({"t": "live", "w": w, "from": fleet.me, "data": live.data}).to_string();
    if message.len() > FLEET_MESSAGE_BYTES {
        let stub = json!({"event": "live", "truncated": true, "bytes": live.data.len(),
            "message": "this replica's live runs are more than one fleet message carries; GET /api/runs on it lists them"});
        message =
            json!({"t": "live", "w": w, "from": fleet.me, "data": stub.to_string()}).to_string();
    }
    if let Err(e) = fleet.store.notify(&message).await {
        tracing::warn!(error = %e, "this replica's live runs could not reach a fleet watcher");
    }
}

/// Sends every recorded event of this replica's runs to the fleet, in batches, while someone
/// elsewhere watches all runs.
async fn send(api: Api, fleet: Arc<FleetAll>) {
    // Records the live runs; runs that start from now on are recorded from their start.
    let (_, mut rx) = api.registry().watch_all();
    let mut prune = tokio::time::interval(PRUNE_EVERY);
    prune.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            // First, so that a busy replica notices too when nobody watches any more.
            biased;
            _ = prune.tick() => {
                if !fleet.still_watched() {
                    return;
                }
            }
            received = rx.recv() => match received {
                Ok(frame) => {
                    let mut batch = Batch::new(&fleet.me);
                    batch.push(&frame);
                    // What is already queued goes in the same NOTIFYs.
                    loop {
                        match rx.try_recv() {
                            Ok(frame) => {
                                if !batch.push(&frame) {
                                    batch.send(fleet.store.as_ref()).await;
                                    batch = Batch::new(&fleet.me);
                                    batch.push(&frame);
                                }
                            }
                            Err(TryRecvError::Lagged(n)) => batch.push_gap(n),
                            Err(_) => break,
                        }
                    }
                    batch.send(fleet.store.as_ref()).await;
                }
                Err(RecvError::Lagged(n)) => {
                    let mut batch = Batch::new(&fleet.me);
                    batch.push_gap(n);
                    batch.send(fleet.store.as_ref()).await;
                }
                Err(RecvError::Closed) => {
                    fleet.watchers().sending = false;
                    return;
                }
            }
        }
    }
}

/// Events of one replica for the fleet, as one NOTIFY: `{"t":"all","from":…,"frames":[…]}`.
struct Batch {
    text: String,
    count: usize,
}

const CLOSE: &str = "]}";

impl Batch {
    fn new(me: &str) -> Batch {
        Batch {
            text: format!(r#"{{"t":"all","from":{},"frames":["#, Json::from(me)),
            count: 0,
        }
    }

    /// Adds `frame` if it fits; an event too large for any message goes as a stub with its
    /// size (its own replica, or `GET /api/runs/{id}`, has it whole).
    fn push(&mut self, frame: &Frame) -> bool {
        let entry = json!({"n": frame.name, "d": frame.data}).to_string();
        let entry = if self.overhead() + entry.len() <= FLEET_MESSAGE_BYTES {
            entry
        } else {
            let run = serde_json::from_str::<Json>(&frame.data)
                .map(|d| d["runId"].clone())
                .unwrap_or(Json::Null);
            let stub = json!({"event": frame.name, "runId": run, "truncated": true,
                "bytes": frame.data.len()});
            json!({"n": frame.name, "d": stub.to_string()}).to_string()
        };
        self.append(entry)
    }

    fn push_gap(&mut self, missed: u64) {
        let data = json!({"event": "gap", "missed": missed,
            "message": "a replica's runs outpaced what it sends to the fleet: these events were lost"});
        self.append(json!({"n": "gap", "d": data.to_string()}).to_string());
    }

    fn overhead(&self) -> usize {
        self.text.len() + 1 + CLOSE.len()
    }

    fn append(&mut self, entry: String) -> bool {
        if self.count > 0 && self.overhead() + entry.len() > FLEET_MESSAGE_BYTES {
            return false;
        }
        if self.count > 0 {
            self.text.push(',');
        }
        self.text.push_str(&entry);
        self.count += 1;
        true
    }

    async fn send(mut self, store: &dyn Store) {
        if self.count == 0 {
            return;
        }
        self.text.push_str(CLOSE);
        if let Err(e) = store.notify(&self.text).await {
            tracing::warn!(error = %e, "runs' events could not reach the fleet's watchers");
        }
    }
}

/// Tells the fleet that watch `w` is gone when its stream is dropped (the watcher went away or
/// was dropped), and stops saying that it watches.
pub(crate) struct Leave {
    store: Arc<dyn Store>,
    message: String,
    refresh: Option<tokio::task::JoinHandle<()>>,
}

impl Leave {
    pub(crate) fn new(
        store: Arc<dyn Store>,
        message: String,
        refresh: Option<tokio::task::JoinHandle<()>>,
    ) -> Leave {
        Leave {
            store,
            message,
            refresh,
        }
    }
}

impl Drop for Leave {
    fn drop(&mut self) {
        if let Some(refresh) = self.refresh.take() {
            refresh.abort();
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let store = self.store.clone();
        let message = std::mem::take(&mut self.message);
        runtime.spawn(async move {
            let _ = store.notify(&message).await;
        });
    }
}

struct FleetWatch {
    first: Option<Arc<Frame>>,
    local: broadcast::Receiver<Arc<Frame>>,
    feed: broadcast::Receiver<String>,
    queue: VecDeque<SseEvent>,
    w: String,
    me: String,
    over: bool,
    _leave: Leave,
}

/// All runs' stream of the whole fleet: this replica's live runs, then every other replica's
/// (a `live` event each, as they answer), then every recorded event of every run in the fleet.
pub(crate) async fn all_stream(api: &Api, fleet: &Arc<FleetAll>) -> Response {
    let (first, local) = api.registry().watch_all();
    let (Ok(Some(feed)), Some(w)) = (fleet.store.listen().await, super::new_id()) else {
        return crate::stream::all_stream_from(first, local);
    };
    let hello = json!({"t": "watchAll", "w": w, "from": fleet.me}).to_string();
    if let Err(e) = fleet.store.notify(&hello).await {
        tracing::warn!(error = %e, "the fleet channel is down: this watcher sees this replica's runs only");
        return crate::stream::all_stream_from(first, local);
    }
    let store = fleet.store.clone();
    let refresh = tokio::spawn(async move {
        loop {
            tokio::time::sleep(REFRESH).await;
            let _ = store.notify(&hello).await;
        }
    });
    let bye = json!({"t": "unwatchAll", "w": w, "from": fleet.me}).to_string();
    let state = FleetWatch {
        first: Some(first),
        local,
        feed,
        queue: VecDeque::new(),
        w,
        me: fleet.me.clone(),
        over: false,
        _leave: Leave::new(fleet.store.clone(), bye, Some(refresh)),
    };
    respond(futures::stream::unfold(state, next))
}

async fn next(mut s: FleetWatch) -> Option<(Result<SseEvent, Infallible>, FleetWatch)> {
    if s.over {
        return None;
    }
    if let Some(frame) = s.first.take() {
        return Some((Ok(sse(&frame)), s));
    }
    loop {
        if let Some(event) = s.queue.pop_front() {
            return Some((Ok(event), s));
        }
        tokio::select! {
            received = s.local.recv() => match received {
                Ok(frame) => return Some((Ok(sse(&frame)), s)),
                Err(RecvError::Closed) => return None,
                Err(RecvError::Lagged(n)) => {
                    s.over = true;
                    let reason = format!(
                        "dropped: this watcher fell {n} events behind all runs' stream; reconnect \
                         (GET /api/runs lists the runs, GET /api/runs/{{id}}/events replays one)"
                    );
                    return Some((Ok(end(&reason, None)), s));
                }
            },
            received = s.feed.recv() => match received {
                Ok(text) => s.take(&text),
                Err(RecvError::Closed) => return None,
                Err(RecvError::Lagged(n)) => {
                    s.over = true;
                    let reason = format!(
                        "dropped: this watcher fell {n} messages behind the fleet's events; \
                         reconnect (GET /api/runs lists the runs)"
                    );
                    return Some((Ok(end(&reason, None)), s));
                }
            },
        }
    }
}

impl FleetWatch {
    /// Queues what a fleet message holds for this watcher: other replicas' events, and their
    /// live runs when they answer this watch.
    fn take(&mut self, text: &str) {
        let Ok(m) = serde_json::from_str::<Json>(text) else {
            return;
        };
        if m["from"] == self.me.as_str() {
            return;
        }
        match m["t"].as_str() {
            Some("all") => {
                for f in m["frames"].as_array().into_iter().flatten() {
                    self.queue.push_back(
                        SseEvent::default()
                            .event(f["n"].as_str().unwrap_or("event"))
                            .data(f["d"].as_str().unwrap_or("{}")),
                    );
                }
            }
            Some("live") if m["w"] == self.w.as_str() => {
                self.queue.push_back(
                    SseEvent::default()
                        .event("live")
                        .data(m["data"].as_str().unwrap_or("{}")),
                );
            }
            _ => {}
        }
    }
}
