//! Hooks on proxied traffic, served in process (`support`) with the fixture as the upstream:
//! rewriting, rejecting, config order, failure policy, non-blocking hooks and per-client
//! listings. The load-time and transport-level gateway tests spawn the binary
//! (`crates/mcpflow/tests/gateway.rs`).

mod support;

use serde_json::{Value, json};
use support::{Client, call, text};

const BASE: &str = r#"
version: "1.0"
server: {name: gw, version: "1.0.0"}
mcpServers:
  fx:
    command: "{fixture}"
tools:
  - name: graph_echo
    description: "a graph tool beside the proxied ones"
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: exit}
      - {id: exit, type: exit}
"#;

async fn serve(yaml: &str) -> (tempfile::TempDir, Client) {
    support::serve_yaml(yaml).await
}

async fn names(client: &Client) -> Vec<String> {
    support::tool_names(client).await
}

fn hooked(hooks: &str) -> String {
    format!(
        "{BASE}{}{hooks}",
        r#"
proxy:
  upstreams:
    fx:
      include: ["echo", "echo_text", "track", "track_stats"]
hooks:
"#
    )
}

#[tokio::test]
async fn a_pre_hook_rewrites_the_request_and_a_post_hook_the_response() {
    let (_dir, client) = serve(&hooked(
        r#"
  - id: shout
    method: tools/call
    phase: pre
    tool: echo_text
    script: |
      (ctx) => { ctx.request.params.arguments.text = ctx.request.params.arguments.text.toUpperCase(); return ctx; }
  - id: sign
    method: tools/call
    phase: post
    upstream: "f*"
    tool: "echo_*"
    script: |
      (ctx) => { ctx.response.content[0].text += " -- " + ctx.metadata.serverName + "/" + ctx.metadata.toolName + " for " + ctx.metadata.clientId; return ctx; }
"#,
    ))
    .await;
    let r = call(&client, "fx__echo_text", json!({"text": "hi"})).await;
    assert_eq!(text(&r), "HI -- fx/echo_text for mcpflow-tests");
    // Hooks matched to other tools leave this one alone.
    let r = call(&client, "fx__echo", json!({"text": "hi"})).await;
    assert_eq!(r.structured_content, Some(json!({"text": "hi"})));
    client.cancel().await.expect("closes");
}

#[tokio::test]
async fn a_pre_hook_rejects_with_a_message_the_client_reads() {
    let (_dir, client) = serve(&hooked(
        r#"
  - id: guard
    method: tools/call
    phase: pre
    script: |
      (ctx) => ctx.request.params.arguments.text === "rm -rf /" ? {reject: "not that, " + ctx.metadata.clientId} : undefined
"#,
    ))
    .await;
    let r = call(&client, "fx__echo_text", json!({"text": "rm -rf /"})).await;
    assert_eq!(r.is_error, Some(true));
    assert_eq!(text(&r), "not that, mcpflow-tests");
    let r = call(&client, "fx__echo_text", json!({"text": "ls"})).await;
    assert_eq!(text(&r), "ls");
    client.cancel().await.expect("closes");
}

/// `enabled: false` keeps a hook in the config without running it; its neighbours still run.
#[tokio::test]
async fn a_disabled_hook_does_not_run() {
    let (_dir, client) = serve(&hooked(
        r#"
  - id: guard
    method: tools/call
    phase: pre
    enabled: false
    script: |
      (ctx) => ({reject: "the disabled guard ran"})
  - id: shout
    method: tools/call
    phase: pre
    enabled: true
    tool: echo_text
    script: |
      (ctx) => { ctx.request.params.arguments.text = ctx.request.params.arguments.text.toUpperCase(); return ctx; }
"#,
    ))
    .await;
    let r = call(&client, "fx__echo_text", json!({"text": "hi"})).await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    assert_eq!(text(&r), "HI");
    client.cancel().await.expect("closes");
}

/// A disabled hook is still checked at load: a script that does not compile is a load error
/// at its place, as for an enabled one.
#[test]
fn a_disabled_hook_with_a_broken_script_is_still_an_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mcpflow.yaml");
    let yaml = hooked(
        r#"
  - id: broken
    method: tools/call
    phase: pre
    enabled: false
    script: "(ctx) => {"
"#,
    )
    .replace("{fixture}", &support::fixture().display().to_string());
    std::fs::write(&path, yaml).expect("config written");
    let draft = mcpflow_config::Loader::new()
        .read(&path)
        .unwrap_or_else(|e| panic!("the config reads: {e}"));
    let compiled = draft.compile(
        |config, base_dir| {
            let pool =
                mcpflow_upstream::UpstreamPool::new(config.mcp_servers.clone(), base_dir.into());
            mcpflow_engine::Engine::new(config, pool)
        },
        mcpflow_engine::check,
    );
    let Err(errors) = compiled else {
        panic!("a config with a broken (disabled) hook compiled");
    };
    let text = errors.to_string();
    assert!(text.contains("hook \"broken\" does not compile"), "{text}");
}

