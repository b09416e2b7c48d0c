//! The stdio transport: one JSON-RPC message a line on stdin, answers on stdout.
//!
//! Ours rather than rmcp's `async_rw`, for two bounds. What goes out waits in a bounded queue
//! (`outgoing`), and stdin is not read while that queue is full: a client that keeps sending
//! but stops reading its answers is held back by its own pipe, and closed after
//! [`StdioOptions::write_timeout`] without progress. And a line that cannot be parsed because
//! it is too large or nested too deep is answered (a JSON-RPC error with the request's id when
//! `scan` finds it, else id null) instead of being dropped in silence.

mod outgoing;
mod scan;

use std::sync::Arc;
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, BufReader};
use tokio::sync::watch;

use crate::error::ServerError;
use crate::live::LiveServer;
use outgoing::{Outgoing, Room};
use scan::Scan;

/// Bounds of the stdio transport.
#[derive(Debug, Clone)]
pub struct StdioOptions {
    /// Longest message read (one line); a longer one is answered with an error and skipped.
    pub max_message_bytes: usize,
    /// Messages waiting for stdout at which stdin stops being read.
    pub max_queued_messages: usize,
    /// Bytes waiting for stdout at which stdin stops being read; at 8× this the connection
    /// is closed (answers and notifications of work already started kept coming).
    pub max_queued_bytes: usize,
    /// How long the queue may stay full without a message written before the connection is
    /// closed.
    pub write_timeout: Duration,
    /// Who the client is, under access control (`auth:`; the binary reads `MCPFLOW_TOKEN`):
    /// every request is checked against its scopes as over HTTP and carries it to the handler
    /// (tool globs). `None`: no access control.
    pub principal: Option<mcpflow_auth::Principal>,
    /// What the client presented (`MCPFLOW_TOKEN`), for upstreams marked `forwardCallerToken`.
    pub credential: Option<mcpflow_auth::Credential>,
}

impl Default for StdioOptions {
    fn default() -> Self {
        StdioOptions {
            // What rmcp accepts, and what the Streamable HTTP client takes as one event.
            max_message_bytes: 16 * 1024 * 1024,
            max_queued_messages: 1024,
            max_queued_bytes: 8 * 1024 * 1024,
            write_timeout: Duration::from_secs(60),
            principal: None,
            credential: None,
        }
    }
}

/// serde_json's own limit: a message nested this deep does not parse.
const MAX_DEPTH: usize = 128;

/// Serves `server` on stdin/stdout until the client disconnects.
pub async fn serve_stdio(server: impl Into<LiveServer>) -> Result<(), ServerError> {
    serve_stdio_with(server, StdioOptions::default()).await
}

/// [`serve_stdio`] with bounds of its own. Ends with an error when mcpflow closed the
/// connection (a client that stopped reading), having logged why.
pub async fn serve_stdio_with(
    server: impl Into<LiveServer>,
    options: StdioOptions,
) -> Result<(), ServerError> {
    match stdio_pipes() {
        // Pipes (how MCP clients start servers) are read and written asynchronously: tokio's
        // Stdin hands every read to a blocking thread, a hop that costs tens of µs per message.
        Some((rx, tx)) => serve(server.into(), rx, tx, options).await,
        None => {
            serve(
                server.into(),
                tokio::io::stdin(),
                tokio::io::stdout(),
                options,
            )
            .await
        }
    }
}

async fn serve<R, W>(
    server: LiveServer,
    read: R,
    write: W,
    options: StdioOptions,
) -> Result<(), ServerError>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    use rmcp::ServiceExt;
    let mut transport = Stdio::new(read, write, options);
    transport.audit = server.audit().cloned();
    let outgoing = transport.outgoing.clone();
    let running = server
        .serve(transport)
        .await
        .map_err(|e| ServerError::Transport(e.to_string()))?;
    running
        .waiting()
        .await
        .map_err(|e| ServerError::Transport(e.to_string()))?;
    match outgoing.closed() {
        Some(why) if !why.starts_with("stdout closed") => Err(ServerError::Transport(why)),
        _ => Ok(()),
    }
}

