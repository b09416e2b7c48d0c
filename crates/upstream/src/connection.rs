//! One live MCP session with one upstream, a child process or a remote server: handshake,
//! the sending of one request (see [`Connection::send`], the crate's one send path), and prompt
//! failure when the child dies, the connection breaks, the deadline passes or the caller
//! cancels.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rmcp::model::{ClientRequest, GetExtensions, RequestMetaObject, ServerResult};
use rmcp::service::{ClientInitializeError, Peer, PeerRequestOptions, RunningService};
use rmcp::{RoleClient, ServiceError, ServiceExt};

use crate::cancel::{ABANDONED, CancelOnDrop, Pending};
use crate::client::ClientEvents;
use crate::error::UpstreamError;
use crate::inbound::{Inbound, Ordered, ProgressRoute, ProgressSink};
use crate::lines::{BROKEN_ANSWER, Lines};
use crate::process::{self, ChildProcess, CommandSpec, Spawned};
use crate::relay::{Caller, Relay};
use crate::remote::RemoteSpec;
use crate::result::ServerInfo;
use crate::stderr::StderrTail;

/// rmcp marks the error it hands a request whose response stream closed early with this key.
const TRANSPORT_CLOSED_MARKER: &str = "io.modelcontextprotocol/transportClosed";

/// How long a dead child may take to be reaped before we describe it anyway.
const DEATH_WAIT: Duration = Duration::from_secs(1);

/// At shutdown, how long the cancels of abandoned requests may take to leave.
const CANCEL_FLUSH: Duration = Duration::from_secs(2);

pub(crate) struct Connection {
    server: Arc<str>,
    service: RunningService<RoleClient, ClientEvents>,
    link: Link,
    /// Where requests register their progress routes.
    inbound: Arc<Inbound>,
    /// Calls in flight, for the upstream's requests to their clients.
    relay: Arc<Relay>,
    info: ServerInfo,
    /// Whether this session can carry 2026-07-28 requests (asked once, on first need).
    pub(crate) era: crate::stateless::EraProbe,
    /// Cancels of abandoned requests still being sent, flushed before the session ends.
    cancels: Pending,
}

/// How [`Connection::send`] sends one request: the caller's options, resolved for this
/// connection.
pub(crate) struct Sending<'a> {
    pub timeout: Duration,
    pub progress: Option<&'a ProgressSink>,
    pub caller: Option<&'a Arc<dyn Caller>>,
    /// `_meta` entries put over rmcp's own (a 2026-07-28 client's context).
    pub meta: Option<RequestMetaObject>,
}

/// What carries the session.
enum Link {
    Child(ChildProcess),
    Remote(RemoteLink),
}

struct RemoteLink {
    /// The URL without credentials.
    url: String,
    /// Set when a request showed the connection unusable; the next call connects anew.
    broken: AtomicBool,
    /// Set when a request failed without being processed: the server refused it because it no
    /// longer knows our session (some servers answer HTTP 400 where the spec says 404, so rmcp
    /// does not re-initialize), or it never reached the server. It may be retried once on a
    /// new connection.
    unprocessed: AtomicBool,
}

