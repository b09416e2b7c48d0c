//! Replicas on one PostgreSQL store as one run API: a run's live events and its debug control
//! reach a watcher on any replica, over the store's fleet channel (LISTEN/NOTIFY, see
//! [`mcpflow_store::Store::notify`]), so no other server is needed.
//!
//! A replica that does not hold a run asks the fleet: `watch` (every replica holding the run
//! live streams its recorded events back, one NOTIFY per event, tagged with the watch's id) or
//! `control` (the replica holding it applies the action through its own handler and sends the
//! answer back). Nobody answering within [`PATIENCE`] means no replica holds the run live, and
//! the request is answered as before (404, or 409 for a run the store knows).
//! An event too large for one NOTIFY reaches a remote watcher as a stub naming its size (the
//! replica holding the run, or `GET /api/runs/{id}`, has it whole). A remote watcher that goes
//! away says `unwatch`, and the replica holding the run stops sending its events.
//!
//! [`all`]: the stream of all runs, fleet-wide.

pub(crate) mod all;

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use mcpflow_store::{FLEET_MESSAGE_BYTES, Store};
use serde_json::{Value as Json, json};
use tokio::sync::broadcast::{self, error::RecvError};

use crate::Api;
use crate::registry::Frame;

/// How long a replica waits for the one holding a run to answer.
const PATIENCE: Duration = Duration::from_secs(2);

/// A debug action asked of the replica holding the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    Pause,
    Resume,
    Step,
    Stop,
    SetBreakpoint,
    ClearBreakpoint,
}

impl Action {
    fn name(self) -> &'static str {
        match self {
            Action::Pause => "pause",
            Action::Resume => "resume",
            Action::Step => "step",
            Action::Stop => "stop",
            Action::SetBreakpoint => "setBreakpoint",
            Action::ClearBreakpoint => "clearBreakpoint",
        }
    }

    fn parse(name: &str) -> Option<Action> {
        [
            Action::Pause,
            Action::Resume,
            Action::Step,
            Action::Stop,
            Action::SetBreakpoint,
            Action::ClearBreakpoint,
        ]
        .into_iter()
        .find(|a| a.name() == name)
    }
}

fn store_of(api: &Api) -> Option<Arc<dyn Store>> {
    api.engine().durability().map(|d| d.store.clone())
}

fn new_id() -> Option<String> {
    mcpflow_store::new_session_id().ok()
}

/// Serves the fleet's requests for the runs this replica holds, for the life of the process;
/// nothing when the store has no fleet (SQLite) or none is attached.
pub async fn serve(api: Api) {
    let Some(store) = store_of(&api) else { return };
    let mut feed = match store.listen().await {
        Ok(Some(feed)) => feed,
        Ok(None) => return,
        Err(e) => {
            tracing::warn!(error = %e, "the fleet channel is not available: runs are watched and debugged on their own replica only");
            return;
        }
    };
    let Some(me) = new_id() else { return };
    let everything = all::FleetAll::new(store.clone(), me);
    api.set_fleet(everything.clone());
    tokio::spawn(async move {
        loop {
            let text = match feed.recv().await {
                Ok(text) => text,
                Err(RecvError::Lagged(n)) => {
                    tracing::warn!(
                        missed = n,
                        "fleet requests missed: this replica fell behind"
                    );
                    continue;
                }
                Err(RecvError::Closed) => return,
            };
            let Ok(message) = serde_json::from_str::<Json>(&text) else {
                continue;
            };
            if matches!(message["t"].as_str(), Some("watchAll" | "unwatchAll")) {
                everything.hear(&api, &message);
                continue;
            }
            let Some(run) = message["run"].as_str() else {
                continue;
            };
            // Only the replica holding the run live answers.
            if !api.registry().get(run).is_some_and(|r| r.is_live()) {
                continue;
            }
            match message["t"].as_str() {
                Some("watch") => {
                    if let Some(w) = message["w"].as_str() {
                        tokio::spawn(forward(
                            api.clone(),
                            store.clone(),
                            run.to_owned(),
                            w.to_owned(),
                        ));
                    }
                }
                Some("control") => {
                    tokio::spawn(apply(api.clone(), store.clone(), message.clone()));
                }
                _ => {}
            }
        }
    });
}

