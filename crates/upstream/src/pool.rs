//! [`UpstreamPool`]: every configured upstream, by name.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use indexmap::IndexMap;
use mcpflow_model::McpServer;
use serde_json::{Map, Value};

use tokio::sync::broadcast;

use crate::changes::{Feeds, UpstreamLog};
use crate::error::UpstreamError;
use crate::inbound::ProgressSink;
use crate::result::{ServerInfo, ToolInfo, ToolResult};
use crate::upstream::Upstream;

/// Timeouts of a pool. Per-server `timeoutMs` overrides `call_timeout`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolOptions {
    /// Spawn plus `initialize` (connecting plus the handshake for a remote server) when the
    /// server sets no `connectTimeoutMs`; a server that takes longer is reported as not
    /// starting.
    pub connect_timeout: Duration,
    /// One request (`tools/call`, `tools/list`) when the server sets no `timeoutMs`.
    pub call_timeout: Duration,
    /// At shutdown, how long to wait after closing stdin, and again after SIGTERM.
    pub shutdown_grace: Duration,
    /// The longest line (one JSON-RPC message) read from a stdio upstream; a longer one is
    /// skipped and fails the request it answers.
    pub max_line_bytes: usize,
}

impl Default for PoolOptions {
    fn default() -> Self {
        PoolOptions {
            connect_timeout: Duration::from_secs(30),
            call_timeout: Duration::from_secs(60),
            shutdown_grace: Duration::from_secs(2),
            max_line_bytes: 16 * 1024 * 1024,
        }
    }
}

/// The MCP client side of mcpflow: one lazily started connection per configured upstream,
/// shared by all callers. Cloning is cheap and clones share the connections.
///
/// Dropping the last clone kills every child process (and what they started); call
/// [`UpstreamPool::shutdown`] first for the polite stdin-close / SIGTERM sequence.
#[derive(Clone)]
pub struct UpstreamPool {
    upstreams: Arc<IndexMap<String, Arc<Upstream>>>,
    /// What the upstreams announce, for this pool's subscribers only.
    feeds: Arc<Feeds>,
}

impl UpstreamPool {
    /// A pool over `servers`; relative `cwd`s resolve against `base_dir` (the config file's
    /// directory). Nothing starts until the first call.
    pub fn new(servers: IndexMap<String, McpServer>, base_dir: PathBuf) -> UpstreamPool {
        UpstreamPool::with_options(servers, base_dir, PoolOptions::default())
    }

    pub fn with_options(
        servers: IndexMap<String, McpServer>,
        base_dir: PathBuf,
        options: PoolOptions,
    ) -> UpstreamPool {
        let feeds = Arc::new(Feeds::default());
        let upstreams = servers
            .iter()
            .map(|(name, server)| {
                let upstream = Upstream::new(name, server, &base_dir, options, feeds.clone());
                (name.clone(), upstream)
            })
            .collect();
        UpstreamPool {
            upstreams: Arc::new(upstreams),
            feeds,
        }
    }

    /// The configured server names, in config order.
    pub fn servers(&self) -> impl Iterator<Item = &str> {
        self.upstreams.keys().map(String::as_str)
    }

    /// Calls `tool` on `server` (starting it if needed). A tool that reports failure is an
    /// `Ok` result with `is_error` set; `Err` means no result came back.
    pub async fn call_tool(
        &self,
        server: &str,
        tool: &str,
        args: Map<String, Value>,
    ) -> Result<ToolResult, UpstreamError> {
        self.upstream(server)?.call_tool(tool, args, None).await
    }

    /// [`UpstreamPool::call_tool`], sending the upstream's `notifications/progress` about this
    /// call to `sink` (rmcp replaces the progress token; it is mapped back here). Every
    /// notification sent before the answer is in `sink` when the answer is returned.
    pub async fn call_tool_with_progress(
        &self,
        server: &str,
        tool: &str,
        args: Map<String, Value>,
        sink: ProgressSink,
    ) -> Result<ToolResult, UpstreamError> {
        self.upstream(server)?
            .call_tool(tool, args, Some(sink))
            .await
    }

    /// Every tool `server` lists (all pages), cached until the server says its list changed.
    pub async fn list_tools(&self, server: &str) -> Result<Vec<ToolInfo>, UpstreamError> {
        self.upstream(server)?.list_tools().await
    }

    /// Starts `server` if it is not connected and waits up to `patience` for it; true when it
    /// is connected. The start goes on in the background either way.
    pub async fn started_within(&self, server: &str, patience: Duration) -> bool {
        match self.upstream(server) {
            Ok(upstream) => upstream.started_within(patience).await,
            Err(_) => false,
        }
    }

    /// The names of this pool's upstreams that said `notifications/tools/list_changed`, as
    /// they say it; the pool's tool cache for that upstream is dropped before the name is sent.
    pub fn list_changes(&self) -> broadcast::Receiver<Arc<str>> {
        self.feeds.list_changes()
    }

    /// The `notifications/message` this pool's upstreams send, each published before any
    /// answer the upstream sent after it is returned.
    pub fn logs(&self) -> broadcast::Receiver<UpstreamLog> {
        self.feeds.logs()
    }

    /// What `server` said about itself in `initialize` (starting it if needed).
    pub async fn server_info(&self, server: &str) -> Result<ServerInfo, UpstreamError> {
        self.upstream(server)?.server_info().await
    }

    /// The process id of `server`'s current child, if one is running.
    pub fn pid(&self, server: &str) -> Option<u32> {
        self.upstreams.get(server)?.pid()
    }

    /// The last lines `server`'s newest process wrote to stderr (up to 50 lines / 8 KiB).
    pub fn stderr_tail(&self, server: &str) -> Option<String> {
        self.upstreams.get(server)?.stderr_tail()
    }

    /// Sends the `notifications/cancelled` of abandoned requests still pending (each
    /// connection within a short bound), closes every upstream's stdin, waits for the
    /// children to exit, then SIGTERMs and SIGKILLs the stragglers; starts under way are
    /// abandoned. Later calls fail with [`UpstreamError::ShutDown`]. A process should call it
    /// before it exits, or the cancels of its last abandoned calls may never leave.
    pub async fn shutdown(&self) {
        futures::future::join_all(self.upstreams.values().map(|u| u.shut_down())).await;
    }

    pub(crate) fn upstream(&self, server: &str) -> Result<&Arc<Upstream>, UpstreamError> {
        self.upstreams
            .get(server)
            .ok_or_else(|| UpstreamError::UnknownServer {
                server: server.to_string(),
                known: if self.upstreams.is_empty() {
                    "none".to_string()
                } else {
                    self.servers().collect::<Vec<_>>().join(", ")
                },
            })
    }
}

impl std::fmt::Debug for UpstreamPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpstreamPool")
            .field("servers", &self.servers().collect::<Vec<_>>())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn send_sync<T: Send + Sync>(_: &T) {}
    fn send<T: Send>(_: T) {}

    /// The engine shares one pool across tasks and spawns futures that call it.
    #[test]
    fn the_pool_and_its_futures_can_cross_threads() {
        let pool = UpstreamPool::new(IndexMap::new(), PathBuf::from("."));
        send_sync(&pool);
        send(pool.call_tool("s", "t", Map::new()));
        send(pool.list_tools("s"));
        send(pool.server_info("s"));
        send(pool.shutdown());
    }
}
