//! The Streamable HTTP sessions (2025-11-25 and earlier), ours rather than rmcp's in-memory
//! manager: rmcp's `StreamableHttpService` speaks the protocol and runs each session's MCP
//! service; this module holds the sessions, routes messages between the HTTP requests and
//! the services (`session`), keeps each SSE stream's events for reconnections (`outbox`), and
//! bounds how many sessions live and for how long.
//!
//! Bounds: past `max` sessions, the session idle the longest is closed to make room, so
//! clients that open sessions and walk away (or an attacker who opens thousands) cannot grow
//! the server's memory without bound; a session idle for the idle timeout is closed by a
//! sweeper (one task for all sessions, not a timer per session).
//!
//! A session with a request in flight is not idle, however long ago the request started: a
//! slow call (a durable tool, a proxied call waiting on its upstream) is never cut off by
//! another client's initialize nor by the sweeper. Its idle time starts when its last response
//! stream ends. Only idle sessions are evicted; when every session is busy, the cap is
//! exceeded by those in flight (themselves bounded by `maxConcurrentRequests`) until they
//! finish. A session leaves the table when it is closed: by eviction, by its client's DELETE,
//! by the sweeper, or when its service ends (rmcp calls [`SessionManager::close_session`]).

mod outbox;
mod session;

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use futures::Stream;
use rmcp::RoleServer;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId};

pub(crate) use session::Direct;
use session::Session;

/// How often, at most, the log says that the cap is evicting sessions (with how many).
const EVICT_REPORT_EVERY: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub(crate) enum SessionError {
    #[error("no such session")]
    NotFound,
    #[error("the session is closed")]
    Closed,
    #[error("the session's service has {0} messages waiting; try again later")]
    Backlog(usize),
    #[error("a session starts with an initialize request")]
    NotInitialize,
    #[error("`{0}` is not an event id of this server")]
    EventId(String),
    #[error("the stream of request {0} is gone (answered and read, or too long ago)")]
    UnknownStream(u64),
}

pub(crate) struct Sessions {
    max: usize,
    idle_timeout: Duration,
    /// The SSE retry hint of each request stream's priming event.
    retry: Option<Duration>,
    /// What [`Session::last_ms`] counts from.
    epoch: Instant,
    table: Mutex<Table>,
}

#[derive(Default)]
struct Table {
    open: HashMap<SessionId, Arc<Session>, crate::Fast>,
    /// Sessions evicted since the last report, and when that was.
    evicted: u64,
    reported: Option<Instant>,
}

impl Table {
    /// The open sessions, in the metrics (`mcpflow_http_sessions_open{transport="streamable"}`).
    fn report_open(&self) {
        mcpflow_telemetry::metrics::http_sessions("streamable", self.open.len());
    }
}

/// A request in flight in a session, until its response stream is dropped.
pub(super) struct Busy {
    session: Arc<Session>,
    epoch: Instant,
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.session
            .last_ms
            .store(millis(self.epoch), Ordering::Relaxed);
        self.session.busy.fetch_sub(1, Ordering::Relaxed);
    }
}

