//! Graphs that call a real upstream (the fixture MCP server), and upstreams that misbehave.
mod common;

use common::{call, connect, text, write_config};
use serde_json::json;

const CONFIG: &str = r#"
version: "1.0"
server: { name: "up", version: "1.0.0" }
mcpServers:
  fx:
    command: "{fixture}"
    args: []
    timeoutMs: 2000
  missing:
    command: "/nonexistent/mcp-server-that-is-not-there"
    args: []
tools:
  - name: "echo"
    description: "echo through the fixture, then reshape"
    inputSchema: { type: object, properties: { x: {} } }
    nodes:
      - { id: entry, type: entry, next: call }
      - id: call
        type: mcp
        server: fx
        tool: echo
        args: { value: { expr: "entry.x" }, fixed: "$.entry.x", nested: [ { expr: "entry.x" } ] }
        next: shape
      - { id: shape, type: transform, transform: { expr: '{ "got": call.value, "fixed": call.fixed, "nested": call.nested }' }, next: exit }
      - { id: exit, type: exit }
  - name: "call"
    description: "call any fixture tool"
    inputSchema: { type: object, properties: { tool: { type: string }, args: { type: object } }, required: [tool] }
    nodes:
      - { id: entry, type: entry, next: sw }
      - id: sw
        type: switch
        conditions:
          - { rule: { "==": [ { var: "entry.tool" }, "fail" ] }, next: fail }
          - { rule: { "==": [ { var: "entry.tool" }, "crash" ] }, next: crash }
          - { rule: { "==": [ { var: "entry.tool" }, "sleep" ] }, next: sleep }
          - { rule: { "==": [ { var: "entry.tool" }, "count" ] }, next: count }
          - { rule: { "==": [ { var: "entry.tool" }, "text" ] }, next: text }
          - { rule: { "==": [ { var: "entry.tool" }, "missing" ] }, next: missing }
          - { rule: { "==": [ { var: "entry.tool" }, "garbage" ] }, next: garbage }
        next: exit
      - { id: fail, type: mcp, server: fx, tool: fail, args: { message: "it broke" }, next: exit }
      - { id: crash, type: mcp, server: fx, tool: crash, args: {}, next: exit }
      - { id: sleep, type: mcp, server: fx, tool: sleep, args: { ms: 10000 }, next: exit }
      - { id: count, type: mcp, server: fx, tool: count, args: {}, next: exit }
      - { id: text, type: mcp, server: fx, tool: echo_text, args: { text: "plain words" }, next: exit }
      - { id: missing, type: mcp, server: missing, tool: anything, args: {}, next: exit }
      - { id: garbage, type: mcp, server: fx, tool: garbage, args: {}, next: exit }
      - { id: exit, type: exit }
"#;

#[tokio::test]
async fn mcp_node_args_and_output_follow_mcpgraph() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write_config(dir.path(), CONFIG);
    let client = connect(&["serve", path.to_str().expect("utf-8")], None).await;
    let r = call(&client, "echo", json!({"x": {"a": [1, 2]}})).await;
    assert_eq!(
        r.structured_content,
        Some(json!({"got": {"a": [1, 2]}, "fixed": "$.entry.x", "nested": [{"a": [1, 2]}]})),
        "{}",
        text(&r)
    );
    // Plain text that is not JSON comes back as the raw string.
    let r = call(&client, "call", json!({"tool": "text"})).await;
    assert_eq!(text(&r), "\"plain words\"");
    client.cancel().await.expect("closes");
}

#[tokio::test]
async fn upstream_failures_fail_the_call_clearly_and_the_server_keeps_serving() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write_config(dir.path(), CONFIG);
    let client = connect(&["serve", path.to_str().expect("utf-8")], None).await;

    let r = call(&client, "call", json!({"tool": "fail"})).await;
    assert_eq!(r.is_error, Some(true));
    assert!(
        text(&r).contains("it broke") && text(&r).contains("node `fail`"),
        "{}",
        text(&r)
    );

    // An upstream that crashes mid-call: the error carries its stderr tail…
    let r = call(&client, "call", json!({"tool": "crash"})).await;
    assert_eq!(r.is_error, Some(true));
    assert!(text(&r).contains("crashing on purpose"), "{}", text(&r));
    // …and the next call starts a fresh process.
    let r = call(&client, "call", json!({"tool": "count"})).await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));

    // An upstream that never answers in time (timeoutMs 2000).
    let r = call(&client, "call", json!({"tool": "sleep"})).await;
    assert_eq!(r.is_error, Some(true));
    assert!(text(&r).to_lowercase().contains("time"), "{}", text(&r));

    // An upstream that cannot start names its command.
    let r = call(&client, "call", json!({"tool": "missing"})).await;
    assert_eq!(r.is_error, Some(true));
    assert!(
        text(&r).contains("mcp-server-that-is-not-there"),
        "{}",
        text(&r)
    );

    // An upstream that writes garbage on its stdout: the call ends (whatever it answers)…
    let _ = call(&client, "call", json!({"tool": "garbage"})).await;
    // …and the upstream still serves the next call.
    let r = call(&client, "call", json!({"tool": "count"})).await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));

    // Still serving.
    let r = call(&client, "echo", json!({"x": 1})).await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    client.cancel().await.expect("closes");
}
