//! The one path a request takes to an upstream, with what a caller may ask of it
//! ([`SendOptions`]): a deadline, progress, cancellation, the client that the upstream's own
//! requests are relayed to, a 2026-07-28 client's context, a retry when the request certainly
//! was not processed.
//!
//! Everything ends in [`Connection::send`](crate::connection::Connection::send): the graph's
//! `tools/call`, the catalog's `tools/list` pages and every request the gateway forwards. The
//! plain-typed helpers here ([`Upstream::call_tool`], [`Upstream::tools`]) only build the
//! request and read the answer.

use std::sync::Arc;
use std::time::{Duration, Instant};

use mcpflow_telemetry::metrics::{self, Outcome};
use mcpflow_telemetry::trace;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientRequest, GetExtensions, JsonObject,
    ListToolsRequest, PaginatedRequestParams, RequestMetaObject, ServerResult, Tool,
};
use tokio_util::sync::CancellationToken;

use crate::connection::{Connection, Sending};
use crate::error::UpstreamError;
use crate::identity::Identity;
use crate::inbound::ProgressSink;
use crate::relay::Caller;
use crate::result::ToolResult;
use crate::upstream::{Ready, Upstream};

/// How one request is sent (see [`UpstreamPool::send`](crate::UpstreamPool::send)). The
/// default: the upstream's own timeout, no progress, nothing relayed (what the upstream asks
/// meanwhile is refused), the session's era, no retry.
#[derive(Clone, Default)]
pub struct SendOptions {
    progress: Option<ProgressSink>,
    caller: Option<Arc<dyn Caller>>,
    stateless: Option<RequestMetaObject>,
    timeout: Option<Duration>,
    cancel: Option<CancellationToken>,
    retry_unprocessed: bool,
    if_connected: bool,
    identity: Option<Identity>,
}

impl SendOptions {
    /// The upstream's `notifications/progress` about this request go to `sink`, every one
    /// sent before the answer queued there before the answer is returned. The sink is dropped
    /// when the request ends, which closes the channel.
    pub fn progress(mut self, sink: ProgressSink) -> Self {
        self.progress = Some(sink);
        self
    }

    /// What the upstream asks while it serves this request (`sampling/createMessage`,
    /// `elicitation/create`, `roots/list`) is relayed to `caller` (see `relay.rs`).
    pub fn caller(mut self, caller: Arc<dyn Caller>) -> Self {
        self.caller = Some(caller);
        self
    }

    /// The request of a 2026-07-28 client, whose `_meta` (capabilities, log level, …) goes
    /// upstream with it when the upstream's session speaks that era, and is left out (the
    /// request forwarded in 2025 terms) when it does not; see `stateless.rs`.
    pub fn stateless(mut self, meta: RequestMetaObject) -> Self {
        self.stateless = Some(meta);
        self
    }

    /// A deadline of its own instead of the upstream's `timeoutMs`.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Cancelling `token` cancels the request upstream; it then fails with
    /// [`UpstreamError::Cancelled`]. (Dropping the future cancels it upstream as well.)
    pub fn cancel(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// Fails at once when the upstream is not connected (it is (re)started in the
    /// background) rather than waiting for it: for a listing, which answers with what is up.
    pub fn if_connected(mut self) -> Self {
        self.if_connected = true;
        self
    }

    /// The request is made for `identity`: a remote upstream's `${caller.…}` headers are
    /// rendered from it (without one they are left out).
    pub fn identity(mut self, identity: Identity) -> Self {
        self.identity = Some(identity);
        self
    }

    /// A request that certainly was not processed (the server forgot the session, or it
    /// never reached the server) is sent once more on a new connection.
    pub fn retry_unprocessed(mut self) -> Self {
        self.retry_unprocessed = true;
        self
    }
}

impl Upstream {
    /// Sends `request` (connecting first if needed) and returns the answer whole.
    pub(crate) async fn send(
        &self,
        request: ClientRequest,
        options: &SendOptions,
    ) -> Result<ServerResult, UpstreamError> {
        // Boxed once here: passed by value down the four layers below, the request (~460
        // bytes) was stored twice in each one's future (argument and local), kilobytes that
        // every copy of the whole request future moves.
        let request = Box::new(request);
        if !trace::on() && metrics::get().is_none() {
            return self.send_unobserved(request, options).await;
        }
        let method = metrics::method_label(request.method());
        let span = self.request_span(method, &request);
        let started = Instant::now();
        let result = span.around(self.send_unobserved(request, options)).await;
        let outcome = match &result {
            Err(_) => Outcome::Error,
            Ok(ServerResult::CallToolResult(r)) if r.is_error == Some(true) => Outcome::ToolError,
            Ok(_) => Outcome::Ok,
        };
        if outcome != Outcome::Ok {
            span.fail(outcome.as_str());
        }
        span.end();
        metrics::upstream_request(&self.name, method, outcome, started.elapsed());
        result
    }

