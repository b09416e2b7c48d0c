//! One configured upstream over time: started (or connected) on first use, shared by concurrent
//! callers, restarted after it dies or reconnected after its connection breaks, with a growing
//! pause when it keeps failing.
//!
//! A start runs on a task of its own: a caller that needs the connection (a call) waits for
//! it, a listing does not (`Upstream::listed` answers from what is known at once and owes the
//! pool's feed a list change for when the start succeeds), and a caller that gives up does
//! not abandon the start for the next one.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use mcpflow_model::McpServer;
use tokio_util::sync::CancellationToken;

use crate::PoolOptions;
use crate::catalog::Catalog;
use crate::changes::Feeds;
use crate::connection::Connection;
use crate::error::UpstreamError;
use crate::identity::{CallerHeaders, Identity};
use crate::inbound::Inbound;
use crate::process::CommandSpec;
use crate::remote::RemoteSpec;
use crate::result::{ServerInfo, ToolInfo};
use crate::stderr::StderrTail;

/// First pause between restarts of an upstream that keeps failing; it doubles up to the max.
const RESTART_BACKOFF: Duration = Duration::from_millis(250);
const RESTART_BACKOFF_MAX: Duration = Duration::from_secs(8);

pub(crate) struct Upstream {
    pub(crate) name: Arc<str>,
    /// This upstream, for the task a start runs on (it must not keep the pool's children
    /// alive: dropped with the pool, the start is abandoned and its child killed).
    me: Weak<Upstream>,
    transport: Transport,
    /// What mcpflow answers to this server's `roots/list` when no client can (as URIs).
    roots: Arc<[String]>,
    /// One request's deadline, unless its caller sets another.
    pub(crate) call_timeout: Duration,
    connect_timeout: Duration,
    options: PoolOptions,
    slot: Mutex<Slot>,
    /// Start failures and unexpected deaths since the last successful request.
    failures: AtomicU32,
    /// A listing went without this upstream's tools while it was (re)starting: its next
    /// successful start announces a list change, so the listing is made again.
    change_owed: AtomicBool,
    /// A connection was made before: the next one is a restart (counted in the metrics).
    connected_before: AtomicBool,
    /// Cancelled when the upstream is shut down or dropped: a start under way is abandoned.
    stop: CancellationToken,
    /// Stderr of the newest process, kept after it dies for [`Upstream::stderr_tail`].
    stderr: Mutex<Option<Arc<StderrTail>>>,
    /// The tool list, shared by the successive connections.
    pub(crate) catalog: Arc<Catalog>,
    /// The pool's feeds, where the connections announce list changes and log lines.
    feeds: Arc<Feeds>,
}

enum Transport {
    Stdio(CommandSpec),
    Remote(RemoteSpec),
}

/// A start under way, shared by every caller waiting for it.
type Start = Shared<BoxFuture<'static, Result<Arc<Connection>, UpstreamError>>>;

#[derive(Default)]
struct Slot {
    connection: Option<Arc<Connection>>,
    starting: Option<Start>,
    last_error: Option<UpstreamError>,
    last_failure: Option<Instant>,
    shut_down: bool,
}

/// The connection now, or the start to wait for.
pub(crate) enum Ready {
    Now(Arc<Connection>),
    Later(Start),
}

