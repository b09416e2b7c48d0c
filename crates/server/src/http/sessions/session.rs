//! One Streamable HTTP session: the client's messages on their way to the session's MCP
//! service, and the service's messages routed to the SSE stream each belongs on.
//!
//! rmcp's own session manager runs a worker task per session, with five channels, between
//! the HTTP requests and the service: each channel's first block of 32 slots (rmcp's messages
//! are hundreds of bytes) is allocated when it is made, and every message hops through the
//! worker. Here the HTTP side and the service share the session's state under a lock instead:
//! an idle session is this struct, and a message goes straight to its stream.
//!
//! Where a service message goes (as rmcp routes it, so clients see the same streams):
//! - an answer (result or error) to the stream of the POST that carried the request, which
//!   then ends;
//! - a progress notification to the stream of the request that named its progress token;
//! - a request of the server's (sampling, elicitation) made while handling a client's request
//!   to that request's stream (SEP-2260), a cancellation to the cancelled request's stream;
//! - everything else to the standalone stream (the client's GET), kept until one is open.
//!
//! A `tools/call` can skip the service's serve loop ([`Session::call`]): the caller runs the
//! handler itself with the session's peer (learnt at `initialize`) and hands its answer back
//! ([`Session::answer`]). The serve loop would spawn a task around rmcp's whole request
//! future (its largest method's state, kilobytes), send the answer through a channel to
//! itself and spawn another task to deliver it: a tenth of such a call's instructions. What
//! the handler sends meanwhile (progress, a request to the client) still goes through the
//! peer and the serve loop, routed as before; a `notifications/cancelled` for the call, the
//! stream's end and the session's close cancel the handler as rmcp's loop would.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use rmcp::RoleServer;
use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, ClientRequest, GetExtensions, GetMeta,
    JsonRpcRequest, ProgressToken, RequestId, ServerJsonRpcMessage, ServerNotification,
};
use rmcp::service::{OriginatingRequestId, Peer};
use rmcp::transport::streamable_http_server::session::SessionId;
use tokio::sync::{Notify, oneshot};
use tokio_util::sync::CancellationToken;

use crate::Fast;
use crate::live::PeerSlot;

use super::outbox::{Outbox, Reader};
use super::{Busy, SessionError};

/// Client messages waiting for the service before a POST is refused: the service takes each
/// as it comes (it spawns a task per request), so only a stalled service fills this.
const INBOX_MAX: usize = 1024;
/// Answered request streams kept for a client that reconnects after missing the answer.
const FINISHED_KEPT: usize = 16;
/// How long an answered stream is kept for a reconnecting client.
const FINISHED_TTL: Duration = Duration::from_secs(60);
/// Extra GET streams held open (with keep-alive pings, no events) while one already carries
/// the session's notifications; past this the oldest is closed.
const SHADOWS_MAX: usize = 32;

pub(super) struct Session {
    pub(super) id: SessionId,
    /// Requests in flight, and when the session was last active (ms from the table's epoch).
    pub(super) busy: AtomicUsize,
    pub(super) last_ms: AtomicU64,
    /// Who initialized the session (under access control): only they may use it.
    pub(super) owner: OnceLock<String>,
    state: Mutex<State>,
    inbox_ready: Notify,
    /// SSE retry hint sent first on each request stream (none: no priming event).
    retry: Option<Duration>,
    /// The session's peer, once its `initialize` was handled.
    pub(super) peer: PeerSlot,
}

#[derive(Default)]
struct State {
    closed: bool,
    inbox: VecDeque<ClientJsonRpcMessage>,
    /// The initialize request being answered, and who waits for its answer.
    initializing: Option<(RequestId, oneshot::Sender<ServerJsonRpcMessage>)>,
    next_stream: u64,
    /// Request streams not yet answered, and the request ids and progress tokens routed to
    /// each.
    streams: HashMap<u64, (Arc<Outbox>, Vec<Resource>), Fast>,
    routes: HashMap<Resource, u64, Fast>,
    /// Answered request streams a client may still reconnect to.
    finished: VecDeque<(u64, Arc<Outbox>, Instant)>,
    /// The standalone stream's events (made on first use), and extra GET streams.
    common: Option<Arc<Outbox>>,
    shadows: Vec<Arc<Outbox>>,
    /// The calls run beside the serve loop, by stream: cancelled when their stream ends
    /// before their answer.
    running: HashMap<u64, CancellationToken, Fast>,
}