    /// The span of one request to this upstream, a child of the current one (the node, or
    /// the proxied request).
    fn request_span(&self, method: &'static str, request: &ClientRequest) -> trace::Span {
        if !trace::on() {
            return trace::Span::none();
        }
        let tool = match request {
            ClientRequest::CallToolRequest(call) => Some(&*call.params.name),
            _ => None,
        };
        let upstream = trace::KeyValue::new("mcpflow.upstream", self.name.clone());
        trace::mcp_request(trace::SpanKind::Client, method, tool, [upstream], None)
    }

    async fn send_unobserved(
        &self,
        request: Box<ClientRequest>,
        options: &SendOptions,
    ) -> Result<ServerResult, UpstreamError> {
        let operation = operation(&request);
        let Some(cancel) = &options.cancel else {
            return self.send_uncancelled(request, &operation, options).await;
        };
        tokio::select! {
            biased;
            result = self.send_uncancelled(request, &operation, options) => result,
            // Dropping the request on the way sent `notifications/cancelled` upstream.
            () = cancel.cancelled() => Err(UpstreamError::Cancelled {
                server: self.name.to_string(),
                operation: operation.clone(),
            }),
        }
    }

    async fn send_uncancelled(
        &self,
        request: Box<ClientRequest>,
        operation: &str,
        options: &SendOptions,
    ) -> Result<ServerResult, UpstreamError> {
        let connection = match self.ready()? {
            Ready::Now(connection) => connection,
            Ready::Later(_) if options.if_connected => return Err(self.not_connected()),
            Ready::Later(start) => start.await?,
        };
        // Kept only where a retry can happen (remote links), off the stdio hot path.
        let again = (options.retry_unprocessed && connection.may_retry()).then(|| request.clone());
        let mut result = self.send_on(&connection, request, operation, options).await;
        if let Some(request) = again
            && let Some(connection) = self.after_unprocessed(&result, &connection).await
        {
            result = self.send_on(&connection, request, operation, options).await;
        }
        self.note(&result);
        result
    }

    async fn send_on(
        &self,
        connection: &Connection,
        mut request: Box<ClientRequest>,
        operation: &str,
        options: &SendOptions,
    ) -> Result<ServerResult, UpstreamError> {
        if let Some(identity) = &options.identity
            && let Some(headers) = self.caller_headers(identity)
        {
            request.extensions_mut().insert(headers);
        }
        let meta = match &options.stateless {
            Some(meta) if self.speaks_2026_on(connection).await => Some(meta.clone()),
            Some(_) => {
                tracing::debug!(
                    server = %self.name,
                    method = request.method(),
                    "upstream speaks no 2026-07-28: forwarding a 2026-07-28 request in 2025 terms"
                );
                None
            }
            None => None,
        };
        // The caller's trace goes on upstream: the span of this request as its parent.
        let meta = match trace::carry() {
            None => meta,
            Some(context) => {
                let mut meta = meta.unwrap_or_default();
                meta.set_traceparent(context.traceparent);
                if let Some(state) = context.tracestate {
                    meta.set_tracestate(state);
                }
                Some(meta)
            }
        };
        let how = Sending {
            timeout: options.timeout.unwrap_or(self.call_timeout),
            progress: options.progress.as_ref(),
            caller: options.caller.as_ref(),
            meta,
        };
        connection.send(request, operation, how).await
    }

