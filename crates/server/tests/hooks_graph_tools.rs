//! Hooks on the config's own graph tools: only hooks that opt in (`appliesTo: graph` or `all`)
//! see graph tool calls and listings, with the same rewrite / reject / post contract as on
//! proxied traffic; hooks without it keep to proxied traffic. Served in process (`support`),
//! with the fixture as the proxied upstream.
mod support;

use serde_json::json;
use support::{Client, call, text};

const BASE: &str = r#"
version: "1.0"
server: {name: gw, version: "1.0.0"}
mcpServers:
  fx:
    command: "{fixture}"
proxy:
  upstreams:
    fx:
      include: ["echo", "echo_text"]
tools:
  - name: graph_echo
    description: "answers its arguments"
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: exit}
      - {id: exit, type: exit}
  - name: graph_secret
    description: "a graph tool some clients must not see"
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: exit}
      - {id: exit, type: exit}
hooks:
"#;

async fn serve(hooks: &str) -> (tempfile::TempDir, Client) {
    support::serve_yaml(&format!("{BASE}{hooks}")).await
}

async fn names(client: &Client) -> Vec<String> {
    support::tool_names(client).await
}

#[tokio::test]
async fn graph_tool_calls_pass_through_the_hooks_that_opt_in_and_only_those() {
    let (_dir, client) = serve(
        r#"
  - id: proxied_only
    method: tools/call
    phase: pre
    script: "(ctx) => ({reject: 'proxied traffic only: ' + ctx.metadata.serverName})"
  - id: stamp
    method: tools/call
    phase: pre
    appliesTo: graph
    tool: "graph_*"
    script: |
      (ctx) => {
        if (ctx.request.params.arguments.forbidden) return {reject: "not for " + ctx.metadata.toolName};
        ctx.request.params.arguments.stamped = ctx.metadata.serverName === null && ctx.metadata.clientId;
        return ctx;
      }
  - id: wrap
    method: tools/call
    phase: post
    appliesTo: all
    tool: graph_echo
    script: |
      (ctx) => { ctx.response.structuredContent = {wrapped: ctx.response.structuredContent, by: ctx.metadata.hookId}; return ctx; }
"#,
    )
    .await;
    // The pre hook rewrote the arguments the graph ran on, the post hook its result.
    let r = call(&client, "graph_echo", json!({"a": 1})).await;
    assert_eq!(r.is_error, Some(false), "{r:?}");
    assert_eq!(
        r.structured_content,
        Some(json!({"wrapped": {"a": 1, "stamped": "mcpflow-tests"}, "by": "wrap"}))
    );
    // `tool:` still selects: graph_secret gets the stamp but is not wrapped.
    let r = call(&client, "graph_secret", json!({})).await;
    assert_eq!(
        r.structured_content,
        Some(json!({"stamped": "mcpflow-tests"}))
    );
    // A graph-tool hook rejects like a proxied one: the client reads the message.
    let r = call(&client, "graph_echo", json!({"forbidden": true})).await;
    assert_eq!(r.is_error, Some(true));
    assert_eq!(text(&r), "not for graph_echo");
    // The hook without `appliesTo` sees the proxied call (and rejects it); the graph-only ones
    // leave it alone.
    let r = call(&client, "fx__echo", json!({"a": 1})).await;
    assert_eq!(r.is_error, Some(true));
    assert_eq!(text(&r), "proxied traffic only: fx");
    client.cancel().await.expect("closes");
}

#[tokio::test]
async fn a_list_hook_on_graph_tools_reshapes_their_listing_per_client() {
    let (_dir, client) = serve(
        r#"
  - id: hide_secret
    method: tools/list
    phase: post
    appliesTo: graph
    script: |
      (ctx) => {
        if (ctx.metadata.serverName !== null) return {reject: "a graph listing has no upstream"};
        if (ctx.metadata.clientId === "mcpflow-tests")
          ctx.response.tools = ctx.response.tools.filter(t => t.name !== "graph_secret");
        return ctx;
      }
  - id: proxied_list
    method: tools/list
    phase: pre
    script: "(ctx) => ({reject: 'no proxied tools'})"
"#,
    )
    .await;
    // Graph tools filtered by the opted-in hook; the proxied listing rejected by the other.
    assert_eq!(names(&client).await, ["graph_echo"]);
    // Hidden from the list, the tool is still callable: list hooks shape what is listed.
    let r = call(&client, "graph_secret", json!({"b": 2})).await;
    assert_eq!(r.structured_content, Some(json!({"b": 2})));
    client.cancel().await.expect("closes");
}

#[tokio::test]
async fn a_failing_graph_tool_hook_fails_closed_unless_open() {
    let (_dir, client) = serve(
        r#"
  - id: broken
    method: tools/call
    phase: pre
    appliesTo: graph
    tool: graph_echo
    script: "(ctx) => { throw new Error('boom'); }"
  - id: lenient
    method: tools/call
    phase: post
    appliesTo: graph
    tool: graph_secret
    onHookError: open
    script: "(ctx) => 42"
"#,
    )
    .await;
    let r = call(&client, "graph_echo", json!({})).await;
    assert_eq!(r.is_error, Some(true));
    let message = text(&r);
    assert!(message.contains("hook `broken` failed"), "{message}");
    assert!(message.contains("boom"), "{message}");
    let r = call(&client, "graph_secret", json!({"c": 3})).await;
    assert_eq!(r.structured_content, Some(json!({"c": 3})));
    client.cancel().await.expect("closes");
}