fn millis(epoch: Instant) -> u64 {
    u64::try_from(epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// A session's end of the messages, for rmcp's service loop.
pub(crate) struct SessionTransport {
    session: Arc<Session>,
}

impl Transport<RoleServer> for SessionTransport {
    type Error = SessionError;

    fn send(
        &mut self,
        message: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), SessionError>> + Send + 'static {
        // Routed now, in the order the service sends: a call's progress precedes its answer.
        std::future::ready(self.session.deliver(message))
    }

    fn receive(&mut self) -> impl Future<Output = Option<ClientJsonRpcMessage>> + Send {
        self.session.next_message()
    }

    async fn close(&mut self) -> Result<(), SessionError> {
        self.session.close();
        Ok(())
    }
}

impl Sessions {
    /// At most `max` sessions, each closed after `idle_timeout` without a request; request
    /// streams start with a priming event carrying `retry` (none: no priming event). Starts
    /// the sweeper, which ends when the sessions are dropped.
    pub(crate) fn new(max: usize, idle_timeout: Duration, retry: Option<Duration>) -> Arc<Self> {
        let sessions = Arc::new(Sessions {
            max: max.max(1),
            idle_timeout,
            retry,
            epoch: Instant::now(),
            table: Mutex::new(Table::default()),
        });
        tokio::spawn(sweep(Arc::downgrade(&sessions)));
        sessions
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn get(&self, id: &SessionId) -> Result<Arc<Session>, SessionError> {
        self.lock()
            .open
            .get(id)
            .cloned()
            .ok_or(SessionError::NotFound)
    }

    fn touch(&self, session: &Session) {
        session.last_ms.store(millis(self.epoch), Ordering::Relaxed);
    }

    /// Opens the stream of a `tools/call` in session `id` that the caller runs beside the
    /// session's serve loop (`Session::call`); `None`: the serve loop must take it.
    pub(crate) fn call(
        &self,
        id: &SessionId,
        request: &rmcp::model::JsonRpcRequest<rmcp::model::ClientRequest>,
    ) -> Result<Option<Direct>, SessionError> {
        let session = self.get(id)?;
        let busy = self.busy(&session);
        session.call(request, Some(busy))
    }

    /// Who initialized session `id`, when access control named them.
    pub(crate) fn owner(&self, id: &str) -> Option<String> {
        self.lock().open.get(id)?.owner.get().cloned()
    }

    /// A request in flight in `session`: the session is not evicted while the guard lives.
    fn busy(&self, session: &Arc<Session>) -> Busy {
        session.busy.fetch_add(1, Ordering::Relaxed);
        self.touch(session);
        Busy {
            session: session.clone(),
            epoch: self.epoch,
        }
    }

    /// Makes room for one more session: at the cap, takes the sessions idle the longest (none
    /// with a request in flight) out of the table, to be closed.
    fn make_room(&self, table: &mut Table) -> Vec<Arc<Session>> {
        let excess = (table.open.len() + 1).saturating_sub(self.max);
        if excess == 0 {
            return Vec::new();
        }
        let mut by_age: Vec<(SessionId, u64)> = table
            .open
            .iter()
            .filter(|(_, s)| s.busy.load(Ordering::Relaxed) == 0)
            .map(|(id, s)| (id.clone(), s.last_ms.load(Ordering::Relaxed)))
            .collect();
        by_age.sort_by_key(|(_, t)| *t);
        let victims: Vec<Arc<Session>> = by_age
            .into_iter()
            .take(excess)
            .filter_map(|(id, _)| table.open.remove(&id))
            .collect();
        table.evicted += victims.len() as u64;
        let now = Instant::now();
        if table
            .reported
            .is_none_or(|at| now.duration_since(at) >= EVICT_REPORT_EVERY)
        {
            tracing::warn!(
                cap = self.max,
                closed = table.evicted,
                "HTTP session cap reached: closing the sessions idle longest to make room \
                 (`http.maxSessions`)"
            );
            table.evicted = 0;
            table.reported = Some(now);
        }
        victims
    }

    /// Closes the sessions idle longer than the idle timeout.
    fn expire_idle(&self) {
        let now = millis(self.epoch);
        let timeout = u64::try_from(self.idle_timeout.as_millis()).unwrap_or(u64::MAX);
        let expired: Vec<Arc<Session>> = {
            let mut table = self.lock();
            let expired = table
                .open
                .extract_if(|_, s| {
                    s.busy.load(Ordering::Relaxed) == 0
                        && now.saturating_sub(s.last_ms.load(Ordering::Relaxed)) >= timeout
                })
                .map(|(_, session)| session)
                .collect();
            table.report_open();
            expired
        };
        for session in expired {
            tracing::debug!(session = %session.id, "closing an idle HTTP session");
            session.close();
        }
    }
}

/// Closes idle sessions, checking a few times per idle timeout, until the sessions are gone.
async fn sweep(sessions: Weak<Sessions>) {
    let period = match sessions.upgrade() {
        Some(s) => (s.idle_timeout / 4).clamp(Duration::from_millis(50), Duration::from_secs(15)),
        None => return,
    };
    loop {
        tokio::time::sleep(period).await;
        let Some(sessions) = sessions.upgrade() else {
            return;
        };
        sessions.expire_idle();
    }
}

/// Where a reconnection's `Last-Event-ID` points: `index/stream` (a request's stream) or
/// `index` (the standalone stream).
fn parse_event_id(id: &str) -> Result<(usize, Option<u64>), SessionError> {
    let bad = || SessionError::EventId(id.chars().take(64).collect());
    let (index, stream) = match id.split_once('/') {
        Some((index, stream)) => (index, Some(stream.parse().map_err(|_| bad())?)),
        None => (id, None),
    };
    Ok((index.parse().map_err(|_| bad())?, stream))
}

/// The subject of the principal that sent `initialize` (rmcp put the HTTP request's parts,
/// where access control left the principal, on the message).
fn initializer(message: &ClientJsonRpcMessage) -> Option<String> {
    use rmcp::model::GetExtensions;
    let ClientJsonRpcMessage::Request(request) = message else {
        return None;
    };
    let parts = request
        .request
        .extensions()
        .get::<axum::http::request::Parts>()?;
    let principal = parts.extensions.get::<mcpflow_auth::Principal>()?;
    (principal.via() != mcpflow_auth::Via::Open).then(|| principal.subject().to_owned())
}

impl SessionManager for Sessions {
    type Error = SessionError;
    type Transport = SessionTransport;

    async fn create_session(&self) -> Result<(SessionId, SessionTransport), SessionError> {
        let id: SessionId = super::new_session_id().into();
        let session = Arc::new(Session::new(id.clone(), millis(self.epoch), self.retry));
        let victims = {
            let mut table = self.lock();
            let victims = self.make_room(&mut table);
            table.open.insert(id.clone(), session.clone());
            table.report_open();
            victims
        };
        for victim in victims {
            tracing::debug!(session = %victim.id, "session cap reached: closing the session idle longest");
            victim.close();
        }
        Ok((id, SessionTransport { session }))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, SessionError> {
        let session = self.get(id)?;
        self.touch(&session);
        if let Some(owner) = initializer(&message) {
            let _ = session.owner.set(owner);
        }
        session.initialize(message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, SessionError> {
        Ok(self.lock().open.contains_key(id))
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), SessionError> {
        let session = {
            let mut table = self.lock();
            let session = table.open.remove(id);
            table.report_open();
            session
        };
        if let Some(session) = session {
            session.close();
        }
        Ok(())
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, SessionError> {
        let session = self.get(id)?;
        let busy = self.busy(&session);
        session.request(message, Some(busy))
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), SessionError> {
        let session = self.get(id)?;
        self.touch(&session);
        session.accept(message)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, SessionError> {
        let session = self.get(id)?;
        self.touch(&session);
        session.standalone(None)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, SessionError> {
        let session = self.get(id)?;
        match parse_event_id(&last_event_id)? {
            (index, Some(stream)) => {
                let busy = self.busy(&session);
                session.resume(stream, index, Some(busy))
            }
            (index, None) => {
                self.touch(&session);
                session.standalone(Some(index))
            }
        }
    }
}

/// A request in a Streamable HTTP session from another principal than the one that opened it
/// is answered as for an unknown session (404): a session id is not a credential.
pub(crate) async fn owned_only(
    axum::extract::State(sessions): axum::extract::State<Arc<Sessions>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let session = request
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok());
    let caller = request.extensions().get::<mcpflow_auth::Principal>();
    if let (Some(id), Some(caller)) = (session, caller)
        && let Some(owner) = sessions.owner(id)
        && owner != caller.subject()
    {
        tracing::debug!("a request in another principal's session: refused as unknown");
        return super::guard::rpc_error(
            axum::http::StatusCode::NOT_FOUND,
            -32001,
            "session not found",
        );
    }
    next.run(request).await
}

#[cfg(test)]
mod tests;