    /// When `result` failed without being processed (the server forgot our session, or the
    /// request never reached it), a new connection to run the request once more on.
    async fn after_unprocessed<T>(
        &self,
        result: &Result<T, UpstreamError>,
        connection: &Connection,
    ) -> Option<Arc<Connection>> {
        // Only the kinds of failure that mark a request unprocessed; a timeout on the same
        // connection meanwhile may have been processed.
        let retryable = matches!(
            result,
            Err(UpstreamError::Disconnected { .. } | UpstreamError::Rejected { .. })
        );
        if !retryable || !connection.failed_unprocessed() {
            return None;
        }
        self.connection().await.ok()
    }

    /// A graph's `tools/call`: nobody to relay the upstream's questions to, and no era of a
    /// client to carry.
    pub async fn call_tool(
        &self,
        tool: &str,
        args: JsonObject,
        progress: Option<ProgressSink>,
        identity: Option<Identity>,
    ) -> Result<ToolResult, UpstreamError> {
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(args);
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let mut options = SendOptions::default().retry_unprocessed();
        options.progress = progress;
        options.identity = identity;
        match self.send(request, &options).await? {
            ServerResult::CallToolResult(result) => {
                ToolResult::from_rmcp(result).map_err(|error| self.unusable(tool, error))
            }
            other => Err(self.unusable(tool, unexpected(&other))),
        }
    }

    /// All pages of `tools/list`, from the catalog until the upstream announces a change.
    pub async fn tools(&self) -> Result<Arc<Vec<Tool>>, UpstreamError> {
        if let Some(tools) = self.catalog.current() {
            return Ok(tools);
        }
        // Connected first: replacing a dead connection drops the list, which must not make
        // this listing, made on the new one, look stale.
        self.connection().await?;
        let generation = match self.catalog.get() {
            Ok(tools) => return Ok(tools),
            Err(generation) => generation,
        };
        let options = SendOptions::default().retry_unprocessed();
        let mut tools = Vec::new();
        let mut cursor = None;
        loop {
            let params = PaginatedRequestParams::default().with_cursor(cursor);
            let request = ClientRequest::ListToolsRequest(ListToolsRequest {
                params: Some(params),
                ..Default::default()
            });
            match self.send(request, &options).await? {
                ServerResult::ListToolsResult(page) => {
                    tools.extend(page.tools);
                    cursor = page.next_cursor;
                }
                other => return Err(self.unusable_listing(unexpected(&other))),
            }
            if cursor.is_none() {
                break;
            }
        }
        let tools = Arc::new(tools);
        self.catalog.store(generation, tools.clone());
        Ok(tools)
    }

    /// The tools as far as they are known now: the catalog's, or listed on the live
    /// connection. An upstream that is not connected is started in the background and fails
    /// the listing at once (with why its last start failed, if it did); its tools come with a
    /// list change once it is up.
    pub(crate) async fn listed(&self) -> Result<Arc<Vec<Tool>>, UpstreamError> {
        if let Some(tools) = self.catalog.current() {
            return Ok(tools);
        }
        match self.ready()? {
            Ready::Now(_) => self.tools().await,
            Ready::Later(_) => Err(self.missed_listing()),
        }
    }

    fn unusable(&self, tool: &str, reason: impl ToString) -> UpstreamError {
        UpstreamError::Protocol {
            server: self.name.to_string(),
            operation: format!("tools/call {tool}"),
            reason: reason.to_string(),
        }
    }

    fn unusable_listing(&self, reason: impl ToString) -> UpstreamError {
        UpstreamError::Protocol {
            server: self.name.to_string(),
            operation: "tools/list".to_string(),
            reason: reason.to_string(),
        }
    }
}

/// How a request is named in errors: a call with its tool.
fn operation(request: &ClientRequest) -> String {
    match request {
        ClientRequest::CallToolRequest(call) => format!("tools/call {}", call.params.name),
        other => other.method().to_string(),
    }
}

/// Why an answer of the wrong kind cannot be used.
fn unexpected(answer: &ServerResult) -> String {
    match answer {
        ServerResult::InputRequiredResult(_) => {
            "it asked for input (`input_required`), which only a client of the 2026-07-28 \
             era can give"
                .to_string()
        }
        _ => rmcp::ServiceError::UnexpectedResponse.to_string(),
    }
}
