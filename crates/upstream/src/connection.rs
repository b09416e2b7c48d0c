//! One live MCP session with one stdio upstream: handshake, requests with a deadline, and
//! prompt failure when the child dies.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotification, CancelledNotificationParam,
    ClientNotification, ClientRequest, JsonObject, RequestId, ServerResult,
};
use rmcp::service::{ClientInitializeError, Peer, PeerRequestOptions, RunningService};
use rmcp::{RoleClient, ServiceError, ServiceExt};

use crate::client::{ClientEvents, ProgressRoutes, ProgressSink, ToolCache};
use crate::error::UpstreamError;
use crate::process::{self, ChildProcess, CommandSpec, Spawned};
use crate::result::{ServerInfo, ToolInfo, ToolResult};
use crate::stderr::StderrTail;

/// How long a dead child may take to be reaped before we describe it anyway.
const DEATH_WAIT: Duration = Duration::from_secs(1);

pub(crate) struct Connection {
    server: Arc<str>,
    service: RunningService<RoleClient, ClientEvents>,
    process: ChildProcess,
    tools: Arc<ToolCache>,
    progress: Arc<ProgressRoutes>,
    info: ServerInfo,
}

impl Connection {
    /// Spawns the child and completes `initialize` within `timeout`.
    pub async fn connect(
        server: &Arc<str>,
        spec: &CommandSpec,
        timeout: Duration,
        stderr: Arc<StderrTail>,
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
        let tools = Arc::new(ToolCache::default());
        let progress = Arc::new(ProgressRoutes::default());
        let handshake = ClientEvents::new(server.clone(), tools.clone(), progress.clone())
            .serve((stdout, stdin));
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
        if info.protocol_version.as_str() > crate::client::PROTOCOL_VERSION.as_str() {
            tracing::warn!(
                server = %server,
                protocol = %info.protocol_version,
                "upstream answered `initialize` with a newer protocol version than offered"
            );
        }
        tracing::info!(
            server = %server,
            pid = process.pid(),
            protocol = %info.protocol_version,
            upstream = info.name.as_deref().unwrap_or("?"),
            "upstream connected"
        );
        Ok(Connection {
            server: server.clone(),
            service,
            process,
            tools,
            progress,
            info,
        })
    }

    pub fn info(&self) -> &ServerInfo {
        &self.info
    }

    pub fn pid(&self) -> Option<u32> {
        self.process.pid()
    }

    /// False once the child exited or the session ended; the next call then starts a new one.
    pub fn is_alive(&self) -> bool {
        !self.process.has_exited()
            && !self.service.is_closed()
            && !self.service.is_transport_closed()
    }

    pub async fn call_tool(
        &self,
        tool: &str,
        args: JsonObject,
        timeout: Duration,
    ) -> Result<ToolResult, UpstreamError> {
        let operation = format!("tools/call {tool}");
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(args);
        let result = self
            .request(&operation, timeout, self.service.call_tool(params))
            .await?;
        ToolResult::from_rmcp(result).map_err(|error| UpstreamError::Protocol {
            server: self.server.to_string(),
            operation,
            reason: error.to_string(),
        })
    }

    /// Like [`Connection::call_tool`], sending the upstream's progress notifications about this
    /// call to `sink`.
    pub async fn call_tool_with_progress(
        &self,
        tool: &str,
        args: JsonObject,
        timeout: Duration,
        sink: ProgressSink,
    ) -> Result<ToolResult, UpstreamError> {
        let operation = format!("tools/call {tool}");
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(args);
        let peer = self.service.peer();
        let call = async move {
            let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
            let handle = peer
                .send_request_with_option(request, PeerRequestOptions::no_options())
                .await?;
            let _route = self.progress.register(handle.progress_token.clone(), sink);
            // rmcp's own call_tool cancels an abandoned request; this path must do it itself.
            let mut guard = CancelOnDrop {
                peer,
                id: Some(handle.id.clone()),
            };
            let response = handle.await_response().await;
            guard.id = None;
            match response? {
                ServerResult::CallToolResult(result) => Ok(result),
                _ => Err(ServiceError::UnexpectedResponse),
            }
        };
        let result = self.request(&operation, timeout, call).await?;
        ToolResult::from_rmcp(result).map_err(|error| UpstreamError::Protocol {
            server: self.server.to_string(),
            operation,
            reason: error.to_string(),
        })
    }

    /// All pages of `tools/list`, served from the cache until the upstream announces a change.
    pub async fn list_tools(&self, timeout: Duration) -> Result<Arc<Vec<ToolInfo>>, UpstreamError> {
        let generation = match self.tools.get() {
            Ok(tools) => return Ok(tools),
            Err(generation) => generation,
        };
        let tools = self
            .request("tools/list", timeout, self.service.list_all_tools())
            .await?;
        let tools = Arc::new(
            tools
                .into_iter()
                .map(ToolInfo::from_rmcp)
                .collect::<Vec<_>>(),
        );
        self.tools.store(generation, tools.clone());
        Ok(tools)
    }

    /// Runs one request against the deadline and the child's life, whichever ends first.
    ///
    /// On timeout the request future is dropped, and rmcp then sends `notifications/cancelled`
    /// for it, so the upstream can stop working on an answer nobody will read.
    async fn request<T>(
        &self,
        operation: &str,
        timeout: Duration,
        request: impl Future<Output = Result<T, ServiceError>>,
    ) -> Result<T, UpstreamError> {
        let mut request = std::pin::pin!(request);
        let outcome = tokio::select! {
            biased;
            outcome = &mut request => outcome,
            () = self.process.exited() => {
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
        Err(match error {
            ServiceError::McpError(error) => UpstreamError::Rejected {
                server,
                operation,
                code: error.code.0,
                message: error.message.into_owned(),
            },
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                let (status, stderr_tail) = self.process.death_report(DEATH_WAIT).await;
                tracing::warn!(server = %server, %status, "upstream died during `{operation}`");
                UpstreamError::Crashed {
                    server,
                    status,
                    operation,
                    stderr_tail,
                }
            }
            other => UpstreamError::Protocol {
                server,
                operation,
                reason: other.to_string(),
            },
        })
    }

    /// Closes stdin, then waits for the child to exit, escalating to SIGTERM and SIGKILL.
    pub async fn shut_down(&self, grace: Duration) {
        self.service.cancellation_token().cancel();
        self.process.terminate(grace).await;
    }
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
        ClientInitializeError::JsonRpcError(error) => format!(
            "it rejected `initialize`: {} (JSON-RPC error {})",
            error.message, error.code.0
        ),
        other => format!("`initialize` failed: {other}"),
    }
}

/// Sends `notifications/cancelled` for a request whose answer nobody will read any more.
struct CancelOnDrop<'a> {
    peer: &'a Peer<RoleClient>,
    id: Option<RequestId>,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        let (Some(id), Ok(runtime)) = (self.id.take(), tokio::runtime::Handle::try_current())
        else {
            return;
        };
        let peer = self.peer.clone();
        let notification = CancelledNotification::new(CancelledNotificationParam::new(
            Some(id),
            Some("request abandoned by mcpflow".to_owned()),
        ));
        runtime.spawn(async move {
            let _ = peer
                .send_notification(ClientNotification::CancelledNotification(notification))
                .await;
        });
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}
