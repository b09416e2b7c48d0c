//! The sessions driven from both ends: the HTTP side through [`SessionManager`], the service
//! side through the session's [`Transport`], as rmcp's service loop uses it.

use std::collections::HashSet;
use std::time::Duration;

use futures::StreamExt;
use rmcp::model::{
    ClientJsonRpcMessage, NumberOrString, ProgressNotificationParam, ProgressToken,
    ServerJsonRpcMessage, ServerNotification, ServerResult,
};
use serde_json::json;

use super::*;

/// Every wait in these tests is bounded: a routing bug fails the test instead of hanging it.
pub(super) trait Within: Future + Sized {
    async fn within(self) -> Self::Output {
        tokio::time::timeout(Duration::from_secs(10), self)
            .await
            .expect("within 10 s")
    }
}

impl<F: Future> Within for F {}

fn client(message: serde_json::Value) -> ClientJsonRpcMessage {
    serde_json::from_value(message).expect("a client message")
}

fn initialize() -> ClientJsonRpcMessage {
    client(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}}),
    )
}

fn call(id: i64, progress: Option<&str>) -> ClientJsonRpcMessage {
    let mut params = json!({"name": "echo", "arguments": {}});
    if let Some(token) = progress {
        params["_meta"] = json!({"progressToken": token});
    }
    client(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}))
}

fn answer(id: i64) -> ServerJsonRpcMessage {
    ServerJsonRpcMessage::response(ServerResult::empty(()), NumberOrString::Number(id))
}

fn progress(token: &str) -> ServerJsonRpcMessage {
    ServerJsonRpcMessage::notification(ServerNotification::ProgressNotification(
        rmcp::model::Notification::new(ProgressNotificationParam::new(
            ProgressToken(NumberOrString::String(token.into())),
            1.0,
        )),
    ))
}

fn list_changed() -> ServerJsonRpcMessage {
    ServerJsonRpcMessage::notification(ServerNotification::ToolListChangedNotification(
        rmcp::model::NotificationNoParam::default(),
    ))
}

fn request_id(message: &ClientJsonRpcMessage) -> Option<i64> {
    match message {
        ClientJsonRpcMessage::Request(r) => match &r.id {
            NumberOrString::Number(n) => Some(*n),
            NumberOrString::String(_) => None,
        },
        _ => None,
    }
}

/// A session past its initialize, and its service's end.
async fn open(sessions: &Sessions) -> (SessionId, SessionTransport) {
    let (id, mut transport) = sessions.create_session().await.expect("created");
    let init = tokio::spawn({
        let session = sessions.get(&id).expect("in the table");
        async move { session.initialize(initialize()).await }
    });
    let got = transport
        .receive()
        .within()
        .await
        .expect("the initialize request");
    assert_eq!(request_id(&got), Some(0));
    transport.send(answer(0)).await.expect("sent");
    let reply = init.await.expect("joined").expect("answered");
    assert!(matches!(reply, ServerJsonRpcMessage::Response(_)));
    (id, transport)
}

fn message_ids(events: &[ServerSseMessage]) -> Vec<(Option<String>, Option<String>)> {
    events
        .iter()
        .map(|e| {
            let kind = e.message.as_ref().map(|m| match &**m {
                ServerJsonRpcMessage::Response(_) => "answer".to_owned(),
                ServerJsonRpcMessage::Notification(_) => "notification".to_owned(),
                _ => "other".to_owned(),
            });
            (e.event_id.clone(), kind)
        })
        .collect()
}

/// A call's stream: primed, its progress (by token), its answer, then the end. A
/// notification about nothing in particular waits on the standalone stream instead.
#[tokio::test]
async fn a_call_streams_its_progress_and_answer_and_other_notifications_go_to_the_get_stream() {
    let sessions = Sessions::new(8, Duration::from_secs(60), Some(Duration::from_secs(3)));
    let (id, mut transport) = open(&sessions).await;
    let stream = sessions
        .create_stream(&id, call(5, Some("tok")))
        .await
        .expect("stream");
    let got = transport.receive().within().await.expect("the call");
    assert_eq!(request_id(&got), Some(5));
    transport.send(list_changed()).await.expect("sent");
    transport.send(progress("tok")).await.expect("sent");
    transport.send(answer(5)).await.expect("sent");
    let events: Vec<_> = stream.collect::<Vec<_>>().within().await;
    assert_eq!(
        message_ids(&events),
        [
            (Some("0/0".to_owned()), None),
            (Some("1/0".to_owned()), Some("notification".to_owned())),
            (Some("2/0".to_owned()), Some("answer".to_owned())),
        ]
    );
    let mut get = sessions
        .create_standalone_stream(&id)
        .await
        .expect("GET stream");
    let first = get.next().within().await.expect("the kept notification");
    assert_eq!(first.event_id.as_deref(), Some("1"));
    // A second GET while the first is open carries nothing, so the first keeps the events.
    let mut shadow = sessions
        .create_standalone_stream(&id)
        .await
        .expect("second GET");
    transport.send(list_changed()).await.expect("sent");
    assert_eq!(
        get.next()
            .within()
            .await
            .and_then(|e| e.event_id)
            .as_deref(),
        Some("2")
    );
    sessions.close_session(&id).await.expect("closed");
    assert!(
        get.next().within().await.is_none(),
        "the session's end ends its streams"
    );
    assert!(shadow.next().within().await.is_none());
    assert!(
        transport.receive().within().await.is_none(),
        "the service gets no more"
    );
}

