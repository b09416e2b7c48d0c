//! rmcp's reqwest client for Streamable HTTP, with two corrections.
//!
//! A server that refuses a request in a session with an error it cannot tie to the request is
//! treated as having forgotten the session, so rmcp re-initializes and retries as it does for a
//! 404. Servers built from the TypeScript SDK's examples (server-everything among them) answer
//! an unknown `Mcp-Session-Id` with HTTP 400 and a JSON-RPC error without an `id`. rmcp would
//! hand that error to nobody (it correlates errors by id) and the request would hang until its
//! timeout.
//!
//! And the handshake can wait until the session's standalone GET stream is open
//! ([`StandaloneStream`]): rmcp opens it on a task of its own after `initialize`, so a first
//! request could otherwise reach the server before it, and whatever the server sends on that
//! stream in reaction (a notification, or an answer it chose to route there) would find no
//! stream to travel on.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};
use sse_stream::Sse;

use crate::identity::CallerHeaders;

#[derive(Clone)]
pub(crate) struct SessionHttpClient {
    http: reqwest::Client,
    standalone: Arc<StandaloneStream>,
}

/// Whether the session's standalone GET stream has been asked for and answered (opened, or
/// refused: a server may not offer one).
#[derive(Default)]
pub(crate) struct StandaloneStream {
    /// The `initialize` answer carried an `Mcp-Session-Id`: only then does rmcp open the stream.
    in_session: AtomicBool,
    answered: tokio::sync::Notify,
    done: AtomicBool,
}

impl StandaloneStream {
    /// `get`, marking the stream answered when it resolves, if it is the standalone stream's.
    async fn answered_by<T>(
        standalone: Option<Arc<StandaloneStream>>,
        get: impl Future<Output = T>,
    ) -> T {
        let result = get.await;
        if let Some(standalone) = standalone {
            standalone.done.store(true, Ordering::Release);
            standalone.answered.notify_waiters();
        }
        result
    }

    /// Waits until the standalone stream's GET is answered, at most `limit`; returns at once
    /// when the server opened no session (then there is no such stream).
    pub(crate) async fn wait(&self, limit: Duration) {
        if !self.in_session.load(Ordering::Acquire) {
            return;
        }
        let answered = self.answered.notified();
        if self.done.load(Ordering::Acquire) {
            return;
        }
        if tokio::time::timeout(limit, answered).await.is_err() {
            tracing::debug!(
                ?limit,
                "the upstream did not answer the session's GET stream in time; going on"
            );
        }
    }
}

impl SessionHttpClient {
    pub(crate) fn new(http: reqwest::Client) -> SessionHttpClient {
        SessionHttpClient {
            http,
            standalone: Arc::default(),
        }
    }

    pub(crate) fn standalone(&self) -> Arc<StandaloneStream> {
        self.standalone.clone()
    }

    /// The standalone stream's state when a GET opens it (rather than resuming a stream after
    /// `last_event_id`).
    fn standalone_if(&self, last_event_id: Option<&str>) -> Option<Arc<StandaloneStream>> {
        last_event_id.is_none().then(|| self.standalone.clone())
    }

    /// Called with the answer to a POST sent without a session (the `initialize`).
    fn note_initialize_answer(&self, response: &PostResult) {
        if let Ok(
            StreamableHttpPostResponse::Json(_, Some(_))
            | StreamableHttpPostResponse::Sse(_, Some(_)),
        ) = response
        {
            self.standalone.in_session.store(true, Ordering::Release);
        }
    }
}

impl SessionHttpClient {
    /// What both kinds of post do with the answer: note the session an `initialize` opened
    /// (`opening`), and correct a refusal of a request on a session (see [`correct`]).
    fn answered(&self, opening: bool, refusable: bool, response: PostResult) -> PostResult {
        if opening {
            self.note_initialize_answer(&response);
        }
        correct(refusable, response)
    }
}

/// The request's own headers: those of its caller (`send` renders them, see `identity.rs`),
/// and its W3C trace context (`_meta.traceparent`, put there by `send`) as HTTP headers too:
/// collectors and proxies in front of an HTTP upstream read the header, not the body.
fn with_request_headers(
    message: &ClientJsonRpcMessage,
    mut headers: HashMap<HeaderName, HeaderValue>,
) -> HashMap<HeaderName, HeaderValue> {
    use rmcp::model::GetMeta;
    let rmcp::model::JsonRpcMessage::Request(request) = message else {
        return headers;
    };
    if let Some(caller) = CallerHeaders::of(message) {
        for (name, value) in caller.iter() {
            headers.insert(name.clone(), value.clone());
        }
    }
    let meta = request.request.get_meta();
    let fields = [
        ("traceparent", meta.get_traceparent()),
        ("tracestate", meta.get_tracestate()),
    ];
    for (name, value) in fields {
        if let Some(value) = value.and_then(|v| HeaderValue::from_str(v).ok()) {
            headers.insert(HeaderName::from_static(name), value);
        }
    }
    headers
}

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
        let (refusable, opening) = (
            refusable(&message, session_id.as_ref()),
            session_id.is_none(),
        );
        let custom_headers = with_request_headers(&message, custom_headers);
        async move {
            let response = self
                .http
                .post_message(uri, message, session_id, auth_header, custom_headers)
                .await;
            self.answered(opening, refusable, response)
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
        let (refusable, opening) = (
            refusable(&message, session_id.as_ref()),
            session_id.is_none(),
        );
        let custom_headers = with_request_headers(&message, custom_headers);
        async move {
            let response = self
                .http
                .post_message_with_max_sse_event_size(
                    uri,
                    message,
                    session_id,
                    auth_header,
                    custom_headers,
                    max_sse_event_size,
                )
                .await;
            self.answered(opening, refusable, response)
        }
    }

    fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = Result<(), StreamableHttpError<Self::Error>>> + Send + '_ {
        self.http
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
        let standalone = self.standalone_if(last_event_id.as_deref());
        let stream =
            self.http
                .get_stream(uri, session_id, last_event_id, auth_header, custom_headers);
        StandaloneStream::answered_by(standalone, stream)
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
        let standalone = self.standalone_if(last_event_id.as_deref());
        let stream = self.http.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            max_sse_event_size,
        );
        StandaloneStream::answered_by(standalone, stream)
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
