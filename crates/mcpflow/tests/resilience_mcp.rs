//! Cancellation and progress over MCP, with a real rmcp client talking to `mcpflow serve`
//! over a stdio pipe, and the fixture as the upstream.
mod common;

use std::process::Stdio;
use std::time::Duration;

use common::{mcpflow, write_config};
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation,
    ProgressNotificationParam, ProtocolVersion,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;

const CONFIG: &str = r#"
version: "1.0"
server: { name: "resilient", version: "1.0.0" }
mcpServers:
  fx: { command: "{fixture}", args: [] }
tools:
  - name: hang
    nodes:
      - { id: entry, type: entry, next: s }
      - { id: s, type: mcp, server: fx, tool: sleep, args: { ms: 60000 }, next: exit }
      - { id: exit, type: exit }
  - name: cancels
    nodes:
      - { id: entry, type: entry, next: c }
      - { id: c, type: mcp, server: fx, tool: cancelled_count, args: {}, next: exit }
      - { id: exit, type: exit }
  - name: steps
    nodes:
      - { id: entry, type: entry, next: a }
      - { id: a, type: transform, transform: { expr: '1' }, next: b }
      - { id: b, type: mcp, server: fx, tool: echo, args: { v: 2 }, next: exit }
      - { id: exit, type: exit }
  - name: upstream_progress
    nodes:
      - { id: entry, type: entry, next: p }
      - { id: p, type: mcp, server: fx, tool: progress, args: { steps: 3, ms: 5 }, next: exit }
      - { id: exit, type: exit }
"#;

/// A client that keeps every progress notification it receives.
#[derive(Clone)]
struct Recorder {
    progress: mpsc::UnboundedSender<ProgressNotificationParam>,
}

impl ClientHandler for Recorder {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.progress.send(params);
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("mcpflow-tests", "0.0.0"),
        )
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }
}

async fn serve(
    dir: &std::path::Path,
) -> (
    RunningService<RoleClient, Recorder>,
    mpsc::UnboundedReceiver<ProgressNotificationParam>,
) {
    let path = write_config(dir, CONFIG);
    let mut cmd = tokio::process::Command::new(mcpflow());
    cmd.arg("serve").arg(&path);
    let transport = TokioChildProcess::builder(cmd)
        .stderr(Stdio::inherit())
        .spawn()
        .map(|(t, _)| t)
        .expect("mcpflow starts");
    let (tx, rx) = mpsc::unbounded_channel();
    let client = Recorder { progress: tx }
        .serve(transport)
        .await
        .expect("initialize succeeds");
    (client, rx)
}

async fn cancelled_count(client: &RunningService<RoleClient, Recorder>) -> u64 {
    let args = serde_json::Map::new();
    let r = client
        .call_tool(CallToolRequestParams::new("cancels").with_arguments(args))
        .await
        .expect("cancels answers");
    let v = serde_json::to_value(&r).expect("serializes");
    v["structuredContent"]["cancelled"].as_u64().unwrap_or(0)
}

#[tokio::test]
async fn a_cancelled_call_stops_the_run_and_cancels_the_upstream_call() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (client, _progress) = serve(dir.path()).await;
    // Start the upstream so that the hang's call goes out at once.
    assert_eq!(cancelled_count(&client).await, 0);
    let peer = client.peer().clone();
    let hang = tokio::spawn(async move {
        peer.call_tool(CallToolRequestParams::new("hang").with_arguments(serde_json::Map::new()))
            .await
    });
    // Let the request reach the fixture, then drop it: rmcp sends notifications/cancelled.
    tokio::time::sleep(Duration::from_millis(200)).await;
    hang.abort();
    let mut seen = 0;
    for _ in 0..1000 {
        seen = cancelled_count(&client).await;
        if seen > 0 {
            break;
        }
    }
    // The fixture's sleep is 60 s: the cancellation reaching it at all, while the client still
    // waits on nothing, proves the run stopped and passed the cancel on; exactly one, because
    // only the one call was in flight.
    assert_eq!(seen, 1, "the fixture saw the cancellation");
    // The server is still serving: the next call is answered, and sees no further cancel.
    assert_eq!(cancelled_count(&client).await, 1);
    let _ = client.cancel().await;
}

#[tokio::test]
async fn progress_is_reported_per_node_to_a_real_client() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (client, mut progress) = serve(dir.path()).await;
    let r = client
        .call_tool(CallToolRequestParams::new("steps").with_arguments(serde_json::Map::new()))
        .await
        .expect("steps answers");
    let v: Value = serde_json::to_value(&r).expect("serializes");
    assert_eq!(v["structuredContent"], json!({"v": 2}));
    let mut got = Vec::new();
    while got.len() < 4 {
        match tokio::time::timeout(Duration::from_secs(5), progress.recv()).await {
            Ok(Some(p)) => got.push((p.progress, p.message.unwrap_or_default())),
            _ => break,
        }
    }
    assert_eq!(
        got,
        [
            (1.0, "entry".to_owned()),
            (2.0, "a".to_owned()),
            (3.0, "b".to_owned()),
            (4.0, "exit".to_owned())
        ]
    );
    let _ = client.cancel().await;
}

#[tokio::test]
async fn an_upstreams_progress_is_forwarded_between_the_node_reports() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (client, mut progress) = serve(dir.path()).await;
    let r = client
        .call_tool(
            CallToolRequestParams::new("upstream_progress").with_arguments(serde_json::Map::new()),
        )
        .await
        .expect("answers");
    let v: Value = serde_json::to_value(&r).expect("serializes");
    assert_eq!(v["structuredContent"], json!({"steps": 3}));
    let mut got = Vec::new();
    while got.len() < 6 {
        match tokio::time::timeout(Duration::from_secs(5), progress.recv()).await {
            Ok(Some(p)) => got.push((p.progress, p.message.unwrap_or_default())),
            _ => break,
        }
    }
    let messages: Vec<&str> = got.iter().map(|(_, m)| m.as_str()).collect();
    assert_eq!(
        messages,
        [
            "entry",
            "p: step 1 of 3",
            "p: step 2 of 3",
            "p: step 3 of 3",
            "p",
            "exit"
        ]
    );
    assert!(
        got.windows(2).all(|w| w[0].0 < w[1].0),
        "progress grows: {got:?}"
    );
    let _ = client.cancel().await;
}