impl Connection {
    /// Spawns the child and completes `initialize` within `timeout`; a line of more than
    /// `max_line` bytes from it is not read (see `lines.rs`).
    pub async fn connect(
        server: &Arc<str>,
        spec: &CommandSpec,
        (timeout, max_line): (Duration, usize),
        stderr: Arc<StderrTail>,
        inbound: Arc<Inbound>,
        roots: Arc<[String]>,
    ) -> Result<Connection, UpstreamError> {
        let Spawned {
            process,
            stdin,
            stdout,
        } = process::spawn(server, spec, stderr).map_err(|error| UpstreamError::Spawn {
            server: server.to_string(),
            command: spec.display.clone(),
            reason: spawn_failure(&error),
        })?;
        let relay = Arc::new(Relay::with_roots(roots));
        let lines = Lines::new(server.clone(), stdout, stdin, max_line);
        let transport = Ordered::new(lines, inbound.clone());
        let handshake = ClientEvents::new(server.clone(), relay.clone()).serve(transport);
        let service = match tokio::time::timeout(timeout, handshake).await {
            Ok(Ok(service)) => service,
            Ok(Err(error)) => {
                let reason = handshake_failure(&error, &process).await;
                return Err(UpstreamError::Start {
                    server: server.to_string(),
                    command: spec.display.clone(),
                    reason,
                    stderr_tail: process.stderr.snapshot(),
                });
            }
            Err(_elapsed) => {
                return Err(UpstreamError::ConnectTimeout {
                    server: server.to_string(),
                    command: spec.display.clone(),
                    timeout_ms: millis(timeout),
                    stderr_tail: process.stderr.snapshot(),
                });
            }
        };
        let pid = process.pid();
        Ok(Connection::new(
            server,
            service,
            Link::Child(process),
            inbound,
            relay,
            pid.map(|pid| format!("pid {pid}")),
        ))
    }

    /// Connects to a remote upstream and completes the MCP handshake within `timeout`.
    pub async fn connect_remote(
        server: &Arc<str>,
        spec: &RemoteSpec,
        timeout: Duration,
        inbound: Arc<Inbound>,
        roots: Arc<[String]>,
    ) -> Result<Connection, UpstreamError> {
        let relay = Arc::new(Relay::with_roots(roots));
        let events = || ClientEvents::new(server.clone(), relay.clone());
        let handshake = spec.handshake(events, &inbound, timeout);
        let service = match tokio::time::timeout(timeout, handshake).await {
            Ok(Ok(service)) => service,
            Ok(Err(reason)) => {
                return Err(UpstreamError::Unreachable {
                    server: server.to_string(),
                    url: spec.display.clone(),
                    reason,
                });
            }
            Err(_elapsed) => {
                return Err(UpstreamError::HandshakeTimeout {
                    server: server.to_string(),
                    url: spec.display.clone(),
                    timeout_ms: millis(timeout),
                });
            }
        };
        let link = Link::Remote(RemoteLink {
            url: spec.display.clone(),
            broken: AtomicBool::new(false),
            unprocessed: AtomicBool::new(false),
        });
        let place = format!("{} {}", spec.kind_name(), spec.display);
        Ok(Connection::new(
            server,
            service,
            link,
            inbound,
            relay,
            Some(place),
        ))
    }

    fn new(
        server: &Arc<str>,
        service: RunningService<RoleClient, ClientEvents>,
        link: Link,
        inbound: Arc<Inbound>,
        relay: Arc<Relay>,
        place: Option<String>,
    ) -> Connection {
        let info = match service.peer_info() {
            Some(peer) => ServerInfo {
                protocol_version: peer.protocol_version.as_str().to_string(),
                name: peer.server_info.as_ref().map(|i| i.name.clone()),
                version: peer.server_info.as_ref().map(|i| i.version.clone()),
                instructions: peer.instructions.clone(),
            },
            None => ServerInfo {
                protocol_version: crate::client::PROTOCOL_VERSION.as_str().to_string(),
                name: None,
                version: None,
                instructions: None,
            },
        };
        // 2026-07-28 is reached only through `server/discover`, which asks for it.
        if matches!(link, Link::Child(_))
            && info.protocol_version.as_str() > crate::client::PROTOCOL_VERSION.as_str()
        {
            tracing::warn!(
                server = %server,
                protocol = %info.protocol_version,
                "upstream answered `initialize` with a newer protocol version than offered"
            );
        }
        tracing::info!(
            server = %server,
            at = place.as_deref().unwrap_or("?"),
            protocol = %info.protocol_version,
            upstream = info.name.as_deref().unwrap_or("?"),
            "upstream connected"
        );
        Connection {
            server: server.clone(),
            service,
            link,
            inbound,
            relay,
            info,
            era: Default::default(),
            cancels: Pending::default(),
        }
    }

    /// The session, for the requests of the connection's own upkeep (the era probe).
    pub(crate) fn peer(&self) -> &Peer<RoleClient> {
        self.service.peer()
    }

