#![allow(dead_code)]
//! Helpers for tests that drive the real `mcpflow` binary: over its CLI, or as an MCP client
//! over a real stdio pipe.
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation,
    ProtocolVersion,
};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;

pub fn mcpflow() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_mcpflow"))
}

/// The fixture MCP server, built beside mcpflow by `cargo build --workspace --bins`.
pub fn fixture() -> PathBuf {
    let bin = mcpflow().with_file_name("mcpflow-fixture");
    assert!(
        bin.exists(),
        "{} is missing: run `cargo build --workspace --bins` first (scripts/test does)",
        bin.display()
    );
    bin
}

/// `../shared/` beside the repo root.
pub fn shared() -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared");
    assert!(
        p.join("compat/mcpgraph").is_dir(),
        "these tests need ../shared/ beside the repo root (looked at {})",
        p.display()
    );
    p.canonicalize().expect("shared/ resolves")
}

pub fn example(name: &str) -> PathBuf {
    shared().join("compat/mcpgraph/examples").join(name)
}

pub fn repo_example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

/// Runs the binary to completion.
pub fn cli(args: &[&str], cwd: Option<&Path>) -> Output {
    let mut cmd = Command::new(mcpflow());
    cmd.args(args).stdin(Stdio::null());
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    cmd.output().expect("mcpflow runs")
}

pub fn stdout_json(out: &Output) -> Value {
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(&text).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {text}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A config file written into a temp dir, with `{fixture}` replaced by the fixture's path.
pub fn write_config(dir: &Path, yaml: &str) -> PathBuf {
    let path = dir.join("graph.yaml");
    let fixture = fixture();
    std::fs::write(
        &path,
        yaml.replace("{fixture}", &fixture.display().to_string()),
    )
    .expect("write config");
    path
}

pub type Client = RunningService<RoleClient, ClientConfig>;

/// An MCP client (2025-11-25, as most clients speak today) connected to `mcpflow ARGS…`.
pub async fn connect(args: &[&str], cwd: Option<&Path>) -> Client {
    let mut cmd = tokio::process::Command::new(mcpflow());
    cmd.args(args);
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    let transport = TokioChildProcess::builder(cmd)
        .stderr(Stdio::inherit())
        .spawn()
        .map(|(t, _)| t)
        .expect("mcpflow starts");
    let config = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("mcpflow-tests", "0.0.0"),
    )
    .with_protocol_version(ProtocolVersion::V_2025_11_25);
    config.serve(transport).await.expect("initialize succeeds")
}

pub async fn call(client: &Client, tool: &str, args: Value) -> CallToolResult {
    let Value::Object(map) = args else {
        panic!("arguments must be an object")
    };
    client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(map))
        .await
        .unwrap_or_else(|e| panic!("tools/call {tool} failed at the protocol level: {e}"))
}

/// The text of the first content block.
pub fn text(result: &CallToolResult) -> String {
    let v = serde_json::to_value(result).expect("serializes");
    v["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// `mcpflow serve` over stdio on a config written from `yaml`; the temp dir lives as long as
/// the caller keeps it.
pub async fn serve_yaml(yaml: &str) -> (tempfile::TempDir, Client) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write_config(dir.path(), yaml);
    let client = connect(&["serve", path.to_str().expect("utf-8")], None).await;
    (dir, client)
}

/// The names `tools/list` gives, in order.
pub async fn tool_names(client: &Client) -> Vec<String> {
    let tools = client.list_all_tools().await.expect("tools/list");
    tools.iter().map(|t| t.name.to_string()).collect()
}

/// A client that counts the `notifications/tools/list_changed` it hears.
#[derive(Clone, Default)]
pub struct Listener(pub std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl Listener {
    pub fn heard(&self) -> usize {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl rmcp::ClientHandler for Listener {
    async fn on_tool_list_changed(
        &self,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("mcpflow-tests", "0.0.0"),
        )
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }
}

/// `mcpflow ARGS…` over stdio with a [`Listener`] as its client.
pub async fn listening(args: &[&str]) -> (RunningService<RoleClient, Listener>, Listener) {
    let mut cmd = tokio::process::Command::new(mcpflow());
    cmd.args(args);
    let transport = TokioChildProcess::builder(cmd)
        .stderr(Stdio::inherit())
        .spawn()
        .map(|(t, _)| t)
        .expect("mcpflow starts");
    let listener = Listener::default();
    let client = listener.clone().serve(transport).await.expect("initialize");
    (client, listener)
}
