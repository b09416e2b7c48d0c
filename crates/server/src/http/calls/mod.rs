//! `tools/call` POSTs on `/mcp` served without rmcp's reading of them, when rmcp would accept
//! them as written.
//!
//! rmcp reads every POSTed body as its untagged `JsonRpcMessage` (serde buffers it and tries
//! each variant in turn, every failure an allocated error), and serves each 2026-07-28
//! stateless request by starting a whole MCP service for it (a serve-loop task, a task waiting
//! on it, two channels, the futures of both moved as they start): most of such a call's
//! instructions. In front of rmcp's `StreamableHttpService`, this middleware takes the
//! `tools/call`s whose every check rmcp makes would pass as written, reads them in one pass
//! (`tool_call`), and serves them:
//! - in a session (2025-11-25 and before: `session`), by running the handler beside the
//!   session's serve loop with the session's peer, its answer routed by our session table
//!   to the call's stream;
//! - statelessly (2026-07-28: `stateless`), by running the handler as rmcp's serve loop runs
//!   one, around the peer of one service shared by all such requests (`shared`), what it
//!   sends for the request coming back through the request's own `reply`.
//!
//! Every other request goes to rmcp unchanged (the body the guard read, handed back): what
//! rmcp refuses, rmcp words.

mod behind;
mod reply;
mod session;
mod shared;
mod stateless;
#[cfg(test)]
mod tests;

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::Stream;
use mcpflow_gateway::notify::ReplyTo;
use mcpflow_model::future::boxed;
use rmcp::RoleServer;
use rmcp::model::{
    ClientRequest, GetExtensions, GetMeta, JsonRpcMessage, JsonRpcRequest, ServerJsonRpcMessage,
};
use rmcp::service::{Peer, RequestContext, Service};
use tokio_util::sync::CancellationToken;

use super::sessions::Sessions;
use crate::live::LiveServer;

pub(crate) use behind::Behind;
pub(crate) use stateless::Stateless;

pub(crate) struct Calls {
    /// Runs the calls of sessions whose peer is known (`session`).
    server: LiveServer,
    stateless: Stateless,
    sessions: Arc<Sessions>,
    max_body_bytes: usize,
    /// Cancelled when the sessions end at shutdown: streams close, stateless handlers stop.
    shutdown: CancellationToken,
}

impl Calls {
    pub(crate) fn new(
        server: LiveServer,
        sessions: Arc<Sessions>,
        max_body_bytes: usize,
        shutdown: CancellationToken,
    ) -> Arc<Self> {
        Arc::new(Calls {
            stateless: Stateless::new(server.clone(), shutdown.clone()),
            server,
            sessions,
            max_body_bytes,
            shutdown,
        })
    }
}

/// Middleware on `/mcp`: answers the `tools/call`s it can, passes the rest on.
pub(crate) async fn serve(
    State(calls): State<Arc<Calls>>,
    request: Request,
    next: Next,
) -> Response {
    let headers = request.headers();
    let in_session = headers.contains_key(&SESSION_ID);
    let fits = request.method() == Method::POST
        && posts_json(headers)
        && if in_session {
            session::headers_fit(headers)
        } else {
            stateless::headers_fit(headers)
        };
    if !fits {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    // The guard in front has read the body (bounded, in time): this takes it back uncopied.
    let Ok(bytes) = axum::body::to_bytes(body, calls.max_body_bytes).await else {
        return super::guard::rpc_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            -32600,
            &format!("request body larger than {} bytes", calls.max_body_bytes),
        );
    };
    let Some(JsonRpcMessage::Request(call)) = crate::tool_call::tool_call(&bytes) else {
        return next
            .run(Request::from_parts(parts, Body::from(bytes)))
            .await;
    };
    let served = if in_session {
        session::serve(&calls, call, parts).await
    } else {
        calls.stateless.serve(call, parts, &calls.shutdown).await
    };
    match served {
        Ok(response) => response,
        Err(parts) => {
            next.run(Request::from_parts(*parts, Body::from(bytes)))
                .await
        }
    }
}