#[tokio::test]
async fn hooks_run_in_config_order_each_seeing_the_last_ones_work() {
    let (_dir, client) = serve(&hooked(
        r#"
  - id: a
    method: tools/call
    phase: pre
    script: "(ctx) => { ctx.request.params.arguments.text += 'a'; return ctx; }"
  - id: b
    method: tools/call
    phase: pre
    script: "(ctx) => { ctx.request.params.arguments.text += 'b'; return ctx; }"
  - id: c
    method: tools/call
    phase: post
    script: "(ctx) => { ctx.response.content[0].text += 'c'; return ctx; }"
  - id: d
    method: tools/call
    phase: post
    script: "(ctx) => { ctx.response.content[0].text += 'd'; return ctx; }"
"#,
    ))
    .await;
    let r = call(&client, "fx__echo_text", json!({"text": "x"})).await;
    assert_eq!(text(&r), "xabcd");
    client.cancel().await.expect("closes");
}

#[tokio::test]
async fn a_failing_hook_fails_closed_by_default_and_open_when_asked() {
    let (_dir, client) = serve(&hooked(
        r#"
  - id: broken
    method: tools/call
    phase: pre
    tool: echo_text
    script: "(ctx) => { throw {not: 'an Error'}; }"
  - id: spinning
    method: tools/call
    phase: pre
    tool: echo
    onHookError: open
    timeoutMs: 20
    script: "(ctx) => { for (;;) {} }"
"#,
    ))
    .await;
    let r = call(&client, "fx__echo_text", json!({"text": "x"})).await;
    assert_eq!(r.is_error, Some(true));
    let message = text(&r);
    assert!(message.contains("hook `broken` failed"), "{message}");
    assert!(message.contains("an Error"), "{message}");
    // Open: the request goes through as the client sent it.
    let r = call(&client, "fx__echo", json!({"text": "x"})).await;
    assert_eq!(r.structured_content, Some(json!({"text": "x"})));
    client.cancel().await.expect("closes");
}

#[tokio::test]
async fn a_non_blocking_hook_runs_after_the_fact_and_cannot_change_or_fail_the_call() {
    let yaml = hooked(
        r#"
  - id: audit
    method: tools/call
    phase: post
    tool: echo_text
    blocking: false
    graphTool: audit
  - id: ignored
    method: tools/call
    phase: pre
    blocking: false
    script: "(ctx) => { throw new Error('only logged'); }"
  - id: no_reject
    method: tools/call
    phase: pre
    blocking: false
    script: "(ctx) => ({reject: 'ignored'})"
"#,
    )
    .replace(
        "tools:\n  - name: graph_echo",
        r#"tools:
  - name: audit
    description: "records a call on the fixture and takes its time doing it"
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: record}
      - {id: record, type: mcp, server: fx, tool: track, args: {key: audit, ms: 60000}, next: exit}
      - {id: exit, type: exit}
  - name: graph_echo"#,
    );
    let (_dir, client) = serve(&yaml).await;
    let r = call(&client, "fx__echo_text", json!({"text": "x"})).await;
    assert_eq!(text(&r), "x");
    assert_eq!(r.is_error, Some(false));
    // The hook's upstream call starts after the answer and is still running (60 s) when the
    // answer is here: the call did not wait for it.
    let mut stats = Value::Null;
    for _ in 0..200 {
        let r = call(&client, "fx__track_stats", json!({"key": "audit"})).await;
        stats = r.structured_content.unwrap_or_default();
        if stats["calls"] == 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert_eq!(stats["calls"], 1, "{stats}");
    assert_eq!(stats["in_flight"], 1, "{stats}");
    client.cancel().await.expect("closes");
}

#[tokio::test]
async fn a_list_hook_gives_each_client_its_own_subset() {
    let (_dir, client) = serve(&hooked(
        r#"
  - id: subset
    method: tools/list
    phase: post
    script: |
      (ctx) => {
        if (ctx.metadata.clientId === "mcpflow-tests")
          ctx.response.tools = ctx.response.tools.filter(t => t.name.startsWith("fx__echo"));
        return ctx;
      }
"#,
    ))
    .await;
    assert_eq!(
        names(&client).await,
        ["graph_echo", "fx__echo", "fx__echo_text"]
    );
    client.cancel().await.expect("closes");
}