impl Upstream {
    pub fn new(
        name: &str,
        server: &McpServer,
        base_dir: &Path,
        options: PoolOptions,
        feeds: Arc<Feeds>,
    ) -> Arc<Upstream> {
        let roots = match server {
            McpServer::Stdio(stdio) => &stdio.roots,
            McpServer::Remote(remote) => &remote.roots,
        };
        let roots = roots.iter().map(|root| root_uri(root, base_dir)).collect();
        let (transport, timeout_ms, connect_timeout) = match server {
            McpServer::Stdio(stdio) => {
                let cwd = stdio.cwd.as_ref().map(|cwd| base_dir.join(cwd));
                // A relative program path with a directory part is looked up from the child's
                // `cwd` when one is given; `Command` leaves that case platform-defined.
                let program = match &cwd {
                    Some(cwd)
                        if Path::new(&stdio.command).is_relative()
                            && Path::new(&stdio.command).components().count() > 1 =>
                    {
                        cwd.join(&stdio.command).into_os_string()
                    }
                    _ => stdio.command.clone().into(),
                };
                let spec = CommandSpec {
                    program,
                    args: stdio.args.clone(),
                    env: stdio.env.clone(),
                    cwd,
                    display: display_command(&stdio.command, &stdio.args),
                };
                let connect_timeout = stdio.connect_timeout_ms.map(Duration::from_millis);
                (Transport::Stdio(spec), stdio.timeout_ms, connect_timeout)
            }
            McpServer::Remote(remote) => {
                let spec = RemoteSpec::new(remote);
                let connect_timeout = spec.connect_timeout;
                (Transport::Remote(spec), remote.timeout_ms, connect_timeout)
            }
        };
        Arc::new_cyclic(|me| Upstream {
            name: name.into(),
            me: me.clone(),
            transport,
            roots,
            call_timeout: timeout_ms.map_or(options.call_timeout, Duration::from_millis),
            connect_timeout: connect_timeout.unwrap_or(options.connect_timeout),
            options,
            slot: Mutex::new(Slot::default()),
            failures: AtomicU32::new(0),
            change_owed: AtomicBool::new(false),
            connected_before: AtomicBool::new(false),
            stop: CancellationToken::new(),
            stderr: Mutex::new(None),
            catalog: Arc::default(),
            feeds,
        })
    }

    /// The catalog's tools, in the crate's plain view.
    /// This upstream's `${caller.…}` headers rendered for `identity` (remote upstreams only).
    pub(crate) fn caller_headers(&self, identity: &Identity) -> Option<CallerHeaders> {
        match &self.transport {
            Transport::Remote(spec) if !spec.caller_headers.is_empty() => {
                CallerHeaders::render(&self.name, &spec.caller_headers, identity)
            }
            _ => None,
        }
    }

    pub async fn list_tools(&self) -> Result<Vec<ToolInfo>, UpstreamError> {
        let tools = self.tools().await?;
        Ok(tools.iter().map(ToolInfo::from_rmcp).collect())
    }

    /// Why a tool listing goes without this upstream while it is (re)starting (see
    /// [`Upstream::not_connected`]); its next successful start owes a list change.
    pub(crate) fn missed_listing(&self) -> UpstreamError {
        self.change_owed.store(true, Ordering::Release);
        self.not_connected()
    }

    /// Why a request that would not wait goes without this upstream while it is
    /// (re)starting: its last start's failure, if it failed.
    pub(crate) fn not_connected(&self) -> UpstreamError {
        let slot = self.slot();
        slot.last_error
            .clone()
            .unwrap_or_else(|| UpstreamError::Starting {
                server: self.name.to_string(),
            })
    }

    /// Waits up to `patience` for a start under way (starting one if needed); true when the
    /// upstream is connected.
    pub(crate) async fn started_within(&self, patience: Duration) -> bool {
        let start = match self.ready() {
            Ok(Ready::Now(_)) => return true,
            Ok(Ready::Later(start)) => start,
            Err(_) => return false,
        };
        matches!(tokio::time::timeout(patience, start).await, Ok(Ok(_)))
    }

    pub async fn server_info(&self) -> Result<ServerInfo, UpstreamError> {
        Ok(self.connection().await?.info().clone())
    }

    /// None while a start is under way: there is no running child to name yet.
    pub fn pid(&self) -> Option<u32> {
        let slot = self.slot();
        slot.connection
            .as_ref()
            .filter(|c| c.is_alive())
            .and_then(|c| c.pid())
    }

    pub fn stderr_tail(&self) -> Option<String> {
        let stderr = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        stderr.as_ref().map(|tail| tail.snapshot())
    }