/// Runs `call`'s handler as rmcp's serve loop runs one: a task of its own, the context rmcp
/// builds (`_meta`, with the progress token, and the extensions moved from the request to the
/// context, the HTTP request's parts and `reply_to` joining them), cancelled by `ct`; the
/// answer (or error) goes to `answered`, dropped unsent if the handler panics.
fn spawn_handler(
    server: &LiveServer,
    call: JsonRpcRequest<ClientRequest>,
    peer: Peer<RoleServer>,
    ct: CancellationToken,
    parts: Parts,
    reply_to: Option<ReplyTo>,
    answered: impl FnOnce(ServerJsonRpcMessage) + Send + 'static,
) {
    let JsonRpcRequest {
        id, mut request, ..
    } = call;
    let mut context = RequestContext::new(id.clone(), peer);
    context.ct = ct;
    context.meta = std::mem::take(request.get_meta_mut());
    context.extensions = std::mem::take(request.extensions_mut());
    context.extensions.insert(parts);
    if let Some(reply_to) = reply_to {
        context.extensions.insert(reply_to);
    }
    let server = server.clone();
    // The handler's future (sized by its largest method) is built in a box, so the task
    // tokio copies in, and writes the answer over, is a few words.
    let handling = boxed(|| async move { server.handle_request(request, context).await });
    tokio::spawn(async move {
        let message = match handling.await {
            Ok(result) => ServerJsonRpcMessage::response(result, id),
            Err(error) => ServerJsonRpcMessage::error(error, Some(id)),
        };
        answered(message);
    });
}

/// A JSON body, and an `Accept` that names both media types plainly. Anything rmcp would have
/// to weigh (parameters, quality values, quoting) is left to rmcp.
fn posts_json(headers: &HeaderMap) -> bool {
    let json_body = one(headers, &header::CONTENT_TYPE).is_some_and(|v| {
        let essence = v.split_once(';').map_or(v, |(essence, _)| essence);
        essence.trim().eq_ignore_ascii_case("application/json")
    });
    let (mut json, mut sse) = (false, false);
    for value in headers.get_all(header::ACCEPT) {
        let Ok(value) = value.to_str() else {
            return false;
        };
        if value.contains([';', '"']) {
            return false;
        }
        for media in value.split(',') {
            let media = media.trim();
            json |= media.eq_ignore_ascii_case("application/json");
            sse |= media.eq_ignore_ascii_case("text/event-stream");
        }
    }
    json_body && json && sse
}

/// The MCP headers these checks read, as names parsed once: a lookup by `&str` parses and
/// classifies the name on every call (~2 k instructions per request over the checks).
const SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
const METHOD: HeaderName = HeaderName::from_static("mcp-method");
const NAME: HeaderName = HeaderName::from_static("mcp-name");

/// The header's only value, if it has exactly one and it is text.
fn one<'a>(headers: &'a HeaderMap, name: &HeaderName) -> Option<&'a str> {
    let mut values = headers.get_all(name).iter();
    let value = values.next()?;
    if values.next().is_some() {
        return None;
    }
    value.to_str().ok()
}

/// One SSE event, framed as rmcp frames it: `data`, then `id` and `retry` when present.
fn event(data: Option<&[u8]>, id: Option<&str>, retry: Option<Duration>) -> Bytes {
    let mut bytes = Vec::with_capacity(data.map_or(0, <[u8]>::len) + 32);
    bytes.extend_from_slice(b"data: ");
    bytes.extend_from_slice(data.unwrap_or_default());
    bytes.push(b'\n');
    if let Some(id) = id {
        bytes.extend_from_slice(b"id: ");
        bytes.extend_from_slice(id.as_bytes());
        bytes.push(b'\n');
    }
    if let Some(retry) = retry {
        bytes.extend_from_slice(format!("retry: {}\n", retry.as_millis()).as_bytes());
    }
    bytes.push(b'\n');
    Bytes::from(bytes)
}

/// `events` as an SSE response, with a keep-alive comment when quiet, ended at shutdown.
fn sse_response(
    events: impl Stream<Item = Bytes> + Send + 'static,
    shutdown: CancellationToken,
) -> Response {
    let events = Box::pin(events);
    let body = futures::stream::unfold(Some((events, shutdown)), |state| async move {
        let (mut events, shutdown) = state?;
        tokio::select! {
            event = futures::StreamExt::next(&mut events) => {
                let event = event?;
                Some((Ok::<_, Infallible>(event), Some((events, shutdown))))
            }
            () = tokio::time::sleep(super::sse::KEEP_ALIVE) => {
                Some((Ok(Bytes::from_static(b":\n\n")), Some((events, shutdown))))
            }
            () = shutdown.cancelled() => None,
        }
    });
    let mut response = Body::from_stream(body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}
