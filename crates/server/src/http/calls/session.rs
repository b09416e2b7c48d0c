//! Calls in a Streamable HTTP session (2025-11-25 and the eras before): run beside the
//! session's serve loop with its peer (see `sessions::session`), or, before the session's
//! `initialize` was handled, handed to our session table as rmcp would hand them (the HTTP
//! request's parts in the request's extensions); their stream framed as rmcp frames it.

use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use futures::{Stream, StreamExt};
use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, GetExtensions, GetMeta, JsonRpcRequest, ProtocolVersion,
};
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId};

use super::super::guard::rpc_error;
use super::super::sessions::{Direct, SessionError};
use super::{Calls, PROTOCOL_VERSION, SESSION_ID, event, one, sse_response};
use crate::live::LiveServer;

/// A session's request of an era before 2026-07-28, whose version header (if any) rmcp knows;
/// without one rmcp assumes 2025-03-26.
pub(super) fn headers_fit(headers: &HeaderMap) -> bool {
    if one(headers, &SESSION_ID).is_none() {
        return false;
    }
    let mut versions = headers.get_all(&PROTOCOL_VERSION).iter();
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
    let Some(id) = one(&parts.headers, &SESSION_ID) else {
        return Err(Box::new(parts));
    };
    let id: SessionId = id.into();
    let sessions = &*calls.sessions;
    if call.request.get_meta().protocol_version().is_some()
        || !sessions.has_session(&id).await.unwrap_or(false)
    {
        return Err(Box::new(parts));
    }
    match sessions.call(&id, &call) {
        Ok(Some(direct)) => return Ok(respond(run(&calls.server, call, parts, direct), calls)),
        Ok(None) => {}
        Err(e) => return Ok(refused(&id, e)),
    }
    call.request.extensions_mut().insert(parts);
    match sessions
        .create_stream(&id, ClientJsonRpcMessage::Request(call))
        .await
    {
        Ok(stream) => Ok(respond(stream, calls)),
        Err(e) => Ok(refused(&id, e)),
    }
}

/// The session could not take the call: rmcp's statuses and words.
fn refused(id: &SessionId, e: SessionError) -> Response {
    match e {
        // Closed since it was looked up: as rmcp answers for a session it does not hold.
        SessionError::NotFound | SessionError::Closed => {
            rpc_error(StatusCode::NOT_FOUND, -32001, "session not found")
        }
        e @ SessionError::Backlog(_) => {
            rpc_error(StatusCode::SERVICE_UNAVAILABLE, -32000, &e.to_string())
        }
        e => {
            tracing::debug!("a call in session {id} could not start: {e}");
            rpc_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                -32603,
                &format!("the session could not take the call: {e}"),
            )
        }
    }
}

/// Runs the handler as the session's serve loop would (a task of its own, the context rmcp
/// builds, with the session's peer and a cancellation the session controls), the answer
/// going to the call's stream; returns that stream.
fn run(
    server: &LiveServer,
    call: JsonRpcRequest<ClientRequest>,
    parts: Parts,
    direct: Direct,
) -> impl Stream<Item = ServerSseMessage> + Send + 'static {
    let Direct {
        reader,
        peer,
        cancel,
        answer,
    } = direct;
    super::spawn_handler(
        server,
        call,
        peer,
        cancel.child_token(),
        parts,
        None,
        move |message| answer.send(message),
    );
    reader
}

fn respond(
    stream: impl Stream<Item = ServerSseMessage> + Send + 'static,
    calls: &Calls,
) -> Response {
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
    sse_response(events, calls.shutdown.clone())
}