    /// Stops the process for good (a start under way is abandoned, its child killed); later
    /// calls fail with [`UpstreamError::ShutDown`].
    pub async fn shut_down(&self) {
        self.stop.cancel();
        let connection = {
            let mut slot = self.slot();
            slot.shut_down = true;
            slot.starting = None;
            slot.connection.take()
        };
        if let Some(connection) = connection {
            connection.shut_down(self.options.shutdown_grace).await;
        }
    }

    pub(crate) fn note<T>(&self, result: &Result<T, UpstreamError>) {
        // Any answer, even a refusal, shows the server is up; only deaths count as failures.
        if !matches!(
            result,
            Err(UpstreamError::Crashed { .. } | UpstreamError::Disconnected { .. })
        ) {
            self.failures.store(0, Ordering::Relaxed);
        }
    }

    /// The live connection, started now if there is none. Callers that arrive while a start is
    /// under way wait for it and share its outcome, so one upstream never has two children.
    pub(crate) async fn connection(&self) -> Result<Arc<Connection>, UpstreamError> {
        match self.ready()? {
            Ready::Now(connection) => Ok(connection),
            Ready::Later(start) => start.await,
        }
    }

    fn slot(&self) -> MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The live connection, or the start under way, or a new start (after the pause a
    /// failing upstream has earned) on a task of its own.
    pub(crate) fn ready(&self) -> Result<Ready, UpstreamError> {
        let mut slot = self.slot();
        if slot.shut_down {
            return Err(UpstreamError::ShutDown {
                server: self.name.to_string(),
            });
        }
        if let Some(connection) = &slot.connection {
            if connection.is_alive() {
                return Ok(Ready::Now(connection.clone()));
            }
            tracing::info!(server = %self.name, "upstream connection is gone; starting a new one");
            mcpflow_telemetry::metrics::upstream_connection(&self.name, false, false);
            // The next session may list other tools than this one did.
            self.catalog.invalidate();
            slot.connection = None;
            slot.last_failure = Some(Instant::now());
            self.failures.fetch_add(1, Ordering::Relaxed);
        }
        if let Some(start) = &slot.starting {
            return Ok(Ready::Later(start.clone()));
        }
        let failures = self.failures.load(Ordering::Relaxed);
        let pause = slot.last_failure.map_or(Duration::ZERO, |last| {
            restart_pause(failures).saturating_sub(last.elapsed())
        });
        if !pause.is_zero() {
            tracing::info!(server = %self.name, failures, ?pause, "upstream keeps failing; pausing before the next start");
        }
        let start = self.start(pause);
        slot.starting = Some(start.clone());
        Ok(Ready::Later(start))
    }

    /// Spawns one start: the pause, then the child and `initialize` (or the remote
    /// handshake) within the connect timeout.
    fn start(&self, pause: Duration) -> Start {
        let inbound = Inbound::new(self.name.clone(), self.catalog.clone(), self.feeds.clone());
        let (name, roots, timeout) = (self.name.clone(), self.roots.clone(), self.connect_timeout);
        let connect: BoxFuture<'static, Result<Connection, UpstreamError>> = match &self.transport {
            Transport::Stdio(spec) => {
                let stderr = Arc::new(StderrTail::default());
                *self.stderr.lock().unwrap_or_else(|e| e.into_inner()) = Some(stderr.clone());
                let spec = spec.clone();
                let limits = (timeout, self.options.max_line_bytes);
                async move {
                    Connection::connect(&name, &spec, limits, stderr, inbound, roots).await
                }
                .boxed()
            }
            Transport::Remote(spec) => {
                let spec = spec.clone();
                async move {
                    Connection::connect_remote(&name, &spec, timeout, inbound, roots).await
                }
                .boxed()
            }
        };
        let (me, stop, server) = (self.me.clone(), self.stop.clone(), self.name.to_string());
        let task = tokio::spawn(async move {
            let outcome = tokio::select! {
                outcome = async {
                    tokio::time::sleep(pause).await;
                    connect.await
                } => outcome,
                () = stop.cancelled() => Err(UpstreamError::ShutDown { server: server.clone() }),
            };
            match me.upgrade() {
                Some(upstream) => upstream.started(outcome),
                None => Err(UpstreamError::ShutDown { server }),
            }
        });
        let server = self.name.to_string();
        async move {
            task.await
                .unwrap_or_else(|_| Err(UpstreamError::ShutDown { server }))
        }
        .boxed()
        .shared()
    }

