//! mcpflow's MCP client side: a pool of connections to the upstream servers a config declares.
//!
//! ```no_run
//! # async fn demo(config: mcpflow_model::Config) -> Result<(), mcpflow_upstream::UpstreamError> {
//! use mcpflow_upstream::UpstreamPool;
//!
//! let pool = UpstreamPool::new(config.mcp_servers.clone(), "/path/of/the/config".into());
//! let tools = pool.list_tools("filesystem").await?;
//! let mut args = serde_json::Map::new();
//! args.insert("path".into(), "/tmp".into());
//! let result = pool.call_tool("filesystem", "list_directory", args).await?;
//! println!("{} tools; is_error: {}; {:?}", tools.len(), result.is_error, result.content);
//! pool.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! What the pool guarantees:
//! - An upstream starts (stdio) or connects (remote) on first use, once: concurrent first calls
//!   share one child or connection, and all calls share its one session (rmcp multiplexes them
//!   by request id).
//! - Stdio: `initialize` offers protocol 2025-11-25 and accepts any older version the server
//!   answers with; rmcp's stateless 2026-07-28 default is not offered, since few servers speak it.
//! - `streamableHttp`: `initialize` with 2025-11-25 first (every server of that era and every
//!   server of both eras answers it); a server that refuses it with a JSON-RPC error is asked
//!   `server/discover` and spoken to statelessly in 2026-07-28. A session the server answers
//!   with 404, or refuses with an error that names no request (the TypeScript SDK's examples
//!   answer 400 so), is re-initialized by rmcp and the request retried. A request that failed
//!   unprocessed otherwise (refused as "no valid session" with its id, or never delivered
//!   because the connection could not be opened) is retried once on a new connection.
//! - `sse` (legacy HTTP+SSE, 2024-11-05): `GET` the URL, `POST` to the endpoint it names; the
//!   session lasts as long as that stream.
//! - Remote `headers` go on every request and are never logged; printed URLs carry no user info
//!   or query. `connectTimeoutMs` bounds connecting plus the handshake.
//! - A child that dies fails the calls in flight at once with
//!   [`UpstreamError::Crashed`] and its stderr tail, and is restarted on the next call (with a
//!   growing pause if it keeps dying). A remote connection that breaks fails its calls with
//!   [`UpstreamError::Disconnected`] and is reconnected on the next call, with the same pause.
//!   A call that outlives `timeoutMs` is cancelled upstream (`notifications/cancelled`) and
//!   fails with [`UpstreamError::Timeout`]. A stdio answer that cannot be read (not JSON-RPC,
//!   over the line cap, under an id never sent) fails its call at once with
//!   [`UpstreamError::BrokenAnswer`] (see `lines.rs`).
//! - Each child runs in its own process group; dropping the pool kills the groups.
//! - Results come back as plain JSON ([`ToolResult`], [`ToolInfo`]): rmcp's types stay inside.
//! - Every request takes one path ([`UpstreamPool::send`] with [`passthrough::SendOptions`];
//!   `call_tool` and `list_tools` build on it): counted in flight, its progress routed, its
//!   deadline kept, cancelled upstream when abandoned.
//! - An upstream's requests to the client (sampling, elicitation, roots) during a request sent
//!   with a [`Caller`] go to that caller when they can be told apart from other clients'
//!   calls, and are refused otherwise (see `relay.rs`); during a graph's own calls they are
//!   refused.
//! - A request of a 2026-07-28 client, sent with [`passthrough::SendOptions::stateless`],
//!   carries that client's own `_meta` (capabilities, log level, …) to an upstream whose
//!   session speaks 2026-07-28, and its answer ("input required" included) comes back whole;
//!   a 2025-only upstream gets it in 2025 terms (see `stateless.rs`).
//! - Notifications are handled in the order they arrive (see `inbound.rs`): every progress
//!   line or log line an upstream sent before an answer has reached its channel when the
//!   answer is returned, and a tool list change has dropped the cached list before anyone
//!   hears of it.
//! - Each upstream's tools are cached once, in the pool (see `catalog.rs`); list changes and
//!   log lines are feeds of the pool ([`UpstreamPool::list_changes`],
//!   [`UpstreamPool::logs`]), not of the process.
//! - [`search`] is the one scored search over the catalog's tools (plain data, no rmcp type),
//!   which the authoring toolkit and the gateway's tool search share.

mod cancel;
mod catalog;
mod cause;
mod changes;
mod client;
mod connection;
mod error;
mod identity;
mod inbound;
mod legacy_sse;
mod lines;
pub mod passthrough;
mod pool;
mod process;
mod relay;
mod remote;
mod result;
pub mod search;
mod send;
mod session_http;
mod stateless;
mod stderr;
mod upstream;

pub use changes::{ContentChange, ContentList, UpstreamLog};
pub use error::UpstreamError;
pub use identity::Identity;
pub use inbound::{ProgressSink, UpstreamProgress};
pub use passthrough::Caller;
pub use pool::{PoolOptions, Reconfigured, UpstreamPool};
pub use result::{ServerInfo, ToolInfo, ToolResult};
