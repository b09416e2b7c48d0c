//! 2026-07-28 stateless calls: the handler run as rmcp's serve loop runs one (a task of its
//! own, the context rmcp builds, cancelled when the client goes away before the answer),
//! answered as rmcp answers a stateless request: the answer as JSON when it comes first, else
//! an SSE stream of everything the handler sends.

use std::sync::Arc;

use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use mcpflow_gateway::notify::ReplyTo;
use rmcp::ServerHandler;
use rmcp::model::{
    ClientRequest, ErrorCode, GetMeta, JsonRpcRequest, ProtocolVersion, ServerJsonRpcMessage,
};
use serde_json::Value;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::reply::Reply;
use super::shared::Shared;
use super::{METHOD, NAME, PROTOCOL_VERSION, event, one, sse_response};
use crate::live::LiveServer;

pub(crate) struct Stateless {
    server: LiveServer,
    shared: Shared,
}

/// The header checks that need no body: this protocol, `Mcp-Method` and a plain `Mcp-Name`
/// (rmcp decodes a Base64 one), no `Mcp-Param-*` to compare with the arguments.
pub(super) fn headers_fit(headers: &HeaderMap) -> bool {
    one(headers, &PROTOCOL_VERSION) == Some(ProtocolVersion::V_2026_07_28.as_str())
        && one(headers, &METHOD) == Some("tools/call")
        && one(headers, &NAME).is_some_and(|name| !name.starts_with("=?base64?"))
        && !headers
            .keys()
            .any(|name| name.as_str().starts_with("mcp-param-"))
}

impl Stateless {
    pub(super) fn new(server: LiveServer, shutdown: CancellationToken) -> Stateless {
        Stateless {
            shared: Shared::start(server.clone(), shutdown),
            server,
        }
    }

    /// Serves `call`, or hands `parts` back when rmcp must judge it.
    pub(super) async fn serve(
        &self,
        call: JsonRpcRequest<ClientRequest>,
        parts: Parts,
        shutdown: &CancellationToken,
    ) -> Result<Response, Box<Parts>> {
        if !self.call_fits(&parts.headers, &call) {
            return Err(Box::new(parts));
        }
        Ok(self.answer(call, parts, shutdown).await)
    }

    /// The checks that need the body: `Mcp-Name` is the tool's name, `_meta` names this
    /// protocol and the client's capabilities, and the tool asks for no `Mcp-Param-*` header.
    fn call_fits(&self, headers: &HeaderMap, call: &JsonRpcRequest<ClientRequest>) -> bool {
        let ClientRequest::CallToolRequest(request) = &call.request else {
            return false;
        };
        let name = request.params.name.as_ref();
        if one(headers, &NAME) != Some(name) {
            return false;
        }
        let meta = call.request.get_meta();
        if meta.protocol_version() != Some(ProtocolVersion::V_2026_07_28)
            || !meta
                .missing_required_keys(&ProtocolVersion::V_2026_07_28)
                .is_empty()
        {
            return false;
        }
        !self
            .server
            .get_tool(name)
            .is_some_and(|tool| names_param_headers(&tool.input_schema))
    }

    async fn answer(
        &self,
        call: JsonRpcRequest<ClientRequest>,
        parts: Parts,
        shutdown: &CancellationToken,
    ) -> Response {
        let reply = Arc::new(Reply::default());
        let request_ct = shutdown.child_token();
        let answered = Answered(reply.clone());
        super::spawn_handler(
            &self.server,
            call,
            self.shared.peer(),
            request_ct.child_token(),
            parts,
            Some(ReplyTo(reply.clone())),
            move |message| answered.send(message),
        );
        // A client gone before the first message cancels the handler, as rmcp's path does.
        let disconnect = request_ct.drop_guard();
        let Some(first) = reply.next().await else {
            disconnect.disarm();
            return super::super::guard::rpc_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                -32603,
                "the tool call ended without an answer",
            );
        };
        if is_answer(&first) {
            disconnect.disarm();
            reply.close();
            return json_answer(&first);
        }
        // The handler streams: the rest follows on SSE; the stream dropped before the answer
        // (the client went away) cancels the handler.
        let streaming = Streaming {
            reply,
            disconnect: Some(disconnect),
        };
        let rest = futures::stream::unfold(streaming, |mut streaming| async move {
            let message = streaming.reply.next().await?;
            if is_answer(&message)
                && let Some(guard) = streaming.disconnect.take()
            {
                guard.disarm();
            }
            Some((message_event(&message), streaming))
        });
        let events = futures::stream::once(std::future::ready(message_event(&first))).chain(rest);
        sse_response(events, shutdown.clone())
    }
}

fn is_answer(message: &ServerJsonRpcMessage) -> bool {
    matches!(
        message,
        ServerJsonRpcMessage::Response(_) | ServerJsonRpcMessage::Error(_)
    )
}

/// Sends the handler's answer; dropped without one (the handler panicked), ends the reply.
struct Answered(Arc<Reply>);

impl Answered {
    fn send(self, message: ServerJsonRpcMessage) {
        self.0.finish(Some(message));
    }
}

impl Drop for Answered {
    fn drop(&mut self) {
        // After `send`, a no-op.
        self.0.finish(None);
    }
}

/// What is left of a streamed reply, owned by the response body.
struct Streaming {
    reply: Arc<Reply>,
    /// Cancels the handler if dropped armed: the body went before the answer was sent.
    disconnect: Option<DropGuard>,
}

impl Drop for Streaming {
    fn drop(&mut self) {
        self.reply.close();
    }
}

/// The HTTP status rmcp gives a stateless answer: errors of the protocol's own are 400, an
/// unknown method 404, anything else (a tool's error included) 200.
pub(super) fn status_of(message: &ServerJsonRpcMessage) -> StatusCode {
    let ServerJsonRpcMessage::Error(error) = message else {
        return StatusCode::OK;
    };
    match error.error.code {
        ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
        | ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
        | ErrorCode::HEADER_MISMATCH => StatusCode::BAD_REQUEST,
        ErrorCode::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        _ => StatusCode::OK,
    }
}

fn json_answer(message: &ServerJsonRpcMessage) -> Response {
    match serde_json::to_vec(message) {
        Ok(body) => (
            status_of(message),
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            body,
        )
            .into_response(),
        Err(e) => super::super::guard::rpc_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            -32603,
            &format!("the answer could not be written as JSON: {e}"),
        ),
    }
}

/// One message as an SSE event, without an id: a stateless stream cannot be resumed.
fn message_event(message: &ServerJsonRpcMessage) -> axum::body::Bytes {
    match serde_json::to_vec(message) {
        Ok(json) => event(Some(&json), None, None),
        Err(e) => {
            tracing::warn!("a message to a stateless client could not be written: {e}");
            axum::body::Bytes::from_static(b":\n\n")
        }
    }
}

/// Whether a tool's input schema annotates anything with `x-mcp-header` (SEP-2243), whose
/// header rmcp checks against the argument.
pub(super) fn names_param_headers(schema: &serde_json::Map<String, Value>) -> bool {
    fn within(value: &Value) -> bool {
        match value {
            Value::Object(map) => names_param_headers(map),
            Value::Array(items) => items.iter().any(within),
            _ => false,
        }
    }
    schema
        .iter()
        .any(|(key, value)| key == "x-mcp-header" || within(value))
}
