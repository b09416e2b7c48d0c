//! mcpflow's MCP client side: a pool of connections to the upstream servers a config declares.
//!
//! ```no_run
//! # async fn demo(config: mcpflow_config::model::Config) -> Result<(), mcpflow_upstream::UpstreamError> {
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
//! - A stdio upstream starts on first use, once: concurrent first calls share one child, and
//!   all calls share its one session (rmcp multiplexes them by request id).
//! - `initialize` offers protocol 2025-11-25 and accepts any older version the server answers
//!   with; rmcp's stateless 2026-07-28 default is not offered, since few servers speak it.
//! - A child that dies fails the calls in flight at once with
//!   [`UpstreamError::Crashed`] and its stderr tail, and is restarted on the next call (with a
//!   growing pause if it keeps dying). A call that outlives `timeoutMs` is cancelled upstream
//!   (`notifications/cancelled`) and fails with [`UpstreamError::Timeout`].
//! - Each child runs in its own process group; dropping the pool kills the groups.
//! - Results come back as plain JSON ([`ToolResult`], [`ToolInfo`]): rmcp's types stay inside.
//!
//! Remote upstreams (`streamableHttp`, `sse`) are not supported yet and fail with
//! [`UpstreamError::Unsupported`].

mod client;
mod connection;
mod error;
mod pool;
mod process;
mod result;
mod stderr;
mod upstream;

pub use client::{ProgressSink, UpstreamProgress};
pub use error::UpstreamError;
pub use pool::{PoolOptions, UpstreamPool};
pub use result::{ServerInfo, ToolInfo, ToolResult};
