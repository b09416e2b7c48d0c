//! [`UpstreamPool`]: every configured upstream, by name.

use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use indexmap::IndexMap;
use mcpflow_model::McpServer;
use serde_json::{Map, Value};

use tokio::sync::broadcast;

use crate::changes::{ContentChange, Feeds, UpstreamLog};
use crate::error::UpstreamError;
use crate::identity::Identity;
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
///
/// A reload ([`UpstreamPool::reconfigure`]) changes the upstreams of every clone at once: a
/// graph pinned to an earlier config version calls the upstream of that name as configured
/// now, as it would after a restart of mcpflow.
#[derive(Clone)]
pub struct UpstreamPool {
    shared: Arc<Shared>,
}

struct Shared {
    upstreams: RwLock<Arc<Upstreams>>,
    /// What the upstreams announce, for this pool's subscribers only.
    feeds: Arc<Feeds>,
    base_dir: PathBuf,
    options: PoolOptions,
}

/// The upstreams by name, each with the definition it was made from.
type Upstreams = IndexMap<String, (McpServer, Arc<Upstream>)>;

/// What [`UpstreamPool::reconfigure`] did, by server name.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Reconfigured {
    /// Defined anew: a new process or connection from the next call on.
    pub restarted: Vec<String>,
    pub added: Vec<String>,
    pub removed: Vec<String>,
}

impl Reconfigured {
    pub fn is_empty(&self) -> bool {
        self.restarted.is_empty() && self.added.is_empty() && self.removed.is_empty()
    }
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
            .into_iter()
            .map(|(name, server)| {
                let upstream = Upstream::new(&name, &server, &base_dir, options, feeds.clone());
                (name, (server, upstream))
            })
            .collect();
        UpstreamPool {
            shared: Arc::new(Shared {
                upstreams: RwLock::new(Arc::new(upstreams)),
                feeds,
                base_dir,
                options,
            }),
        }
    }

    /// The configured server names, in config order.
    pub fn servers(&self) -> Vec<String> {
        self.all().keys().cloned().collect()
    }

    /// Serves `servers` from now on: an upstream whose definition is unchanged keeps its
    /// process or connection (and its tool cache); a changed or removed one is shut down once
    /// the calls it is answering have ended (at most its call timeout later), and a changed or
    /// added one starts on its first call, as at start-up.
    pub fn reconfigure(&self, servers: IndexMap<String, McpServer>) -> Reconfigured {
        let mut done = Reconfigured::default();
        let mut retired = Vec::new();
        let mut guard = self
            .shared
            .upstreams
            .write()
            .unwrap_or_else(|e| e.into_inner());
        let before = guard.clone();
        let mut next = Upstreams::new();
        for (name, server) in servers {
            match before.get(&name) {
                Some((old, upstream)) if *old == server => {
                    next.insert(name, (server, upstream.clone()));
                    continue;
                }
                Some((_, upstream)) => {
                    retired.push(upstream.clone());
                    done.restarted.push(name.clone());
                }
                None => done.added.push(name.clone()),
            }
            let shared = &self.shared;
            let upstream = Upstream::new(
                &name,
                &server,
                &shared.base_dir,
                shared.options,
                shared.feeds.clone(),
            );
            next.insert(name, (server, upstream));
        }
        for (name, (_, upstream)) in before.iter() {
            if !next.contains_key(name) {
                retired.push(upstream.clone());
                done.removed.push(name.clone());
            }
        }
        *guard = Arc::new(next);
        drop(guard);
        drop(before);
        for upstream in retired {
            tokio::spawn(retire(upstream));
        }
        done
    }

    /// Calls `tool` on `server` (starting it if needed). A tool that reports failure is an
    /// `Ok` result with `is_error` set; `Err` means no result came back.
    pub async fn call_tool(
        &self,
        server: &str,
        tool: &str,
        args: Map<String, Value>,
    ) -> Result<ToolResult, UpstreamError> {
        self.upstream(server)?
            .call_tool(tool, args, None, None)
            .await
    }

    /// [`UpstreamPool::call_tool`] made for `identity` (see [`SendOptions::identity`](crate::passthrough::SendOptions::identity)), with
    /// the upstream's progress to `sink` when given (see
    /// [`UpstreamPool::call_tool_with_progress`]).
    pub async fn call_tool_for(
        &self,
        server: &str,
        tool: &str,
        args: Map<String, Value>,
        sink: Option<ProgressSink>,
        identity: Option<Identity>,
    ) -> Result<ToolResult, UpstreamError> {
        self.upstream(server)?
            .call_tool(tool, args, sink, identity)
            .await
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
            .call_tool(tool, args, Some(sink), None)
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
        self.shared.feeds.list_changes()
    }

    /// This pool's upstreams' resource and prompt list changes, as they arrive.
    pub fn content_changes(&self) -> broadcast::Receiver<ContentChange> {
        self.shared.feeds.content_changes()
    }

    /// The `notifications/message` this pool's upstreams send, each published before any
    /// answer the upstream sent after it is returned.
    pub fn logs(&self) -> broadcast::Receiver<UpstreamLog> {
        self.shared.feeds.logs()
    }

    /// What `server` said about itself in `initialize` (starting it if needed).
    pub async fn server_info(&self, server: &str) -> Result<ServerInfo, UpstreamError> {
        self.upstream(server)?.server_info().await
    }

    /// The process id of `server`'s current child, if one is running.
    pub fn pid(&self, server: &str) -> Option<u32> {
        self.all().get(server)?.1.pid()
    }

    /// The last lines `server`'s newest process wrote to stderr (up to 50 lines / 8 KiB).
    pub fn stderr_tail(&self, server: &str) -> Option<String> {
        self.all().get(server)?.1.stderr_tail()
    }

    /// Sends the `notifications/cancelled` of abandoned requests still pending (each
    /// connection within a short bound), closes every upstream's stdin, waits for the
    /// children to exit, then SIGTERMs and SIGKILLs the stragglers; starts under way are
    /// abandoned. Later calls fail with [`UpstreamError::ShutDown`]. A process should call it
    /// before it exits, or the cancels of its last abandoned calls may never leave.
    pub async fn shutdown(&self) {
        let all = self.all();
        futures::future::join_all(all.values().map(|(_, u)| u.shut_down())).await;
    }

    fn all(&self) -> Arc<Upstreams> {
        self.shared
            .upstreams
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The upstream named `server`. The caller's clone keeps it alive through its call: a
    /// reload retires an upstream only once no caller holds it.
    pub(crate) fn upstream(&self, server: &str) -> Result<Arc<Upstream>, UpstreamError> {
        let all = self.all();
        match all.get(server) {
            Some((_, upstream)) => Ok(upstream.clone()),
            None => Err(UpstreamError::UnknownServer {
                server: server.to_string(),
                known: if all.is_empty() {
                    "none".to_string()
                } else {
                    all.keys().cloned().collect::<Vec<_>>().join(", ")
                },
            }),
        }
    }
}

/// How often a retired upstream is checked for calls still under way.
const RETIRE_POLL: Duration = Duration::from_millis(50);

/// Shuts `upstream` down once nobody holds it (its calls under way have ended), or after its
/// call timeout: a reload never cuts a call short that could still finish.
async fn retire(upstream: Arc<Upstream>) {
    let deadline = tokio::time::Instant::now() + upstream.call_timeout;
    while Arc::strong_count(&upstream) > 1 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(RETIRE_POLL).await;
    }
    upstream.shut_down().await;
}

impl std::fmt::Debug for UpstreamPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpstreamPool")
            .field("servers", &self.servers())
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