    pub fn info(&self) -> &ServerInfo {
        &self.info
    }

    pub fn pid(&self) -> Option<u32> {
        match &self.link {
            Link::Child(process) => process.pid(),
            Link::Remote(_) => None,
        }
    }

    /// False once the child exited, the connection broke or the session ended; the next call
    /// then starts a new one.
    pub fn is_alive(&self) -> bool {
        let link_alive = match &self.link {
            Link::Child(process) => !process.has_exited(),
            Link::Remote(remote) => !remote.broken.load(Ordering::Acquire),
        };
        link_alive && !self.service.is_closed() && !self.service.is_transport_closed()
    }

    /// Whether a failed request may be retried on this kind of link (remote ones only).
    pub fn may_retry(&self) -> bool {
        matches!(self.link, Link::Remote(_))
    }

    /// True once a request failed without being processed (see `RemoteLink::unprocessed`), so
    /// the caller may retry it once on a new connection.
    pub fn failed_unprocessed(&self) -> bool {
        match &self.link {
            Link::Remote(remote) => remote.unprocessed.load(Ordering::Acquire),
            Link::Child(_) => false,
        }
    }

    /// Sends `request` and waits for its answer, within the deadline and the link's life:
    /// every request to an upstream takes this path. The call is counted in flight (for the
    /// upstream's requests to its caller) before it is sent, its progress is routed from
    /// before it is sent, and an abandoned request (timed out, cancelled, or its future
    /// dropped) is cancelled upstream with `notifications/cancelled`.
    pub async fn send(
        &self,
        mut request: Box<ClientRequest>,
        operation: &str,
        how: Sending<'_>,
    ) -> Result<ServerResult, UpstreamError> {
        let peer = self.service.peer();
        // Counted before it is sent: the upstream may ask before we hear back from the send.
        let in_flight = self.relay.enter(how.caller.cloned(), how.timeout);
        // Owned by the request's future: when it ends, however it ends, the caller's channel
        // closes (the route only holds it weakly).
        let progress = how.progress.map(|sink| Arc::new(sink.clone()));
        if let Some(sink) = &progress {
            request
                .extensions_mut()
                .insert(ProgressRoute(Arc::downgrade(sink)));
        }
        let options = match how.meta {
            Some(meta) => PeerRequestOptions::no_options().with_meta(meta),
            None => PeerRequestOptions::no_options(),
        };
        // Pinned here and lent to `request`: moved into it by value, the request's state was
        // stored twice in its future (the argument and the pinned copy), kilobytes copied on
        // every call of every future that holds this one.
        let call = std::pin::pin!(async move {
            let mut handle = peer.send_request_with_option(*request, options).await?;
            in_flight.sent_as(&handle.id);
            let _route = progress.as_ref().map(|_| {
                self.inbound
                    .route_until_dropped(handle.progress_token.clone())
            });
            let mut guard =
                CancelOnDrop::new(peer, handle.id.clone(), ABANDONED).tracked(&self.cancels);
            // What rmcp's `await_response` does for a request without a timeout of its own (the
            // deadline is `request`'s), without its future: 3.4 KB sized by its timeout paths.
            let response = (&mut handle.rx)
                .await
                .unwrap_or(Err(ServiceError::TransportClosed));
            guard.disarm();
            response
        });
        self.request(operation, how.timeout, call).await
    }