/// stdin and stdout as async pipes, when both are pipes.
///
/// Both are checked before either is converted: converting one makes its open file
/// description non-blocking (shared with the process's own fd), and the blocking fallback
/// then fails its first read with `EAGAIN` (stdin a pipe, stdout a file or a terminal).
fn stdio_pipes() -> Option<(
    tokio::net::unix::pipe::Receiver,
    tokio::net::unix::pipe::Sender,
)> {
    use std::os::fd::AsFd;
    use std::os::unix::fs::FileTypeExt;
    let stdin = std::fs::File::from(std::io::stdin().as_fd().try_clone_to_owned().ok()?);
    let stdout = std::fs::File::from(std::io::stdout().as_fd().try_clone_to_owned().ok()?);
    let is_pipe = |f: &std::fs::File| f.metadata().is_ok_and(|m| m.file_type().is_fifo());
    if !is_pipe(&stdin) || !is_pipe(&stdout) {
        return None;
    }
    let rx = tokio::net::unix::pipe::Receiver::from_file(stdin).ok()?;
    let tx = tokio::net::unix::pipe::Sender::from_file(stdout).ok()?;
    Some((rx, tx))
}

pub(crate) struct Stdio<R> {
    read: BufReader<R>,
    /// The line being read; kept between calls, since `receive` is cancelled whenever another
    /// branch of rmcp's loop is ready first.
    line: Vec<u8>,
    /// Scanning the rest of a line already too long.
    oversized: Option<Scan>,
    outgoing: Arc<Outgoing>,
    progress: watch::Receiver<u64>,
    writer: Option<tokio::task::JoinHandle<()>>,
    max_message_bytes: usize,
    principal: Option<mcpflow_auth::Principal>,
    credential: Option<mcpflow_auth::Credential>,
    /// Where a call refused here leaves its line.
    audit: Option<crate::audit::Audit>,
}

