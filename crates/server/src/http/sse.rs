//! Legacy HTTP+SSE transport (MCP 2024-11-05), which rmcp no longer ships: `GET /sse` opens an
//! event stream whose first event (`endpoint`) names where to POST, `POST /message?sessionId=`
//! feeds that session, and every answer comes back on the stream. Each stream is one MCP
//! session served over in-process channels; closing the stream ends the session.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::channel::mpsc;
use futures::{SinkExt, StreamExt};
use rmcp::ServiceExt;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use tokio_util::sync::CancellationToken;

use super::guard::rpc_error;
use crate::live::LiveServer;
use mcpflow_auth::{Credential, Principal};
use rmcp::model::GetExtensions;

/// Messages a session may have queued towards the server before a POST waits.
const INBOX: usize = 64;
/// A comment line this often keeps proxies from closing a quiet stream.
pub(super) const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// A session's inbox, and who opened it: only that principal may post into it.
type Inbox = (mpsc::Sender<ClientJsonRpcMessage>, Option<Principal>);

pub(crate) struct LegacySse {
    server: LiveServer,
    sessions: Mutex<HashMap<String, Inbox>>,
    max_sessions: usize,
    max_body_bytes: usize,
    /// Cancelled at shutdown: every session ends and its stream closes.
    shutdown: CancellationToken,
}

impl LegacySse {
    pub(crate) fn new(
        server: LiveServer,
        max_sessions: usize,
        max_body_bytes: usize,
        shutdown: CancellationToken,
    ) -> Self {
        LegacySse {
            server,
            sessions: Mutex::new(HashMap::new()),
            max_sessions,
            max_body_bytes,
            shutdown,
        }
    }

    fn sessions(&self) -> std::sync::MutexGuard<'_, HashMap<String, Inbox>> {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Removes the session when its stream is dropped (client gone, or shutdown).
struct SessionGuard {
    state: Arc<LegacySse>,
    id: String,
    ct: CancellationToken,
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        self.ct.cancel();
        let mut sessions = self.state.sessions();
        sessions.remove(&self.id);
        mcpflow_telemetry::metrics::http_sessions("sse", sessions.len());
        drop(sessions);
        tracing::debug!(session = %self.id, "legacy SSE session closed");
    }
}

/// `GET /sse`: a new session and its event stream.
pub(crate) async fn open(State(state): State<Arc<LegacySse>>, request: Request) -> Response {
    if state.sessions().len() >= state.max_sessions {
        return rpc_error(
            StatusCode::SERVICE_UNAVAILABLE,
            -32000,
            "too many open SSE sessions; retry later",
        );
    }
    let id = super::new_session_id();
    let (inbox_tx, inbox_rx) = mpsc::channel::<ClientJsonRpcMessage>(INBOX);
    let (outbox_tx, outbox_rx) = mpsc::channel::<ServerJsonRpcMessage>(INBOX);
    let open = {
        let mut sessions = state.sessions();
        let opener = request.extensions().get::<Principal>().cloned();
        sessions.insert(id.clone(), (inbox_tx, opener));
        sessions.len()
    };
    mcpflow_telemetry::metrics::http_sessions("sse", open);
    let ct = state.shutdown.child_token();
    let server = state.server.clone();
    let session_ct = ct.clone();
    let session_id = id.clone();
    tokio::spawn(async move {
        // The handshake waits for the client's `initialize`, which arrives by POST.
        match server
            .serve_with_ct((outbox_tx, inbox_rx), session_ct.clone())
            .await
        {
            Ok(running) => {
                let _ = running.waiting().await;
            }
            Err(e) => tracing::debug!(
                session = %session_id,
                "legacy SSE session ended before initialize: {e}"
            ),
        }
        // The service is gone: close the stream too.
        session_ct.cancel();
    });
    // Relative to where /sse is mounted: `/message` beside it.
    let base = request
        .uri()
        .path()
        .strip_suffix("/sse")
        .unwrap_or("")
        .to_owned();
    let endpoint = format!("event: endpoint\ndata: {base}/message?sessionId={id}\n\n");
    let guard = SessionGuard {
        state: state.clone(),
        id,
        ct: ct.clone(),
    };
    let messages = outbox_rx.map(|message| {
        let json = serde_json::to_string(&message).unwrap_or_default();
        Bytes::from(format!("event: message\ndata: {json}\n\n"))
    });
    let keep_alive = futures::stream::unfold((), |()| async {
        tokio::time::sleep(KEEP_ALIVE).await;
        Some((Bytes::from_static(b": keep-alive\n\n"), ()))
    });
    let events = futures::stream::select(messages, keep_alive)
        // Ends when the session does: the server's side of the channel closes, or shutdown.
        .take_until(ct.cancelled_owned());
    let body = futures::stream::once(async move { Bytes::from(endpoint) })
        .chain(events)
        .map(move |bytes| {
            let _session = &guard;
            Ok::<_, Infallible>(bytes)
        });
    let mut response = Response::new(Body::from_stream(body));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// `POST /message?sessionId=…`: one JSON-RPC message into the session; 202 when queued.
pub(crate) async fn post(State(state): State<Arc<LegacySse>>, request: Request) -> Response {
    let Some(id) = request.uri().query().and_then(|q| {
        q.split('&')
            .find_map(|kv| kv.strip_prefix("sessionId="))
            .map(str::to_owned)
    }) else {
        return rpc_error(
            StatusCode::BAD_REQUEST,
            -32600,
            "missing sessionId query parameter",
        );
    };
    let Some((mut inbox, opener)) = state.sessions().get(&id).cloned() else {
        return rpc_error(StatusCode::NOT_FOUND, -32001, "unknown or closed session");
    };
    // Another principal's session is as unknown to this caller as a closed one.
    let poster = request.extensions().get::<Principal>().cloned();
    let credential = request.extensions().get::<Credential>().cloned();
    if let (Some(opener), Some(poster)) = (&opener, &poster)
        && opener.subject() != poster.subject()
    {
        return rpc_error(StatusCode::NOT_FOUND, -32001, "unknown or closed session");
    }
    let body = match axum::body::to_bytes(request.into_body(), state.max_body_bytes).await {
        Ok(b) => b,
        Err(_) => {
            return rpc_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                -32600,
                &format!("request body larger than {} bytes", state.max_body_bytes),
            );
        }
    };
    let mut message: ClientJsonRpcMessage = match serde_json::from_slice(&body) {
        Ok(m) => m,
        Err(e) => {
            let code = if serde_json::from_slice::<serde_json::Value>(&body).is_ok() {
                -32600
            } else {
                -32700
            };
            return rpc_error(
                StatusCode::BAD_REQUEST,
                code,
                &format!("invalid JSON-RPC message: {e}"),
            );
        }
    };
    // The handler reads the caller from the request, as rmcp's Streamable HTTP hands it over.
    if let (ClientJsonRpcMessage::Request(r), Some(p)) = (&mut message, poster) {
        r.request.extensions_mut().insert(p);
        if let Some(credential) = credential {
            r.request.extensions_mut().insert(credential);
        }
    }
    if inbox.send(message).await.is_err() {
        return rpc_error(StatusCode::NOT_FOUND, -32001, "session closed");
    }
    (StatusCode::ACCEPTED, "Accepted").into_response()
}