/// A client whose connection drops after the priming event reconnects with its id and gets
/// the answer (and only what came after that event).
#[tokio::test]
async fn a_dropped_call_stream_resumes_from_its_last_event_id() {
    let sessions = Sessions::new(8, Duration::from_secs(60), Some(Duration::from_secs(3)));
    let (id, mut transport) = open(&sessions).await;
    let mut stream = sessions
        .create_stream(&id, call(9, None))
        .await
        .expect("stream");
    let priming = stream.next().within().await.expect("priming");
    let last = priming.event_id.expect("an id");
    drop(stream);
    transport.receive().within().await.expect("the call");
    transport.send(answer(9)).await.expect("sent");
    let resumed: Vec<_> = sessions
        .resume(&id, last.clone())
        .await
        .expect("resumed")
        .collect::<Vec<_>>()
        .within()
        .await;
    assert_eq!(
        message_ids(&resumed),
        [(Some("1/0".to_owned()), Some("answer".to_owned()))]
    );
    // Read to the end: a second reconnection finds nothing more.
    let again = sessions.resume(&id, last).await;
    assert!(again.is_err(), "a stream read to its end is forgotten");
    assert!(sessions.resume(&id, "x/1".into()).await.is_err());
}

/// A client's cancellation ends the cancelled call's stream; the service still hears of it.
#[tokio::test]
async fn a_cancelled_call_ends_its_stream() {
    let sessions = Sessions::new(8, Duration::from_secs(60), None);
    let (id, mut transport) = open(&sessions).await;
    let stream = sessions
        .create_stream(&id, call(3, None))
        .await
        .expect("stream");
    transport.receive().within().await.expect("the call");
    let cancel = client(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 3}}),
    );
    sessions
        .accept_message(&id, cancel)
        .await
        .expect("accepted");
    let events: Vec<_> = stream.collect::<Vec<_>>().within().await;
    assert!(
        events.is_empty(),
        "no priming without a retry hint, and no answer"
    );
    assert!(matches!(
        transport.receive().within().await,
        Some(ClientJsonRpcMessage::Notification(_))
    ));
}

/// A request id reused while the first request is in flight ends the first one's stream; the
/// answer goes to the latest, and nothing is left behind.
#[tokio::test]
async fn a_reused_request_id_ends_the_earlier_stream() {
    let sessions = Sessions::new(8, Duration::from_secs(60), None);
    let (id, mut transport) = open(&sessions).await;
    let first = sessions
        .create_stream(&id, call(4, None))
        .await
        .expect("stream");
    let second = sessions
        .create_stream(&id, call(4, None))
        .await
        .expect("stream");
    assert_eq!(first.count().within().await, 0, "ended, without an answer");
    transport.receive().within().await.expect("the first call");
    transport.receive().within().await.expect("the second call");
    transport.send(answer(4)).await.expect("sent");
    assert_eq!(second.count().within().await, 1, "the answer");
    let session = sessions.get(&id).expect("open");
    assert_eq!(session.streams_in_flight(), 0);
}

/// A server that answers nothing of its own: only its peer is used.
struct Nobody;

impl rmcp::ServerHandler for Nobody {}

/// A session past its initialize whose peer is known, as `LiveServer`'s `initialize` leaves
/// it: its calls run beside the serve loop.
async fn open_direct(sessions: &Sessions) -> (SessionId, SessionTransport) {
    let (id, transport) = open(sessions).await;
    // Any server's peer serves: these tests send nothing through it.
    let (_, other) = sessions.create_session().await.expect("created");
    let service = rmcp::service::serve_directly(Nobody, other, None);
    let session = sessions.get(&id).expect("open");
    assert!(session.peer.0.set(service.peer().clone()).is_ok());
    (id, transport)
}

fn tools_call(id: i64) -> rmcp::model::JsonRpcRequest<rmcp::model::ClientRequest> {
    match call(id, Some("tok")) {
        ClientJsonRpcMessage::Request(request) => request,
        _ => unreachable!("a request"),
    }
}

/// Before its `initialize` was handled a session has no peer: its calls go to the serve loop.
#[tokio::test]
async fn a_session_without_its_peer_leaves_calls_to_the_serve_loop() {
    let sessions = Sessions::new(8, Duration::from_secs(60), None);
    let (id, _transport) = open(&sessions).await;
    assert!(sessions.call(&id, &tools_call(1)).expect("open").is_none());
}