impl<R: AsyncRead + Send + Unpin> Stdio<R> {
    pub(crate) fn new<W>(read: R, write: W, options: StdioOptions) -> Self
    where
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let max_message_bytes = options.max_message_bytes;
        let principal = options.principal.clone();
        let credential = options.credential.clone();
        let outgoing = Outgoing::new(options);
        let writer = tokio::spawn(outgoing.clone().write_all(write));
        Stdio {
            read: BufReader::with_capacity(64 * 1024, read),
            line: Vec::new(),
            oversized: None,
            progress: outgoing.subscribe(),
            outgoing,
            writer: Some(writer),
            max_message_bytes,
            principal,
            credential,
            audit: None,
        }
    }

    /// The next whole line (without its newline) in `self.line`; `false` at the end of input.
    /// A line past the limit is scanned, not kept, and answered here.
    async fn read_line(&mut self) -> Result<bool, std::io::Error> {
        loop {
            let available = self.read.fill_buf().await?;
            if available.is_empty() {
                return Ok(false);
            }
            let newline = available.iter().position(|b| *b == b'\n');
            let take = newline.map_or(available.len(), |i| i + 1);
            let chunk = &available[..newline.unwrap_or(available.len())];
            if let Some(scan) = self.oversized.as_mut() {
                scan.feed(chunk);
            } else if self.line.len() + chunk.len() > self.max_message_bytes {
                let mut scan = Scan::default();
                scan.feed(&self.line);
                scan.feed(chunk);
                self.line = Vec::new();
                self.oversized = Some(scan);
            } else {
                self.line.extend_from_slice(chunk);
            }
            self.read.consume(take);
            if newline.is_none() {
                continue;
            }
            if let Some(mut scan) = self.oversized.take() {
                let limit = self.max_message_bytes;
                tracing::warn!(limit, "refused a message larger than the limit");
                self.refuse(
                    scan.id(),
                    &format!(
                        "request larger than {limit} bytes: not read; send less in one message"
                    ),
                );
                continue;
            }
            return Ok(true);
        }
    }

    /// Under access control, a request whose method needs a scope the client lacks is answered
    /// here (as HTTP answers 403), and an admitted one carries the principal to the handler.
    fn admit(
        &self,
        line: &[u8],
        mut message: RxJsonRpcMessage<RoleServer>,
    ) -> Option<RxJsonRpcMessage<RoleServer>> {
        let Some(principal) = &self.principal else {
            return Some(message);
        };
        let rmcp::model::JsonRpcMessage::Request(request) = &mut message else {
            return Some(message);
        };
        #[derive(serde::Deserialize)]
        struct Params {
            #[serde(default)]
            name: Option<String>,
        }
        #[derive(serde::Deserialize)]
        struct Method {
            method: String,
            #[serde(default)]
            params: Option<Params>,
        }
        let (method, tool) = serde_json::from_slice::<Method>(line)
            .map(|m| (m.method, m.params.and_then(|p| p.name)))
            .unwrap_or_default();
        let needed = match mcpflow_auth::method_scope(&method) {
            Some(scope) => (!principal.allows(scope)).then_some(scope),
            None => (!mcpflow_auth::MCP_SCOPES
                .iter()
                .any(|s| principal.allows(*s)))
            .then_some(mcpflow_auth::MCP_SCOPES[0]),
        };
        if let Some(scope) = needed {
            tracing::debug!(%method, %scope, "refused a request over stdio: scope missing");
            if let Some(audit) = &self.audit
                && method == "tools/call"
            {
                let tool = tool.as_deref().unwrap_or_default();
                let zero = std::time::Duration::ZERO;
                audit.record(crate::audit::row(
                    Some(principal),
                    tool,
                    "forbidden",
                    zero,
                    None,
                ));
            }
            let id = serde_json::to_value(&request.id).unwrap_or(Value::Null);
            self.refuse(
                id,
                &format!("forbidden: `{method}` needs the scope `{scope}`"),
            );
            return None;
        }
        use rmcp::model::GetExtensions;
        request.request.extensions_mut().insert(principal.clone());
        if let Some(credential) = &self.credential {
            request.request.extensions_mut().insert(credential.clone());
        }
        Some(message)
    }

    /// Answers a message that could not be read as a request, outside rmcp (which never saw it).
    fn refuse(&self, id: Value, message: &str) {
        let error = json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": { "code": -32600, "message": message },
        });
        let mut line = error.to_string().into_bytes();
        line.push(b'\n');
        // A closed connection has no one to tell.
        let _ = self.outgoing.push(line);
    }

    /// The message in `self.line`: `None` when there is nothing to hand rmcp (an empty line,
    /// input that is not JSON, a notification nobody knows, or one refused here).
    fn parse(&self) -> Option<RxJsonRpcMessage<RoleServer>> {
        let line = self.line.strip_suffix(b"\r").unwrap_or(&self.line[..]);
        let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            return None;
        }
        if let Some(call) = crate::tool_call::tool_call(line) {
            return self.admit(line, call);
        }
        let error = match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(line) {
            Ok(message) => return self.admit(line, message),
            Err(e) => e,
        };
        let mut scan = Scan::default();
        scan.feed(line);
        if scan.max_depth() >= MAX_DEPTH {
            tracing::warn!(
                depth = scan.max_depth(),
                "refused a message nested too deep"
            );
            self.refuse(
                scan.id(),
                &format!(
                    "request nested deeper than {} levels: not read",
                    MAX_DEPTH - 1
                ),
            );
            return None;
        }
        match error.classify() {
            // Not JSON: no id to answer, and answering could start an error storm with a peer
            // that echoes what it cannot read (rmcp and the other SDKs stay silent too).
            serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
                tracing::debug!("ignoring input that is not JSON: {error}");
                None
            }
            serde_json::error::Category::Data | serde_json::error::Category::Io => {
                let value: Value = serde_json::from_slice(line).unwrap_or(Value::Null);
                if value.get("method").is_some() && value.get("id").is_none() {
                    // A notification this server does not know: notifications get no answer.
                    tracing::trace!("ignoring an unknown notification: {error}");
                    return None;
                }
                tracing::debug!("invalid JSON-RPC message: {error}");
                self.refuse(scan.id(), &format!("invalid request: {error}"));
                None
            }
        }
    }
}

impl<R: AsyncRead + Send + Unpin + 'static> Transport<RoleServer> for Stdio<R> {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let queued = serde_json::to_vec(&item)
            .map_err(std::io::Error::other)
            .and_then(|mut line| {
                line.push(b'\n');
                self.outgoing.push(line)
            });
        std::future::ready(queued)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            if let Room::Closed = self.outgoing.wait_for_room(&mut self.progress).await {
                return None;
            }
            match self.read_line().await {
                Ok(true) => {}
                Ok(false) => return None,
                Err(e) => {
                    tracing::error!("cannot read stdin: {e}");
                    return None;
                }
            }
            let message = self.parse();
            self.line.clear();
            if self.line.capacity() > 1024 * 1024 {
                // One large message must not pin its buffer for the rest of the session.
                self.line = Vec::new();
            }
            if let Some(message) = message {
                return Some(message);
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        let Some(mut writer) = self.writer.take() else {
            return Ok(());
        };
        if self.outgoing.closed().is_some() {
            writer.abort();
        } else {
            self.outgoing.finish();
            self.outgoing.drained(&mut writer).await;
        }
        Ok(())
    }
}
