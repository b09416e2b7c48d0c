//! rmcp's in-memory session manager with a cap: past `max_sessions`, the session idle the
//! longest is closed to make room, so clients that open sessions and walk away (or an attacker
//! who opens thousands) cannot grow the server's memory without bound. Idle sessions also
//! expire on their own after the configured timeout (rmcp's `keep_alive`).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId};

pub(crate) struct BoundedSessions {
    inner: LocalSessionManager,
    max: usize,
    /// When each open session last saw a request.
    last_used: Mutex<HashMap<SessionId, Instant>>,
}

impl BoundedSessions {
    pub(crate) fn new(inner: LocalSessionManager, max: usize) -> Self {
        BoundedSessions {
            inner,
            max,
            last_used: Mutex::new(HashMap::new()),
        }
    }

    fn touch(&self, id: &SessionId) {
        let mut map = self.last_used.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(t) = map.get_mut(id) {
            *t = Instant::now();
        }
    }

    /// Forgets sessions rmcp closed on its own (idle timeout, worker ended), then, while at the
    /// cap, closes the one idle the longest.
    async fn make_room(&self) {
        let live: std::collections::HashSet<SessionId> =
            self.inner.sessions.read().await.keys().cloned().collect();
        let victims = {
            let mut map = self.last_used.lock().unwrap_or_else(|e| e.into_inner());
            map.retain(|id, _| live.contains(id));
            let mut victims = Vec::new();
            if map.len() >= self.max {
                let mut by_age: Vec<(SessionId, Instant)> =
                    map.iter().map(|(k, v)| (k.clone(), *v)).collect();
                by_age.sort_by_key(|(_, t)| *t);
                let excess = map.len() + 1 - self.max;
                for (id, _) in by_age.into_iter().take(excess) {
                    map.remove(&id);
                    victims.push(id);
                }
            }
            victims
        };
        for id in victims {
            tracing::info!(session = %id, "session cap reached: closing the session idle longest");
            let _ = self.inner.close_session(&id).await;
        }
    }
}

impl SessionManager for BoundedSessions {
    type Error = LocalSessionManagerError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        self.make_room().await;
        let (id, transport) = self.inner.create_session().await?;
        let mut map = self.last_used.lock().unwrap_or_else(|e| e.into_inner());
        map.insert(id.clone(), Instant::now());
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.touch(id);
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        {
            let mut map = self.last_used.lock().unwrap_or_else(|e| e.into_inner());
            map.remove(id);
        }
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        self.inner.create_stream(id, message).await
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
        self.touch(id);
        self.inner.resume(id, last_event_id).await
    }
}
