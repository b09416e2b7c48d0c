//! Calls in a Streamable HTTP session (2025-11-25 and the eras before): handed to our session
//! table as rmcp would hand them (the HTTP request's parts in the request's extensions), their
//! stream framed as rmcp frames it.

use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use futures::StreamExt;
use rmcp::model::ProtocolVersion;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, GetExtensions, GetMeta, JsonRpcRequest};
use rmcp::transport::streamable_http_server::SessionManager;

use super::super::guard::rpc_error;
use super::super::sessions::SessionError;
use super::{Calls, event, one, sse_response};

/// A session's request of an era before 2026-07-28, whose version header (if any) rmcp knows;
/// without one rmcp assumes 2025-03-26.
pub(super) fn headers_fit(headers: &HeaderMap) -> bool {
    if one(headers, "mcp-session-id").is_none() {
        return false;
    }
    let mut versions = headers.get_all("mcp-protocol-version").iter();
    match (versions.next(), versions.next()) {
        (None, _) => true,
        (Some(version), None) => version.to_str().is_ok_and(|v| {
            v < ProtocolVersion::V_2026_07_28.as_str()
                && ProtocolVersion::KNOWN_VERSIONS
                    .iter()
                    .any(|k| k.as_str() == v)
        }),
        (Some(_), Some(_)) => false,
    }
}

/// Serves `call` in its session, or hands `parts` back when rmcp must judge it: a request
/// naming its own protocol version in `_meta`, or a session this table does not hold (rmcp
/// answers 404).
pub(super) async fn serve(
    calls: &Calls,
    mut call: JsonRpcRequest<ClientRequest>,
    parts: Parts,
) -> Result<Response, Box<Parts>> {
    let Some(id) = one(&parts.headers, "mcp-session-id") else {
        return Err(Box::new(parts));
    };
    let id: rmcp::transport::streamable_http_server::session::SessionId = id.into();
    let sessions = &*calls.sessions;
    if call.request.get_meta().protocol_version().is_some()
        || !sessions.has_session(&id).await.unwrap_or(false)
    {
        return Err(Box::new(parts));
    }
    call.request.extensions_mut().insert(parts);
    let stream = match sessions
        .create_stream(&id, ClientJsonRpcMessage::Request(call))
        .await
    {
        Ok(stream) => stream,
        // Closed since it was looked up: as rmcp answers for a session it does not hold.
        Err(SessionError::NotFound | SessionError::Closed) => {
            return Ok(rpc_error(
                StatusCode::NOT_FOUND,
                -32001,
                "session not found",
            ));
        }
        Err(e @ SessionError::Backlog(_)) => {
            return Ok(rpc_error(
                StatusCode::SERVICE_UNAVAILABLE,
                -32000,
                &e.to_string(),
            ));
        }
        Err(e) => {
            tracing::debug!("a call in session {id} could not start: {e}");
            return Ok(rpc_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                -32603,
                &format!("the session could not take the call: {e}"),
            ));
        }
    };
    let events = stream.map(|sse| {
        let json = sse.message.as_deref().map(serde_json::to_vec);
        match json {
            Some(Err(e)) => {
                tracing::warn!("a message to a session's client could not be written: {e}");
                axum::body::Bytes::from_static(b":\n\n")
            }
            Some(Ok(json)) => event(Some(&json), sse.event_id.as_deref(), sse.retry),
            None => event(None, sse.event_id.as_deref(), sse.retry),
        }
    });
    Ok(sse_response(events, calls.shutdown.clone()))
}
