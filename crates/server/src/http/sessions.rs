//! rmcp's in-memory session manager with a cap: past `max_sessions`, the session idle the
//! longest is closed to make room, so clients that open sessions and walk away (or an attacker
//! who opens thousands) cannot grow the server's memory without bound. Idle sessions also
//! expire on their own after the configured timeout (rmcp's `keep_alive`).
//!
//! Our own table of open sessions is the one the cap counts. It must hold every session rmcp
//! holds: one missing from it is never chosen for eviction and lives out its idle timeout
//! (under concurrent initializes a snapshot-based sweep once dropped sessions created while it
//! ran, and with the default 300 s timeout RSS grew without plateau). So a session enters the
//! table when rmcp creates it and leaves it only when it is closed: by eviction, by its client's
//! DELETE, or when its service ends (rmcp calls [`SessionManager::close_session`] then, idle
//! expiry included). Creations in progress hold a place under the cap before rmcp names them.
//!
//! A session with a request in flight is not idle, however long ago the request started: a
//! slow call (a durable tool, a proxied call waiting on its upstream) is never cut off by
//! another client's initialize. Its idle time starts when its last response stream ends.
//! Only idle sessions are evicted; when every session is busy, the cap is exceeded by those
//! in flight (themselves bounded by `maxConcurrentRequests`) until they finish.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId};

/// How often, at most, the log says that the cap is evicting sessions (with how many).
const EVICT_REPORT_EVERY: Duration = Duration::from_secs(10);

pub(crate) struct BoundedSessions {
    inner: LocalSessionManager,
    max: usize,
    /// What [`Activity::last_ms`] counts from.
    epoch: Instant,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// What each open session is doing.
    open: HashMap<SessionId, Arc<Activity>>,
    /// Sessions being created: counted against the cap before rmcp has named them.
    creating: usize,
    /// Sessions evicted since the last report, and when that was.
    evicted: u64,
    reported: Option<Instant>,
}

impl State {
    /// The open sessions, in the metrics (`mcpflow_http_sessions_open{transport="streamable"}`).
    fn report_open(&self) {
        mcpflow_telemetry::metrics::http_sessions("streamable", self.open.len());
    }
}

/// One session's requests in flight and when it was last active (milliseconds from the
/// manager's epoch): shared with the response streams, which update it when they end.
#[derive(Default)]
struct Activity {
    busy: AtomicUsize,
    last_ms: AtomicU64,
    /// Who initialized the session (under access control): only they may use it.
    owner: std::sync::OnceLock<String>,
}

/// A request in flight in a session, until its response stream is dropped.
struct Busy {
    activity: Arc<Activity>,
    epoch: Instant,
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.activity
            .last_ms
            .store(millis(self.epoch), Ordering::Relaxed);
        self.activity.busy.fetch_sub(1, Ordering::Relaxed);
    }
}

fn millis(epoch: Instant) -> u64 {
    u64::try_from(epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// A place under the cap for a session being created, given back when dropped: the creation
/// failed or was abandoned, or the session took its own place in the table.
struct Reservation<'a> {
    sessions: &'a BoundedSessions,
}

impl Reservation<'_> {
    /// The session is created: it enters the table (before the reservation is given back, so
    /// it is never uncounted).
    fn fill(self, id: SessionId) {
        let activity = Activity {
            busy: AtomicUsize::new(0),
            last_ms: AtomicU64::new(millis(self.sessions.epoch)),
            owner: std::sync::OnceLock::new(),
        };
        let mut state = self.sessions.lock();
        state.open.insert(id, Arc::new(activity));
        state.report_open();
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        let mut state = self.sessions.lock();
        state.creating = state.creating.saturating_sub(1);
    }
}