/// Streams run `run`'s recorded events to the fleet watcher `w`, until the run ends or the
/// watcher goes away.
async fn forward(api: Api, store: Arc<dyn Store>, run: String, w: String) {
    let Some(live) = api.registry().get(&run) else {
        return;
    };
    let Ok(Some(mut feed)) = store.listen().await else {
        return;
    };
    let watch = api.registry().watch(&live);
    let mut follow = watch.follow;
    for frame in watch.replay {
        if gone(&mut feed, &w) || !send_frame(store.as_ref(), &w, &run, &frame).await {
            return;
        }
    }
    let Some(rx) = follow.as_mut() else {
        send_end(store.as_ref(), &w, &run).await;
        return;
    };
    loop {
        let received = tokio::select! {
            received = rx.recv() => received,
            heard = feed.recv() => match heard {
                Ok(text) if is_unwatch(&text, &w) => return,
                Ok(_) | Err(RecvError::Lagged(_)) => continue,
                Err(RecvError::Closed) => return,
            },
        };
        match received {
            Ok(frame) => {
                let last = frame.name == "end";
                if !send_frame(store.as_ref(), &w, &run, &frame).await || last {
                    return;
                }
            }
            Err(RecvError::Lagged(_)) => continue,
            Err(RecvError::Closed) => {
                send_end(store.as_ref(), &w, &run).await;
                return;
            }
        }
    }
}

/// Whether the fleet said, in what it sent so far, that watch `w` is gone.
fn gone(feed: &mut broadcast::Receiver<String>, w: &str) -> bool {
    loop {
        match feed.try_recv() {
            Ok(text) if is_unwatch(&text, w) => return true,
            Ok(_) | Err(broadcast::error::TryRecvError::Lagged(_)) => {}
            Err(_) => return false,
        }
    }
}

/// Whether `text` says that watch `w` is gone.
fn is_unwatch(text: &str, w: &str) -> bool {
    // Most messages are other things: a cheap look before parsing.
    text.contains("\"unwatch\"")
        && serde_json::from_str::<Json>(text).is_ok_and(|m| m["t"] == "unwatch" && m["w"] == w)
}

async fn send_frame(store: &dyn Store, w: &str, run: &str, frame: &Frame) -> bool {
    let message =
        json!({"t": "frame", "w": w, "seq": frame.seq, "name": frame.name, "data": frame.data})
            .to_string();
    let message = if message.len() <= FLEET_MESSAGE_BYTES {
        message
    } else {
        let stub = json!({"event": frame.name, "runId": run, "truncated": true, "bytes": frame.data.len()});
        json!({"t": "frame", "w": w, "seq": frame.seq, "name": frame.name, "data": stub.to_string()})
            .to_string()
    };
    match store.notify(&message).await {
        Ok(_) => true,
        Err(e) => {
            tracing::warn!(error = %e, run, "a run's event could not reach its fleet watcher");
            false
        }
    }
}

async fn send_end(store: &dyn Store, w: &str, run: &str) {
    let data = json!({"event": "end", "runId": run, "reason": "the run ended"}).to_string();
    let message = json!({"t": "frame", "w": w, "seq": 0, "name": "end", "data": data}).to_string();
    let _ = store.notify(&message).await;
}

/// Applies a debug action to a run this replica holds, through the handler a local request
/// takes, and sends its answer back.
async fn apply(api: Api, store: Arc<dyn Store>, message: Json) {
    let (Some(run), Some(reply), Some(action)) = (
        message["run"].as_str(),
        message["r"].as_str(),
        message["action"].as_str().and_then(Action::parse),
    ) else {
        return;
    };
    let node = message["node"].as_str().unwrap_or_default().to_owned();
    let body = Bytes::from(message["body"].as_str().unwrap_or_default().to_owned());
    let state = State(api.clone());
    let id = run.to_owned();
    let response = match action {
        Action::Pause => crate::debug::pause(state, Path(id)).await,
        Action::Resume => crate::debug::resume(state, Path(id)).await,
        Action::Step => crate::debug::step(state, Path(id)).await,
        Action::Stop => crate::debug::stop(state, Path(id)).await,
        Action::SetBreakpoint => crate::debug::set_breakpoint(state, Path((id, node)), body).await,
        Action::ClearBreakpoint => crate::debug::clear_breakpoint(state, Path((id, node))).await,
    };
    let status = response.status().as_u16();
    let body = axum::body::to_bytes(response.into_body(), FLEET_MESSAGE_BYTES)
        .await
        .ok()
        .and_then(|b| serde_json::from_slice::<Json>(&b).ok())
        .unwrap_or(Json::Null);
    let message = json!({"t": "reply", "r": reply, "status": status, "body": body}).to_string();
    if let Err(e) = store.notify(&message).await {
        tracing::warn!(error = %e, run, "a debug action's answer could not reach its replica");
    }
}