    /// Takes the outcome of a start: the new connection in the slot, or the failure for the
    /// pause before the next start.
    fn started(
        &self,
        outcome: Result<Connection, UpstreamError>,
    ) -> Result<Arc<Connection>, UpstreamError> {
        let mut slot = self.slot();
        slot.starting = None;
        if slot.shut_down {
            // Dropped here, which kills the child.
            return Err(UpstreamError::ShutDown {
                server: self.name.to_string(),
            });
        }
        match outcome {
            Ok(connection) => {
                let connection = Arc::new(connection);
                slot.connection = Some(connection.clone());
                slot.last_error = None;
                drop(slot);
                let restart = self.connected_before.swap(true, Ordering::Relaxed);
                mcpflow_telemetry::metrics::upstream_connection(&self.name, true, restart);
                if self.change_owed.swap(false, Ordering::AcqRel) {
                    self.feeds.announce_change(&self.name);
                }
                Ok(connection)
            }
            Err(error) => {
                tracing::warn!(server = %self.name, %error, "upstream failed to start");
                mcpflow_telemetry::metrics::upstream_connection(&self.name, false, false);
                self.failures.fetch_add(1, Ordering::Relaxed);
                slot.last_failure = Some(Instant::now());
                slot.last_error = Some(error.clone());
                Err(error)
            }
        }
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        // A start under way holds no reference: without this it would finish for nobody.
        self.stop.cancel();
    }
}

/// No pause for the first restart (a crash mid-call should not slow the next call), then a
/// doubling pause while the server keeps failing, so a broken server is not respawned in a loop.
fn restart_pause(failures: u32) -> Duration {
    if failures <= 1 {
        return Duration::ZERO;
    }
    let doublings = (failures - 2).min(16);
    RESTART_BACKOFF
        .saturating_mul(1 << doublings)
        .min(RESTART_BACKOFF_MAX)
}

/// `program arg…`, quoting arguments that would otherwise read ambiguously.
fn display_command(command: &str, args: &[String]) -> String {
    let quote = |s: &str| {
        if s.is_empty()
            || s.chars()
                .any(|c| c.is_whitespace() || c == '\'' || c == '"')
        {
            format!("'{}'", s.replace('\'', r"'\''"))
        } else {
            s.to_string()
        }
    };
    std::iter::once(command)
        .chain(args.iter().map(String::as_str))
        .map(quote)
        .collect::<Vec<_>>()
        .join(" ")
}

/// A configured root as a URI: a URI as written, a path as a `file://` URI of it resolved
/// against the config file's directory.
fn root_uri(root: &str, base_dir: &Path) -> String {
    if root.contains("://") {
        return root.to_owned();
    }
    let path = base_dir.join(root);
    let path = std::path::absolute(&path).unwrap_or(path);
    reqwest::Url::from_file_path(&path)
        .map_or_else(|()| format!("file://{}", path.display()), String::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restart_pause_starts_at_zero_and_is_capped() {
        assert_eq!(restart_pause(0), Duration::ZERO);
        assert_eq!(restart_pause(1), Duration::ZERO);
        assert_eq!(restart_pause(2), RESTART_BACKOFF);
        assert_eq!(restart_pause(3), RESTART_BACKOFF * 2);
        assert_eq!(restart_pause(40), RESTART_BACKOFF_MAX);
        assert_eq!(restart_pause(u32::MAX), RESTART_BACKOFF_MAX);
    }

    #[test]
    fn display_command_quotes_only_when_needed() {
        let args = vec!["-y".to_string(), "a dir".to_string(), String::new()];
        assert_eq!(display_command("npx", &args), "npx -y 'a dir' ''");
    }
}