/// A `tools/call` to run beside the serve loop ([`Session::call`]).
pub(crate) struct Direct {
    pub(crate) reader: Reader,
    pub(crate) peer: Peer<RoleServer>,
    /// Cancelled by the client's `notifications/cancelled`, the session's close or the
    /// stream's end; the handler's context takes a child of it.
    pub(crate) cancel: CancellationToken,
    pub(crate) answer: Answer,
}

/// Where a call run beside the serve loop answers; dropped unsent (the handler panicked), its
/// stream ends without an answer.
pub(crate) struct Answer {
    session: Arc<Session>,
    stream: u64,
    sent: bool,
}

impl Answer {
    pub(crate) fn send(mut self, answer: ServerJsonRpcMessage) {
        self.sent = true;
        self.session.answer(self.stream, Some(answer));
    }
}

impl Drop for Answer {
    fn drop(&mut self) {
        if !self.sent {
            self.session.answer(self.stream, None);
        }
    }
}

#[derive(Clone, PartialEq, Eq, Hash)]
enum Resource {
    Request(RequestId),
    Progress(ProgressToken),
}

impl Session {
    pub(super) fn new(id: SessionId, now_ms: u64, retry: Option<Duration>) -> Self {
        Session {
            id,
            busy: AtomicUsize::new(0),
            last_ms: AtomicU64::new(now_ms),
            owner: OnceLock::new(),
            state: Mutex::new(State::default()),
            inbox_ready: Notify::new(),
            retry,
            peer: PeerSlot::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn enqueue(
        &self,
        state: &mut State,
        message: ClientJsonRpcMessage,
    ) -> Result<(), SessionError> {
        if state.closed {
            return Err(SessionError::Closed);
        }
        if state.inbox.len() >= INBOX_MAX {
            return Err(SessionError::Backlog(state.inbox.len()));
        }
        state.inbox.push_back(message);
        self.inbox_ready.notify_one();
        Ok(())
    }

    /// Hands the `initialize` request to the service and waits for its answer.
    pub(super) async fn initialize(
        &self,
        mut message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, SessionError> {
        let ClientJsonRpcMessage::Request(request) = &mut message else {
            return Err(SessionError::NotInitialize);
        };
        request.request.extensions_mut().insert(self.peer.clone());
        let (tx, rx) = oneshot::channel();
        {
            let mut state = self.lock();
            state.initializing = Some((request.id.clone(), tx));
            self.enqueue(&mut state, message)?;
        }
        rx.await.map_err(|_| SessionError::Closed)
    }

    /// Hands a client's request to the service; its answer, and what the service sends about
    /// it meanwhile, come on the returned stream.
    pub(super) fn request(
        &self,
        request: ClientJsonRpcMessage,
        busy: Option<Busy>,
    ) -> Result<Reader, SessionError> {
        let mut state = self.lock();
        if state.closed {
            return Err(SessionError::Closed);
        }
        let resources = match &request {
            ClientJsonRpcMessage::Request(request) => resources(request),
            _ => Vec::new(),
        };
        self.enqueue(&mut state, request)?;
        let (_, reader) = self.open_stream(&mut state, resources, busy);
        Ok(reader)
    }

    /// Opens the stream of a `tools/call` its caller runs beside the serve loop, with the
    /// session's peer; `None` before `initialize` was handled (the serve loop takes the call).
    pub(super) fn call(
        self: &Arc<Self>,
        request: &JsonRpcRequest<ClientRequest>,
        busy: Option<Busy>,
    ) -> Result<Option<Direct>, SessionError> {
        let Some(peer) = self.peer.0.get() else {
            return Ok(None);
        };
        let mut state = self.lock();
        if state.closed {
            return Err(SessionError::Closed);
        }
        let (stream, reader) = self.open_stream(&mut state, resources(request), busy);
        let cancel = CancellationToken::new();
        state.running.insert(stream, cancel.clone());
        Ok(Some(Direct {
            reader,
            peer: peer.clone(),
            cancel,
            answer: Answer {
                session: self.clone(),
                stream,
                sent: false,
            },
        }))
    }

    /// The answer of a call run beside the serve loop ([`Answer`]), to its stream; dropped, as
    /// rmcp drops a cancelled request's, when the stream has ended (`None`: the handler ended
    /// without one, the stream ends).
    fn answer(&self, stream: u64, answer: Option<ServerJsonRpcMessage>) {
        let mut state = self.lock();
        let Some(cancel) = state.running.remove(&stream) else {
            return;
        };
        // As rmcp's loop after an answer: what the handler left running under its token ends.
        cancel.cancel();
        match answer {
            // Closed meanwhile: nobody reads it.
            Some(answer) => drop(state.deliver(answer)),
            None => state.finish(stream),
        }
    }

    /// A new request stream, routed the ids and progress tokens in `resources`.
    fn open_stream(
        &self,
        state: &mut State,
        resources: Vec<Resource>,
        busy: Option<Busy>,
    ) -> (u64, Reader) {
        let stream = state.next_stream;
        state.next_stream = stream.wrapping_add(1);
        let outbox = Outbox::new(Some(stream), 0);
        if let Some(retry) = self.retry {
            outbox.prime(retry);
        }
        for resource in &resources {
            // An id (or progress token) still in flight, reused: the earlier stream ends
            // rather than waiting for an answer that will now be routed here, so a client
            // cannot pile up streams that never finish.
            if let Some(earlier) = state.routes.get(resource).copied() {
                state.finish(earlier);
            }
            state.routes.insert(resource.clone(), stream);
        }
        state.streams.insert(stream, (outbox.clone(), resources));
        (stream, outbox.reader(None, busy))
    }

    /// Hands a client's notification or answer to the service. A cancellation ends the
    /// cancelled request's stream.
    pub(super) fn accept(&self, message: ClientJsonRpcMessage) -> Result<(), SessionError> {
        let mut state = self.lock();
        if let ClientJsonRpcMessage::Notification(notification) = &message
            && let ClientNotification::CancelledNotification(cancelled) = &notification.notification
            && let Some(id) = &cancelled.params.request_id
            && let Some(stream) = state.routes.get(&Resource::Request(id.clone())).copied()
        {
            state.finish(stream);
        }
        self.enqueue(&mut state, message)
    }

    /// A GET stream: the session's notifications, from the first kept (after `after`, for a
    /// reconnection), unless another GET already carries them, in which case an empty stream
    /// the SSE keep-alive holds open (so that competing reconnections do not take the stream
    /// from each other).
    pub(super) fn standalone(&self, after: Option<usize>) -> Result<Reader, SessionError> {
        let mut state = self.lock();
        if state.closed {
            return Err(SessionError::Closed);
        }
        let common = state.common().clone();
        if !common.attached() {
            return Ok(common.reader(after, None));
        }
        state.shadows.retain(|s| s.attached());
        if state.shadows.len() >= SHADOWS_MAX {
            let oldest = state.shadows.remove(0);
            oldest.finish();
        }
        let shadow = Outbox::new(None, 1);
        state.shadows.push(shadow.clone());
        Ok(shadow.reader(None, None))
    }

    /// A reconnection to request stream `stream` after its event `after`.
    pub(super) fn resume(
        &self,
        stream: u64,
        after: usize,
        busy: Option<Busy>,
    ) -> Result<Reader, SessionError> {
        let mut state = self.lock();
        state.forget_stale_finished();
        let outbox = state
            .streams
            .get(&stream)
            .map(|(outbox, _)| outbox.clone())
            .or_else(|| {
                state
                    .finished
                    .iter()
                    .find(|(id, _, _)| *id == stream)
                    .map(|(_, outbox, _)| outbox.clone())
            })
            .ok_or(SessionError::UnknownStream(stream))?;
        Ok(outbox.reader(Some(after), busy))
    }

    /// Routes one of the service's messages to its stream.
    pub(super) fn deliver(&self, message: ServerJsonRpcMessage) -> Result<(), SessionError> {
        self.lock().deliver(message)
    }

    /// The next client message for the service; `None` once the session is closed.
    pub(super) async fn next_message(&self) -> Option<ClientJsonRpcMessage> {
        loop {
            {
                let mut state = self.lock();
                if let Some(message) = state.inbox.pop_front() {
                    return Some(message);
                }
                if state.closed {
                    return None;
                }
            }
            self.inbox_ready.notified().await;
        }
    }

    /// Request streams waiting for their answer.
    #[cfg(test)]
    pub(super) fn streams_in_flight(&self) -> usize {
        let state = self.lock();
        debug_assert_eq!(
            state.routes.len(),
            state.streams.values().map(|(_, r)| r.len()).sum::<usize>()
        );
        state.streams.len()
    }

    /// Ends the session: the service gets no more messages, every stream ends.
    pub(super) fn close(&self) {
        let mut state = self.lock();
        if state.closed {
            return;
        }
        state.closed = true;
        state.inbox.clear();
        state.initializing = None;
        for (_, (outbox, _)) in state.streams.drain() {
            outbox.finish();
        }
        state.routes.clear();
        for (_, outbox, _) in state.finished.drain(..) {
            outbox.finish();
        }
        if let Some(common) = state.common.take() {
            common.finish();
        }
        for shadow in state.shadows.drain(..) {
            shadow.finish();
        }
        for (_, cancel) in state.running.drain() {
            cancel.cancel();
        }
        self.inbox_ready.notify_one();
    }
}

impl State {
    /// Routes one of the service's messages to its stream.
    fn deliver(&mut self, message: ServerJsonRpcMessage) -> Result<(), SessionError> {
        if self.closed {
            return Err(SessionError::Closed);
        }
        if let Some(id) = answered(&message)
            && self
                .initializing
                .as_ref()
                .is_some_and(|(init, _)| init == id)
            && let Some((_, waiter)) = self.initializing.take()
        {
            return waiter.send(message).map_err(|_| SessionError::Closed);
        }
        let (resource, last) = route(&message);
        let stream = resource.and_then(|r| self.routes.get(&r).copied());
        match stream.and_then(|s| self.streams.get(&s).map(|(o, _)| (s, o.clone()))) {
            Some((stream, outbox)) => {
                outbox.push(message, last);
                if last {
                    self.finish(stream);
                }
            }
            None => self.common().push(message, false),
        }
        Ok(())
    }

    fn common(&mut self) -> &Arc<Outbox> {
        // Numbered from 1: rmcp primes a GET stream with the id "0" itself.
        self.common.get_or_insert_with(|| Outbox::new(None, 1))
    }

    /// Request stream `stream` gets no more events; it is kept a while for a client that
    /// reconnects before reading them all.
    fn finish(&mut self, stream: u64) {
        let Some((outbox, resources)) = self.streams.remove(&stream) else {
            return;
        };
        outbox.finish();
        // A call run beside the serve loop whose stream ends unanswered (cancelled, its id
        // reused): nobody will read its answer.
        if let Some(cancel) = self.running.remove(&stream) {
            cancel.cancel();
        }
        for resource in resources {
            if self.routes.get(&resource) == Some(&stream) {
                self.routes.remove(&resource);
            }
        }
        self.forget_stale_finished();
        if self.finished.len() >= FINISHED_KEPT {
            self.finished.pop_front();
        }
        self.finished.push_back((stream, outbox, Instant::now()));
    }

    /// Forgets the answered streams read to the end or older than [`FINISHED_TTL`].
    fn forget_stale_finished(&mut self) {
        self.finished
            .retain(|(_, outbox, at)| at.elapsed() < FINISHED_TTL && !outbox.spent());
    }
}

/// What routes the stream of a client's request to it: its id, and its progress token.
fn resources(request: &JsonRpcRequest<ClientRequest>) -> Vec<Resource> {
    let mut resources = vec![Resource::Request(request.id.clone())];
    if let Some(token) = request.request.get_meta().get_progress_token() {
        resources.push(Resource::Progress(token));
    }
    resources
}

/// The request an answer answers.
fn answered(message: &ServerJsonRpcMessage) -> Option<&RequestId> {
    match message {
        ServerJsonRpcMessage::Response(response) => Some(&response.id),
        ServerJsonRpcMessage::Error(error) => error.id.as_ref(),
        _ => None,
    }
}

/// What routes a service message to a request's stream (none: the standalone stream), and
/// whether it is that stream's last.
fn route(message: &ServerJsonRpcMessage) -> (Option<Resource>, bool) {
    match message {
        ServerJsonRpcMessage::Response(_) | ServerJsonRpcMessage::Error(_) => {
            (answered(message).cloned().map(Resource::Request), true)
        }
        ServerJsonRpcMessage::Request(request) => (
            request
                .request
                .extensions()
                .get::<OriginatingRequestId>()
                .map(|o| Resource::Request(o.0.clone())),
            false,
        ),
        ServerJsonRpcMessage::Notification(notification) => match &notification.notification {
            ServerNotification::ProgressNotification(progress) => (
                Some(Resource::Progress(progress.params.progress_token.clone())),
                false,
            ),
            ServerNotification::CancelledNotification(cancelled) => (
                cancelled.params.request_id.clone().map(Resource::Request),
                false,
            ),
            _ => (None, false),
        },
    }
}