/// Asks the fleet to apply `action` to run `run`; the answer of the replica holding it, or
/// `None` when no replica does.
pub(crate) async fn control(
    api: &Api,
    run: &str,
    action: Action,
    node: Option<&str>,
    body: &[u8],
) -> Option<Response> {
    let store = store_of(api)?;
    let mut feed = store.listen().await.ok()??;
    let r = new_id()?;
    let message = json!({
        "t": "control", "run": run, "r": r, "action": action.name(),
        "node": node, "body": String::from_utf8_lossy(body),
    })
    .to_string();
    store.notify(&message).await.ok()?;
    let answer = tokio::time::timeout(PATIENCE, async {
        loop {
            let Ok(text) = feed.recv().await.or_else(|e| match e {
                RecvError::Lagged(_) => Ok(String::new()),
                RecvError::Closed => Err(()),
            }) else {
                return None;
            };
            let Ok(m) = serde_json::from_str::<Json>(&text) else {
                continue;
            };
            if m["t"] == "reply" && m["r"] == r.as_str() {
                return Some(m);
            }
        }
    })
    .await
    .ok()??;
    let status = u16::try_from(answer["status"].as_u64().unwrap_or(500))
        .ok()
        .and_then(|s| StatusCode::from_u16(s).ok())
        .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    Some(crate::http::json_response(status, &answer["body"]))
}

/// Run `run`'s live events from the replica that holds it, as an SSE stream, or `None` when
/// no replica does.
pub(crate) async fn watch(api: &Api, run: &str) -> Option<Response> {
    let store = store_of(api)?;
    let mut feed = store.listen().await.ok()??;
    let w = new_id()?;
    let message = json!({"t": "watch", "run": run, "w": w}).to_string();
    store.notify(&message).await.ok()?;
    let first = tokio::time::timeout(PATIENCE, next_frame(&mut feed, &w))
        .await
        .ok()??;
    let bye = json!({"t": "unwatch", "w": w}).to_string();
    let state = RemoteWatch {
        feed,
        _leave: all::Leave::new(store, bye, None),
        w,
        first: Some(first),
        over: false,
    };
    let stream = futures::stream::unfold(state, |mut s| async move {
        if s.over {
            return None;
        }
        let frame = match s.first.take() {
            Some(frame) => frame,
            None => next_frame(&mut s.feed, &s.w).await?,
        };
        s.over = frame.0 == "end";
        Some((Ok::<_, Infallible>(frame.into_event()), s))
    });
    Some(
        Sse::new(stream)
            .keep_alive(KeepAlive::default())
            .into_response(),
    )
}

struct RemoteWatch {
    feed: broadcast::Receiver<String>,
    /// Tells the replica holding the run when this watcher is gone.
    _leave: all::Leave,
    w: String,
    first: Option<RemoteFrame>,
    over: bool,
}

/// An event as the fleet carries it: its name, sequence number and data.
struct RemoteFrame(String, u64, String);

impl RemoteFrame {
    fn into_event(self) -> SseEvent {
        let event = SseEvent::default().event(self.0).data(self.2);
        if self.1 == 0 {
            event
        } else {
            event.id(self.1.to_string())
        }
    }
}

/// The next frame for watch `w`; `None` once the feed closed or this watcher fell behind it
/// (what it missed cannot be asked again).
async fn next_frame(feed: &mut broadcast::Receiver<String>, w: &str) -> Option<RemoteFrame> {
    loop {
        let text = feed.recv().await.ok()?;
        let Ok(m) = serde_json::from_str::<Json>(&text) else {
            continue;
        };
        if m["t"] != "frame" || m["w"] != w {
            continue;
        }
        return Some(RemoteFrame(
            m["name"].as_str().unwrap_or("event").to_owned(),
            m["seq"].as_u64().unwrap_or(0),
            m["data"].as_str().unwrap_or("{}").to_owned(),
        ));
    }
}