    /// Runs one request against the deadline and the child's life, whichever ends first.
    ///
    /// On timeout the request future is dropped, which sends `notifications/cancelled` for it,
    /// so the upstream can stop working on an answer nobody will read.
    async fn request<T>(
        &self,
        operation: &str,
        timeout: Duration,
        mut request: Pin<&mut impl Future<Output = Result<T, ServiceError>>>,
    ) -> Result<T, UpstreamError> {
        let outcome = tokio::select! {
            biased;
            outcome = &mut request => outcome,
            () = self.gone() => {
                // The answer may still be in the pipe behind the exit; rmcp reports the closed
                // stream as soon as it reads to the end.
                tokio::time::timeout(DEATH_WAIT, &mut request)
                    .await
                    .unwrap_or(Err(ServiceError::TransportClosed))
            }
            () = tokio::time::sleep(timeout) => {
                return Err(UpstreamError::Timeout {
                    server: self.server.to_string(),
                    operation: operation.to_string(),
                    timeout_ms: millis(timeout),
                });
            }
        };
        let error = match outcome {
            Ok(value) => return Ok(value),
            Err(error) => error,
        };
        let server = self.server.to_string();
        let operation = operation.to_string();
        let closed = match error {
            ServiceError::McpError(error) if is_transport_closed(&error) => {
                error.message.into_owned()
            }
            ServiceError::McpError(error) if is_broken_answer(&error) => {
                return Err(UpstreamError::BrokenAnswer {
                    server,
                    operation,
                    reason: error.message.into_owned(),
                });
            }
            ServiceError::McpError(error) => {
                if let Link::Remote(remote) = &self.link
                    && refuses_session(&error)
                {
                    tracing::info!(server = %server, "upstream forgot our session; reconnecting");
                    remote.unprocessed.store(true, Ordering::Release);
                    remote.broken.store(true, Ordering::Release);
                }
                return Err(UpstreamError::Rejected {
                    server,
                    operation,
                    code: error.code.0,
                    message: error.message.into_owned(),
                    data: error.data.map(Box::new),
                });
            }
            ServiceError::TransportClosed => "the connection closed".to_string(),
            ServiceError::TransportSend(error) => {
                let (reason, undelivered) = describe_send_failure(&error);
                if undelivered && let Link::Remote(remote) = &self.link {
                    // Nothing reached the server: trying again on a new connection is safe.
                    remote.unprocessed.store(true, Ordering::Release);
                }
                reason
            }
            other => {
                return Err(UpstreamError::Protocol {
                    server,
                    operation,
                    reason: other.to_string(),
                });
            }
        };
        Err(match &self.link {
            Link::Child(process) => {
                let (status, stderr_tail) = process.death_report(DEATH_WAIT).await;
                tracing::warn!(server = %server, %status, "upstream died during `{operation}`");
                UpstreamError::Crashed {
                    server,
                    status,
                    operation,
                    stderr_tail,
                }
            }
            Link::Remote(remote) => {
                remote.broken.store(true, Ordering::Release);
                tracing::warn!(server = %server, url = %remote.url, "upstream connection lost during `{operation}`");
                UpstreamError::Disconnected {
                    server,
                    url: remote.url.clone(),
                    operation,
                    reason: scrub_urls(&closed),
                }
            }
        })
    }

    /// Resolves when the child exits; never for a remote upstream, whose breakage shows in
    /// the request itself.
    async fn gone(&self) {
        match &self.link {
            Link::Child(process) => process.exited().await,
            Link::Remote(_) => std::future::pending().await,
        }
    }

    /// Sends the cancels of abandoned requests still pending (within a short bound), closes
    /// stdin, then waits for the child to exit, escalating to SIGTERM and SIGKILL. A
    /// remote session is ended (rmcp sends the HTTP `DELETE` for it in the background).
    pub async fn shut_down(&self, grace: Duration) {
        // Before the session ends: a cancel still queued would never leave.
        let unsent = self.cancels.flush(CANCEL_FLUSH).await;
        if unsent > 0 {
            tracing::warn!(server = %self.server, unsent, "shutting down with cancels of abandoned requests unsent");
        }
        self.service.cancellation_token().cancel();
        if let Link::Child(process) = &self.link {
            process.terminate(grace).await;
        }
    }
}

/// An error response `lines.rs` made in place of an answer that cannot be read.
fn is_broken_answer(error: &rmcp::model::ErrorData) -> bool {
    error
        .data
        .as_ref()
        .and_then(|data| data.get(BROKEN_ANSWER))
        .is_some()
}

fn is_transport_closed(error: &rmcp::model::ErrorData) -> bool {
    error
        .data
        .as_ref()
        .and_then(|data| data.get(TRANSPORT_CLOSED_MARKER))
        .is_some()
}

