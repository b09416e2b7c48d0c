//! One MCP client session over a child process's stdio, and the timed call loop.

use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ContentBlock,
    Implementation, JsonObject, ProtocolVersion,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;
use tokio::process::Command;

pub type Session = RunningService<RoleClient, ClientConfig>;

/// Parses a protocol version such as `2025-11-25`; unknown strings are passed through as-is so
/// that a server's own answer decides.
pub fn protocol(text: &str) -> anyhow::Result<ProtocolVersion> {
    serde_json::from_value(Value::String(text.to_owned()))
        .with_context(|| format!("bad protocol version `{text}`"))
}

/// Spawns `argv` and completes the MCP handshake with `version`.
///
/// Versions that still have `initialize` (2025-11-25 and older) use it: rmcp's default,
/// 2026-07-28, is stateless and servers built on older SDKs reject it.
pub async fn connect(
    argv: &[String],
    version: ProtocolVersion,
    quiet: bool,
) -> anyhow::Result<Session> {
    let (program, args) = argv
        .split_first()
        .context("no server command given after `--`")?;
    let mut command = Command::new(program);
    command.args(args);
    let stderr = if quiet {
        Stdio::null()
    } else {
        Stdio::inherit()
    };
    let (transport, _) = TokioChildProcess::builder(command)
        .stderr(stderr)
        .spawn()
        .with_context(|| format!("cannot start `{program}`"))?;
    let info = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("mcpflow-bench", env!("CARGO_PKG_VERSION")),
    )
    .with_protocol_version(version.clone());
    let session = if version.has_initialize() {
        info.serve(transport).await
    } else {
        let lifecycle = ClientLifecycleMode::Discover {
            preferred_versions: vec![version],
        };
        info.serve_with_lifecycle(transport, lifecycle).await
    };
    session.map_err(|e| anyhow!("MCP handshake with `{program}` failed: {e}"))
}

/// The protocol version the server agreed to, for the report.
pub fn negotiated(session: &Session) -> String {
    session
        .peer_info()
        .map(|info| info.protocol_version.to_string())
        .unwrap_or_else(|| "unknown".into())
}

/// Calls `tool` once and fails on a transport error or a tool error (`isError: true`), since a
/// benchmark of failing calls measures the wrong thing.
pub async fn call(
    session: &Session,
    tool: &str,
    args: &JsonObject,
) -> anyhow::Result<CallToolResult> {
    let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(args.clone());
    let result = session
        .call_tool(params)
        .await
        .with_context(|| format!("calling `{tool}`"))?;
    if result.is_error == Some(true) {
        bail!(
            "`{tool}` returned a tool error: {}",
            first_text(&result).unwrap_or("(no text)")
        );
    }
    Ok(result)
}

/// `n` sequential calls: each call's duration, the wall time of the whole loop, and the first
/// call's result (kept so that a report can show what the server answered).
pub struct Timed {
    pub samples: Vec<Duration>,
    pub wall: Duration,
    pub first: Option<CallToolResult>,
}

pub async fn timed_calls(
    session: &Session,
    tool: &str,
    args: &JsonObject,
    n: usize,
) -> anyhow::Result<Timed> {
    let mut samples = Vec::with_capacity(n);
    let mut first = None;
    let start = Instant::now();
    for _ in 0..n {
        let t = Instant::now();
        let result = call(session, tool, args).await?;
        samples.push(t.elapsed());
        first.get_or_insert(result);
    }
    Ok(Timed {
        samples,
        wall: start.elapsed(),
        first,
    })
}

/// What a result says, as one JSON value: `structuredContent` if present, else the first text.
pub fn result_value(result: &CallToolResult) -> Value {
    if let Some(value) = &result.structured_content {
        return value.clone();
    }
    match first_text(result) {
        Some(text) => serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned())),
        None => Value::Null,
    }
}

fn first_text(result: &CallToolResult) -> Option<&str> {
    result.content.iter().find_map(|block| match block {
        ContentBlock::Text(text) => Some(text.text.as_str()),
        _ => None,
    })
}
