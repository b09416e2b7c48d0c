//! A remote upstream's address and HTTP client: the URL (and a form of it safe to print), the
//! configured headers, and the handshake over Streamable HTTP or legacy HTTP+SSE.

use std::sync::Arc;
use std::time::Duration;

use indexmap::IndexMap;
use mcpflow_model::caller_header::HeaderTemplate;
use mcpflow_model::{RemoteKind, RemoteServer};
use reqwest::Url;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use rmcp::RoleClient;
use rmcp::model::ProtocolVersion;
use rmcp::service::{ClientInitializeError, ClientLifecycleMode, ClientServiceExt, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

use crate::client::ClientEvents;
use crate::identity::CallerHeader;
use crate::inbound::{Inbound, Ordered};
use crate::legacy_sse;
use crate::session_http::SessionHttpClient;

/// Headers the transports set themselves; a config that sets them would break the protocol.
const RESERVED_HEADERS: &[&str] = &[
    "accept",
    "content-type",
    "content-length",
    "host",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
];

/// How many ordinary requests may be under way at once on one Streamable HTTP connection
/// (rmcp's default of 16 would queue a fan-out behind a few slow calls).
const MAX_CONCURRENT_POSTS: usize = 256;

/// How long a handshake waits for the session's standalone GET stream to be answered before
/// the first request (session_http::StandaloneStream): long enough for a loaded machine, short
/// enough that a server slow to answer a GET only delays the start.
const STANDALONE_STREAM_WAIT: Duration = Duration::from_secs(2);

/// What to connect to for a `streamableHttp` or `sse` upstream.
#[derive(Debug, Clone)]
pub(crate) struct RemoteSpec {
    pub kind: RemoteKind,
    /// As configured (after `${VAR}` interpolation): may hold credentials, never printed.
    url: String,
    /// `scheme://host:port/path`, without user info or query: for messages and logs.
    pub display: String,
    headers: IndexMap<String, String>,
    /// The headers that name the caller (`${caller.…}`), rendered per request.
    pub caller_headers: Arc<[CallerHeader]>,
    pub connect_timeout: Option<Duration>,
}

impl RemoteSpec {
    pub fn new(remote: &RemoteServer) -> RemoteSpec {
        RemoteSpec {
            kind: remote.kind,
            display: display_url(&remote.url),
            url: remote.url.clone(),
            headers: remote.headers.clone(),
            caller_headers: caller_headers(&remote.headers),
            connect_timeout: remote.connect_timeout_ms.map(Duration::from_millis),
        }
    }

    pub fn kind_name(&self) -> &'static str {
        match self.kind {
            RemoteKind::StreamableHttp => "streamableHttp",
            RemoteKind::Sse => "sse",
        }
    }

    /// Replaces the secret-bearing URL in `text` (reqwest puts it into its errors) by the
    /// printable one.
    pub fn scrub(&self, text: &str) -> String {
        let mut text = text.replace(&self.url, &self.display);
        if let Ok(url) = Url::parse(&self.url) {
            text = text.replace(url.as_str(), &self.display);
        }
        text
    }

    fn parsed_url(&self) -> Result<Url, String> {
        let url = Url::parse(&self.url).map_err(|e| format!("the URL is not valid: {e}"))?;
        match url.scheme() {
            "http" | "https" => Ok(url),
            other => Err(format!(
                "the URL scheme `{other}` is not supported (use http or https)"
            )),
        }
    }

    /// A client that sends the configured headers on every request (values marked sensitive,
    /// so they never show in debug output) and gives up connecting after `connect_timeout`.
    /// There is no overall request timeout: SSE streams stay open as long as the session.
    fn http_client(&self, connect_timeout: Duration) -> Result<reqwest::Client, String> {
        let mut headers = HeaderMap::new();
        for (name, value) in &self.headers {
            let header = header_name(name)?;
            let template = HeaderTemplate::parse(value)
                .map_err(|e| format!("the value of header `{name}` is not valid: {e}"))?;
            // A value naming the caller is sent per request (`caller_headers`).
            let Some(value) = template.fixed() else {
                continue;
            };
            // The value is never echoed: it is typically a token.
            let mut value = HeaderValue::from_str(&value).map_err(|_| {
                format!("the value of header `{name}` is not a valid HTTP header value")
            })?;
            value.set_sensitive(true);
            headers.append(header, value);
        }
        reqwest::Client::builder()
            .default_headers(headers)
            .user_agent(concat!("mcpflow/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(connect_timeout)
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))
    }

    /// Connects and completes the MCP handshake (no deadline here: the caller sets one).
    ///
    /// Streamable HTTP first offers `initialize` with 2025-11-25, which servers of that era
    /// and servers of both eras answer; only when the server refuses it with a JSON-RPC error
    /// (a server of the stateless 2026-07-28 era only) does it try `server/discover`. Probing
    /// with `server/discover` first would cost every older server a failed request, and some
    /// answer an unknown method with an empty success that cannot be told from a broken server.
    pub async fn handshake(
        &self,
        events: impl Fn() -> ClientEvents,
        inbound: &Arc<Inbound>,
        connect_timeout: Duration,
    ) -> Result<RunningService<RoleClient, ClientEvents>, String> {
        let url = self.parsed_url()?;
        let client = self.http_client(connect_timeout)?;
        match self.kind {
            RemoteKind::StreamableHttp => {
                let transport = || {
                    let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                    config.max_concurrent_requests = MAX_CONCURRENT_POSTS;
                    let http = SessionHttpClient::new(client.clone());
                    let standalone = http.standalone();
                    let transport = StreamableHttpClientTransport::with_client(http, config);
                    (Ordered::new(transport, inbound.clone()), standalone)
                };
                let (legacy_transport, standalone) = transport();
                let legacy = events()
                    .serve_with_lifecycle(legacy_transport, ClientLifecycleMode::Initialize)
                    .await;
                let refusal = match legacy {
                    Ok(service) => {
                        standalone.wait(STANDALONE_STREAM_WAIT).await;
                        return Ok(service);
                    }
                    Err(ClientInitializeError::JsonRpcError(error)) => error,
                    Err(error) => return Err(self.handshake_failure(&error)),
                };
                tracing::debug!(
                    url = %self.display,
                    code = refusal.code.0,
                    "upstream refused `initialize`; trying `server/discover` (2026-07-28)"
                );
                let modern = ClientLifecycleMode::Discover {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                };
                events()
                    .serve_with_lifecycle(transport().0, modern)
                    .await
                    .map_err(|error| {
                        format!(
                            "it refused `initialize` ({}, JSON-RPC error {}) and `server/discover` \
                             failed too: {}",
                            refusal.message,
                            refusal.code.0,
                            self.handshake_failure(&error)
                        )
                    })
            }
            RemoteKind::Sse => {
                let transport = legacy_sse::LegacySseTransport::open(
                    client,
                    url,
                    connect_timeout,
                    Arc::from(self.display.as_str()),
                )
                .await?;
                events()
                    .serve_with_lifecycle(
                        Ordered::new(transport, inbound.clone()),
                        ClientLifecycleMode::Initialize,
                    )
                    .await
                    .map_err(|error| self.handshake_failure(&error))
            }
        }
    }

    fn handshake_failure(&self, error: &ClientInitializeError) -> String {
        let reason = match error {
            ClientInitializeError::JsonRpcError(error) => format!(
                "it rejected `initialize`: {} (JSON-RPC error {})",
                error.message, error.code.0
            ),
            ClientInitializeError::ConnectionClosed(_) => {
                "the connection closed before the handshake completed; check the URL and that \
                 the server speaks MCP over this `type`"
                    .to_string()
            }
            ClientInitializeError::TransportError { error, .. } => crate::cause::explain(error),
            other => other.to_string(),
        };
        self.scrub(&reason)
    }
}

