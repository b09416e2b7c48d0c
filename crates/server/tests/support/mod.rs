#![allow(dead_code)]
//! Serving a config in process: the config loaded and compiled as `mcpflow serve` does, a
//! `GraphServer` on one end of an in-memory duplex stream and an rmcp client on the other. The
//! proxied upstream in these tests is the workspace's fixture server, a real child process.

use std::path::PathBuf;

use mcpflow_engine::Engine;
use mcpflow_server::GraphServer;
use mcpflow_upstream::UpstreamPool;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation,
    ProtocolVersion,
};
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;

pub type Client = RunningService<RoleClient, ClientConfig>;

/// The fixture MCP server, built beside the test binaries by `cargo build --workspace --bins`.
pub fn fixture() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let bin = exe
        .parent()
        .and_then(|deps| deps.parent())
        .map(|dir| dir.join("mcpflow-fixture"))
        .expect("target/debug");
    assert!(
        bin.exists(),
        "{} is missing: run `cargo build --workspace --bins` first (scripts/test does)",
        bin.display()
    );
    bin
}

/// `yaml` (`{fixture}` replaced by the fixture's path) loaded from a file in a temporary
/// directory and compiled, as `mcpflow serve FILE` does; the directory lives as long as the
/// caller keeps it.
pub fn load(yaml: &str) -> (tempfile::TempDir, mcpflow_config::Loaded, Engine) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mcpflow.yaml");
    let yaml = yaml.replace("{fixture}", &fixture().display().to_string());
    std::fs::write(&path, yaml).expect("config written");
    let draft = mcpflow_config::Loader::new()
        .read(&path)
        .unwrap_or_else(|e| panic!("the config reads: {e}"));
    let (loaded, engine) = draft
        .compile(
            |config, base_dir| {
                let pool = UpstreamPool::new(config.mcp_servers.clone(), base_dir.into());
                Engine::new(config, pool)
            },
            mcpflow_engine::check,
        )
        .unwrap_or_else(|e| panic!("the config compiles: {e}"));
    (dir, loaded, engine)
}

/// The server of `yaml` (see [`load`]), its proxied names checked as at start.
pub async fn server(yaml: &str) -> (tempfile::TempDir, GraphServer) {
    let (dir, loaded, engine) = load(yaml);
    let server = GraphServer::new(&loaded.config, engine).expect("the server starts");
    server.check_names().await.expect("no name is taken twice");
    (dir, server)
}

/// The built-in authoring tools of a loaded config, with its `authoring:` flags.
pub fn authoring(loaded: &mcpflow_config::Loaded, engine: &Engine) -> mcpflow_authoring::Authoring {
    let served = mcpflow_authoring::Served {
        engine: engine.clone(),
        config: std::sync::Arc::new(loaded.config.clone()),
        base_dir: loaded.base_dir.clone(),
    };
    mcpflow_authoring::Authoring::new(loaded.config.authoring.clone().unwrap_or_default(), served)
}

/// A client named `mcpflow-tests` (2025-11-25) connected in process to `server`.
pub async fn connect(server: GraphServer) -> Client {
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(ours).await {
            let _ = running.waiting().await;
        }
    });
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("mcpflow-tests", "0.0.0"),
    )
    .with_protocol_version(ProtocolVersion::V_2025_11_25)
    .serve(theirs)
    .await
    .expect("the client connects")
}

/// [`server`] and [`connect`] in one.
pub async fn serve_yaml(yaml: &str) -> (tempfile::TempDir, Client) {
    let (dir, server) = server(yaml).await;
    (dir, connect(server).await)
}

pub async fn call(client: &Client, tool: &str, args: Value) -> CallToolResult {
    let Value::Object(args) = args else {
        panic!("arguments must be an object")
    };
    client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(args))
        .await
        .unwrap_or_else(|e| panic!("tools/call {tool} failed at the protocol level: {e}"))
}

/// The text of the content blocks, one a line.
pub fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The names `tools/list` gives, in order.
pub async fn tool_names(client: &Client) -> Vec<String> {
    let tools = client.list_all_tools().await.expect("tools/list");
    tools.into_iter().map(|t| t.name.to_string()).collect()
}