impl BoundedSessions {
    pub(crate) fn new(inner: LocalSessionManager, max: usize) -> Self {
        BoundedSessions {
            inner,
            max: max.max(1),
            epoch: Instant::now(),
            state: Mutex::new(State::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn touch(&self, id: &SessionId) {
        if let Some(activity) = self.lock().open.get(id) {
            activity
                .last_ms
                .store(millis(self.epoch), Ordering::Relaxed);
        }
    }

    /// Who initialized session `id`, when access control named them.
    pub(crate) fn owner(&self, id: &str) -> Option<String> {
        self.lock().open.get(id)?.owner.get().cloned()
    }

    /// A request in flight in `id` (none for a session not in the table): the session is not
    /// evicted while the guard lives.
    fn busy(&self, id: &SessionId) -> Option<Busy> {
        let activity = self.lock().open.get(id)?.clone();
        activity.busy.fetch_add(1, Ordering::Relaxed);
        activity
            .last_ms
            .store(millis(self.epoch), Ordering::Relaxed);
        Some(Busy {
            activity,
            epoch: self.epoch,
        })
    }

    /// A safety net before evicting a live session: forgets the sessions of the table that rmcp
    /// no longer holds. Only those already in the table before rmcp's list is read are
    /// considered, so a session created meanwhile (in rmcp's list and ours a moment later) is
    /// never forgotten while it is open.
    async fn forget_closed(&self) {
        let known: Vec<SessionId> = self.lock().open.keys().cloned().collect();
        let gone: Vec<SessionId> = {
            let live = self.inner.sessions.read().await;
            known
                .into_iter()
                .filter(|id| !live.contains_key(id))
                .collect()
        };
        if gone.is_empty() {
            return;
        }
        let mut state = self.lock();
        for id in &gone {
            state.open.remove(id);
        }
        state.report_open();
    }

    /// Takes a place under the cap for a new session; at the cap, takes it from the sessions
    /// idle the longest (none with a request in flight), which are returned to be closed.
    fn reserve(&self) -> (Reservation<'_>, Vec<SessionId>) {
        let mut state = self.lock();
        let excess = (state.open.len() + state.creating + 1).saturating_sub(self.max);
        let mut victims = Vec::new();
        if excess > 0 {
            let mut by_age: Vec<(SessionId, u64)> = state
                .open
                .iter()
                .filter(|(_, a)| a.busy.load(Ordering::Relaxed) == 0)
                .map(|(k, a)| (k.clone(), a.last_ms.load(Ordering::Relaxed)))
                .collect();
            by_age.sort_by_key(|(_, t)| *t);
            for (id, _) in by_age.into_iter().take(excess) {
                state.open.remove(&id);
                victims.push(id);
            }
            state.evicted += victims.len() as u64;
            state.report_open();
            let now = Instant::now();
            if state
                .reported
                .is_none_or(|at| now.duration_since(at) >= EVICT_REPORT_EVERY)
            {
                tracing::warn!(
                    cap = self.max,
                    closed = state.evicted,
                    "HTTP session cap reached: closing the sessions idle longest to make room \
                     (`http.maxSessions`)"
                );
                state.evicted = 0;
                state.reported = Some(now);
            }
        }
        state.creating += 1;
        (Reservation { sessions: self }, victims)
    }

    fn full(&self) -> bool {
        let state = self.lock();
        state.open.len() + state.creating >= self.max
    }
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

impl SessionManager for BoundedSessions {
    type Error = LocalSessionManagerError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        if self.full() {
            self.forget_closed().await;
        }
        let (reservation, victims) = self.reserve();
        for id in victims {
            tracing::debug!(session = %id, "session cap reached: closing the session idle longest");
            let _ = self.inner.close_session(&id).await;
        }
        let (id, transport) = self.inner.create_session().await?;
        reservation.fill(id.clone());
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.touch(id);
        if let Some(owner) = initializer(&message)
            && let Some(activity) = self.lock().open.get(id)
        {
            let _ = activity.owner.set(owner);
        }
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        {
            let mut state = self.lock();
            state.open.remove(id);
            state.report_open();
        }
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let busy = self.busy(id);
        let stream = self.inner.create_stream(id, message).await?;
        Ok(stream.map(move |event| {
            let _in_flight = &busy;
            event
        }))
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.touch(id);
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let busy = self.busy(id);
        let stream = self.inner.resume(id, last_event_id).await?;
        Ok(stream.map(move |event| {
            let _in_flight = &busy;
            event
        }))
    }
}

/// A request in a Streamable HTTP session from another principal than the one that opened it
/// is answered as for an unknown session (404): a session id is not a credential.
pub(crate) async fn owned_only(
    axum::extract::State(sessions): axum::extract::State<Arc<BoundedSessions>>,
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
mod tests {
    use std::collections::HashSet;
    use std::sync::Arc;

    use super::*;

    /// Many initializes at once at the cap: every session rmcp holds is in the table the cap
    /// counts, so none escapes eviction, and no more than the cap stay open. (The table was
    /// once swept against a snapshot of rmcp's sessions taken before the lock, which dropped
    /// sessions created meanwhile: they were never evicted and lived out their idle timeout.)
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_creations_stay_under_the_cap_and_all_are_counted() {
        const MAX: usize = 8;
        let sessions = Arc::new(BoundedSessions::new(LocalSessionManager::default(), MAX));
        let tasks: Vec<_> = (0..32)
            .map(|_| {
                let sessions = sessions.clone();
                tokio::spawn(async move {
                    for _ in 0..100 {
                        let created = sessions.create_session().await;
                        // The transport is dropped: its worker ends, as after a client's
                        // initialize that never comes; the session stays in rmcp's table
                        // until closed, like an idle one.
                        assert!(created.is_ok(), "create_session failed");
                        tokio::task::yield_now().await;
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.expect("creator task");
        }
        let held: HashSet<SessionId> = sessions
            .inner
            .sessions
            .read()
            .await
            .keys()
            .cloned()
            .collect();
        let counted: HashSet<SessionId> = sessions.lock().open.keys().cloned().collect();
        assert_eq!(sessions.lock().creating, 0, "reservations left behind");
        let uncounted = held.difference(&counted).count();
        assert_eq!(
            uncounted,
            0,
            "{uncounted} of the {} sessions rmcp holds escaped the cap's table",
            held.len()
        );
        assert!(
            held.len() <= MAX,
            "{} sessions open after 3,200 creations with a cap of {MAX}",
            held.len()
        );
    }
}