/// `scheme://host[:port]/path` of `url`, or a placeholder when it does not parse: user info and
/// the query string often carry credentials.
pub(crate) fn display_url(url: &str) -> String {
    match Url::parse(url) {
        Ok(url) => {
            let host = url.host_str().unwrap_or("");
            let port = url.port().map(|p| format!(":{p}")).unwrap_or_default();
            let query = if url.query().is_some() { "?…" } else { "" };
            format!("{}://{host}{port}{}{query}", url.scheme(), url.path())
        }
        Err(_) => "<invalid URL>".to_string(),
    }
}

/// A configured header's name, refused when it is not one or the transport sets it itself.
fn header_name(name: &str) -> Result<HeaderName, String> {
    let header = HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| format!("`{name}` is not a valid HTTP header name"))?;
    if RESERVED_HEADERS.contains(&header.as_str()) {
        return Err(format!(
            "header `{name}` is set by the MCP transport itself and cannot be configured"
        ));
    }
    Ok(header)
}

/// The headers whose values name the caller. One that is not valid is left out here:
/// `http_client` refuses the connection for it with the reason.
fn caller_headers(headers: &IndexMap<String, String>) -> Arc<[CallerHeader]> {
    headers
        .iter()
        .filter_map(|(name, value)| {
            let template = HeaderTemplate::parse(value).ok()?;
            if template.fixed().is_some() {
                return None;
            }
            Some(CallerHeader {
                name: header_name(name).ok()?,
                template,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printed_urls_carry_no_credentials() {
        assert_eq!(
            display_url("https://user:secret@example.com:8443/mcp?key=abc"),
            "https://example.com:8443/mcp?…"
        );
        assert_eq!(display_url("http://127.0.0.1/sse"), "http://127.0.0.1/sse");
        assert_eq!(display_url("not a url"), "<invalid URL>");
    }

    fn spec(headers: &[(&str, &str)]) -> RemoteSpec {
        let headers: IndexMap<String, String> = headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        RemoteSpec {
            kind: RemoteKind::StreamableHttp,
            url: "http://u:p@localhost:1/mcp?token=t".to_string(),
            display: display_url("http://u:p@localhost:1/mcp?token=t"),
            caller_headers: caller_headers(&headers),
            headers,
            connect_timeout: None,
        }
    }

    #[test]
    fn headers_naming_the_caller_are_sent_per_request_not_with_every_one() {
        let spec = spec(&[
            ("X-Fixed", "a $${caller.subject}"),
            ("X-User", "${caller.subject}"),
            ("Host", "${caller.subject}"),
        ]);
        let names: Vec<&str> = spec
            .caller_headers
            .iter()
            .map(|h| h.name.as_str())
            .collect();
        // A reserved name is never a caller header (http_client refuses the config for it).
        assert_eq!(names, ["x-user"]);
        let refused = spec.http_client(Duration::from_secs(1)).unwrap_err();
        assert!(refused.contains("`Host`"), "{refused}");
        let ok = super::tests::spec(&[
            ("X-Fixed", "a $${caller.subject}"),
            ("X-User", "${caller.subject}"),
        ]);
        assert!(ok.http_client(Duration::from_secs(1)).is_ok());
        let bad = super::tests::spec(&[("X-User", "${caller.nothing}")]);
        let refused = bad.http_client(Duration::from_secs(1)).unwrap_err();
        assert!(refused.contains("names nothing of the caller"), "{refused}");
    }

    #[test]
    fn scrub_replaces_the_configured_url() {
        let spec = spec(&[]);
        let text = "error sending request for url (http://u:p@localhost:1/mcp?token=t)";
        assert_eq!(
            spec.scrub(text),
            "error sending request for url (http://localhost:1/mcp?…)"
        );
    }

    #[test]
    fn bad_and_reserved_headers_are_refused_without_their_values() {
        let timeout = Duration::from_secs(1);
        let error = spec(&[("Mcp-Session-Id", "x")])
            .http_client(timeout)
            .err()
            .unwrap_or_default();
        assert!(error.contains("set by the MCP transport"), "{error}");
        let error = spec(&[("Authorization", "Bearer top\nsecret")])
            .http_client(timeout)
            .err()
            .unwrap_or_default();
        assert!(error.contains("`Authorization`"), "{error}");
        assert!(!error.contains("secret"), "{error}");
        assert!(
            spec(&[("Authorization", "Bearer ok")])
                .http_client(timeout)
                .is_ok()
        );
    }
}