/// Whether a JSON-RPC error says the server does not know our session. Servers built from the
/// TypeScript SDK's examples answer a forgotten session with HTTP 400 and a -32000 error
/// "Bad Request: No valid session ID provided" instead of the 404 that makes rmcp
/// re-initialize by itself.
fn refuses_session(error: &rmcp::model::ErrorData) -> bool {
    let message = error.message.to_ascii_lowercase();
    (error.code.0 == -32000 || error.code.0 == -32600 || error.code.0 == -32001)
        && message.contains("session")
        && (message.contains("no valid")
            || message.contains("not found")
            || message.contains("invalid")
            || message.contains("unknown")
            || message.contains("expired"))
}

/// Why a message could not be sent, and whether it certainly never reached the server (the
/// connection could not even be opened).
fn describe_send_failure(error: &rmcp::transport::DynamicTransportError) -> (String, bool) {
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    match error
        .error
        .downcast_ref::<StreamableHttpError<reqwest::Error>>()
    {
        Some(StreamableHttpError::Client(error)) => {
            (crate::cause::explain(error), error.is_connect())
        }
        // A 4xx answer to a request within a session means the server refused it unprocessed
        // (typically: it no longer knows the session and its error carries no request id).
        Some(StreamableHttpError::UnexpectedServerResponse(text))
            if text.starts_with("HTTP 400") || text.starts_with("HTTP 404") =>
        {
            (text.to_string(), true)
        }
        Some(other) => (with_causes(other), false),
        None => (with_causes(error.error.as_ref()), false),
    }
}

/// An error's message followed by its causes: reqwest's own message ("error sending request")
/// says nothing of why ("connection refused").
fn with_causes(error: &dyn std::error::Error) -> String {
    // (reqwest's own text names the URL; `scrub_urls` takes it out afterwards.)
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// Drops anything that looks like a URL from an error text: reqwest puts the full request URL
/// (which may carry credentials in its query) into its messages.
fn scrub_urls(text: &str) -> String {
    text.split(' ')
        .map(|word| {
            let bare = word.trim_start_matches('(');
            if bare.starts_with("http://") || bare.starts_with("https://") {
                let prefix = &word[..word.len() - bare.len()];
                let url = bare.trim_end_matches([')', ':', ',', ';', '.']);
                let suffix = &bare[url.len()..];
                format!("{prefix}<url>{suffix}")
            } else {
                word.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Why the program did not start, in words for the user rather than an errno.
fn spawn_failure(error: &std::io::Error) -> String {
    // Our own errors (a missing `cwd`) already say what is wrong.
    if error.get_ref().is_some() {
        return error.to_string();
    }
    match error.kind() {
        std::io::ErrorKind::NotFound => "program not found".to_string(),
        std::io::ErrorKind::PermissionDenied => "permission denied (is it executable?)".to_string(),
        _ => error.to_string(),
    }
}

/// Why `initialize` did not complete, in words for the user.
async fn handshake_failure(error: &ClientInitializeError, process: &ChildProcess) -> String {
    match error {
        ClientInitializeError::ConnectionClosed(_)
        | ClientInitializeError::TransportError { .. } => {
            let (status, _) = process.death_report(DEATH_WAIT).await;
            format!("it {status} before answering `initialize`")
        }
        ClientInitializeError::JsonRpcError(error) if is_broken_answer(error) => {
            format!("its answer to `initialize` is broken: {}", error.message)
        }
        ClientInitializeError::JsonRpcError(error) => format!(
            "it rejected `initialize`: {} (JSON-RPC error {})",
            error.message, error.code.0
        ),
        other => format!("`initialize` failed: {other}"),
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_taken_out_of_error_texts() {
        assert_eq!(
            scrub_urls("error sending request for url (http://h:1/mcp?key=secret): refused"),
            "error sending request for url (<url>): refused"
        );
        assert_eq!(scrub_urls("no url here"), "no url here");
    }
}
