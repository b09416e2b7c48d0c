//! The `http:` section: how `mcpflow serve --http` guards and bounds its listener.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Guards and limits of the HTTP transports (Streamable HTTP at `/mcp`, legacy SSE at `/sse`).
/// Every limit has a default; the section only exists to open up or tighten them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HttpConfig {
    /// `Host` values accepted besides `localhost`, `127.0.0.1` and `::1` (DNS-rebinding
    /// protection), as `name` or `name:port`; `"*"` accepts any host. `--allowed-host` adds to it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_hosts: Vec<String>,
    /// Browser `Origin`s accepted besides those whose host is an accepted host, as
    /// `scheme://host[:port]`; `"*"` accepts any origin.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_origins: Vec<String>,
    /// Largest request body in bytes (default 4 MiB); a larger one gets 413.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_body_bytes: Option<u64>,
    /// Most open sessions of each transport (default 2000; an idle one costs about 100 KiB); past it the session
    /// idle the longest is closed to make room.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_sessions: Option<u64>,
    /// A session without any request for this long is closed (default 300000 ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub session_idle_timeout_ms: Option<u64>,
    /// Most requests being answered at once over all clients (default 1024); past it, 503.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_concurrent_requests: Option<u64>,
    /// Most requests being answered at once in one session (default 64); past it, 429.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_concurrent_requests_per_session: Option<u64>,
    /// Most open connections (default 4096), lowered at start to the open-file limit
    /// (`ulimit -n`) less 256 descriptors kept for upstreams and the store. At the cap the
    /// connection open longest with no request in flight is closed for the new one; when all
    /// are busy the new one gets 503. Either is logged as a warning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_connections: Option<u64>,
    /// A connection is closed when a request's headers are not complete this long after it
    /// opened or after its previous response (default 30000 ms): a partial request, or an
    /// idle keep-alive connection, holds no descriptor longer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub header_read_timeout_ms: Option<u64>,
    /// A request body not received in full this long after its headers gets 408
    /// (default 30000 ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub body_read_timeout_ms: Option<u64>,
    /// On SIGTERM or SIGINT, how long `/readyz` answers 503 while the server still accepts
    /// and answers everything, before it stops accepting (default 0). Set it above the load
    /// balancer's health-check interval times its fall count, so the balancer stops sending
    /// new requests before the listener closes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drain_delay_ms: Option<u64>,
    /// Once it stops accepting, how long the server waits for the requests in flight to be
    /// answered (default 30000 ms); past it, the connections still busy are closed and logged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shutdown_timeout_ms: Option<u64>,
}
