//! rmcp's reqwest client for Streamable HTTP, with one correction: a server that refuses a
//! request in a session with an error it cannot tie to the request is treated as having
//! forgotten the session, so rmcp re-initializes and retries as it does for a 404.
//!
//! Servers built from the TypeScript SDK's examples (server-everything among them) answer an
//! unknown `Mcp-Session-Id` with HTTP 400 and a JSON-RPC error without an `id`. rmcp would hand
//! that error to nobody (it correlates errors by id) and the request would hang until its
//! timeout.

use std::collections::HashMap;
use std::sync::Arc;

use futures::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};
use sse_stream::Sse;

#[derive(Clone)]
pub(crate) struct SessionHttpClient(pub reqwest::Client);

type PostResult = Result<StreamableHttpPostResponse, StreamableHttpError<reqwest::Error>>;

impl StreamableHttpClient for SessionHttpClient {
    type Error = reqwest::Error;

    fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = PostResult> + Send + '_ {
        let refusable = refusable(&message, session_id.as_ref());
        async move {
            let response = self
                .0
                .post_message(uri, message, session_id, auth_header, custom_headers)
                .await;
            correct(refusable, response)
        }
    }

    fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> impl Future<Output = PostResult> + Send + '_ {
        let refusable = refusable(&message, session_id.as_ref());
        async move {
            let response = self
                .0
                .post_message_with_max_sse_event_size(
                    uri,
                    message,
                    session_id,
                    auth_header,
                    custom_headers,
                    max_sse_event_size,
                )
                .await;
            correct(refusable, response)
        }
    }

    fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = Result<(), StreamableHttpError<Self::Error>>> + Send + '_ {
        self.0
            .delete_session(uri, session_id, auth_header, custom_headers)
    }

    fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<
        Output = Result<
            BoxStream<'static, Result<Sse, SseError>>,
            StreamableHttpError<Self::Error>,
        >,
    > + Send
    + '_ {
        self.0
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
    }

    fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> impl Future<
        Output = Result<
            BoxStream<'static, Result<Sse, SseError>>,
            StreamableHttpError<Self::Error>,
        >,
    > + Send
    + '_ {
        self.0.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            max_sse_event_size,
        )
    }
}

/// Only a request sent within a session can be refused for its session.
fn refusable(message: &ClientJsonRpcMessage, session_id: Option<&Arc<str>>) -> bool {
    session_id.is_some() && matches!(message, ClientJsonRpcMessage::Request(_))
}

fn correct(refusable: bool, response: PostResult) -> PostResult {
    if !refusable {
        return response;
    }
    match response {
        Ok(StreamableHttpPostResponse::Json(ServerJsonRpcMessage::Error(error), _))
            if error.id.is_none() =>
        {
            tracing::debug!(
                code = error.error.code.0,
                message = %error.error.message,
                "upstream refused a request of our session without naming it; re-initializing"
            );
            Err(StreamableHttpError::SessionExpired)
        }
        other => other,
    }
}