/// A call run beside the serve loop: its progress (sent through the service) and its answer
/// (handed back) on its own stream, which then ends; nothing reaches the service.
#[tokio::test]
async fn a_call_run_beside_the_loop_answers_on_its_stream() {
    let sessions = Sessions::new(8, Duration::from_secs(60), None);
    let (id, mut transport) = open_direct(&sessions).await;
    let direct = sessions
        .call(&id, &tools_call(5))
        .expect("open")
        .expect("direct");
    transport.send(progress("tok")).await.expect("sent");
    direct.answer.send(answer(5));
    let events: Vec<_> = direct.reader.collect::<Vec<_>>().within().await;
    assert_eq!(
        message_ids(&events),
        [
            (Some("0/0".to_owned()), Some("notification".to_owned())),
            (Some("1/0".to_owned()), Some("answer".to_owned())),
        ]
    );
    assert!(direct.cancel.is_cancelled(), "what it left running ends");
    let session = sessions.get(&id).expect("open");
    assert_eq!(session.streams_in_flight(), 0);
    assert!(
        tokio::time::timeout(Duration::from_millis(100), transport.receive())
            .await
            .is_err(),
        "the service never saw the call"
    );
}

/// The client's cancellation stops the call and ends its stream; a late answer goes nowhere
/// (not to the standalone stream).
#[tokio::test]
async fn a_cancelled_call_beside_the_loop_stops_and_its_late_answer_is_dropped() {
    let sessions = Sessions::new(8, Duration::from_secs(60), None);
    let (id, _transport) = open_direct(&sessions).await;
    let direct = sessions
        .call(&id, &tools_call(3))
        .expect("open")
        .expect("direct");
    let cancel = client(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 3}}),
    );
    sessions
        .accept_message(&id, cancel)
        .await
        .expect("accepted");
    assert!(direct.cancel.is_cancelled());
    direct.answer.send(answer(3));
    assert_eq!(direct.reader.count().within().await, 0, "ended, unanswered");
    let mut get = sessions.create_standalone_stream(&id).await.expect("GET");
    assert!(
        tokio::time::timeout(Duration::from_millis(100), get.next())
            .await
            .is_err(),
        "the late answer did not land on the standalone stream"
    );
}

/// The session's close stops its calls; a handler that ends without an answer (a panic drops
/// its `Answer`) ends its stream.
#[tokio::test]
async fn closing_stops_calls_beside_the_loop_and_an_unsent_answer_ends_the_stream() {
    let sessions = Sessions::new(8, Duration::from_secs(60), None);
    let (id, _transport) = open_direct(&sessions).await;
    let dropped = sessions
        .call(&id, &tools_call(6))
        .expect("open")
        .expect("direct");
    drop(dropped.answer);
    assert_eq!(dropped.reader.count().within().await, 0);
    let running = sessions
        .call(&id, &tools_call(7))
        .expect("open")
        .expect("direct");
    sessions.close_session(&id).await.expect("closed");
    assert!(running.cancel.is_cancelled());
    assert_eq!(running.reader.count().within().await, 0);
}

/// Idle sessions are closed by the sweeper; one with a call in flight is not.
#[tokio::test]
async fn idle_sessions_expire_and_busy_ones_do_not() {
    let sessions = Sessions::new(8, Duration::from_millis(200), None);
    let (idle, mut idle_transport) = open(&sessions).await;
    let (busy, mut busy_transport) = open(&sessions).await;
    let stream = sessions
        .create_stream(&busy, call(1, None))
        .await
        .expect("stream");
    busy_transport.receive().within().await.expect("the call");
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert!(!sessions.has_session(&idle).await.expect("asked"));
    assert!(idle_transport.receive().within().await.is_none());
    assert!(sessions.has_session(&busy).await.expect("asked"));
    busy_transport.send(answer(1)).await.expect("sent");
    assert_eq!(stream.count().within().await, 1, "the answer");
}

/// Many creations at once at the cap: no more than the cap stay open, the evicted ones are
/// closed (their service loop ends), and every open one is in the table.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_creations_stay_under_the_cap() {
    const MAX: usize = 8;
    let sessions = Sessions::new(MAX, Duration::from_secs(300), None);
    let tasks: Vec<_> = (0..32)
        .map(|_| {
            let sessions = sessions.clone();
            tokio::spawn(async move {
                let mut kept = Vec::new();
                for _ in 0..100 {
                    let (id, transport) = sessions.create_session().await.expect("created");
                    kept.push((id, transport));
                    tokio::task::yield_now().await;
                }
                kept
            })
        })
        .collect();
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.expect("creator task"));
    }
    let open: HashSet<SessionId> = sessions.lock().open.keys().cloned().collect();
    assert!(open.len() <= MAX, "{} open with a cap of {MAX}", open.len());
    for (id, mut transport) in all {
        let closed = tokio::time::timeout(Duration::from_millis(200), transport.receive()).await;
        if open.contains(&id) {
            assert!(closed.is_err(), "an open session's service was ended");
        } else {
            assert!(matches!(closed, Ok(None)), "an evicted session still runs");
        }
    }
}
