//! The gateway: upstream tools passed through next to graph tools, with naming, filters,
//! overrides, failure modes and hooks, driven by a real MCP client over stdio.
mod common;

use common::{Client, call, cli, connect, stderr, text, write_config};
use serde_json::{Value, json};

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
    common::serve_yaml(yaml).await
}

async fn names(client: &Client) -> Vec<String> {
    common::tool_names(client).await
}

#[tokio::test]
async fn proxied_tools_are_named_filtered_and_overridden() {
    let yaml = format!(
        "{BASE}{}",
        r#"
proxy:
  upstreams:
    fx:
      prefix: fixture
      include: ["echo*", "image", "fail", "add"]
      exclude: ["echo_text"]
      tools:
        add:
          name: plus
          title: "Plus"
          description: "adds a to a fixed b"
          annotations: {readOnlyHint: true}
          fixedArguments: {b: 40}
        echo:
          defaultArguments: {who: "default"}
"#
    );
    let (_dir, client) = serve(&yaml).await;
    let tools = client.list_all_tools().await.expect("tools/list");
    let listed: Vec<&str> = tools.iter().map(|t| &*t.name).collect();
    assert_eq!(
        listed,
        // The upstream's own order, graph tools first.
        [
            "graph_echo",
            "fixture__echo",
            "fixture__fail",
            "fixture__image",
            "plus"
        ]
    );
    let plus = tools
        .iter()
        .find(|t| t.name == "plus")
        .expect("plus listed");
    assert_eq!(plus.title.as_deref(), Some("Plus"));
    assert_eq!(plus.description.as_deref(), Some("adds a to a fixed b"));
    assert_eq!(
        plus.annotations.as_ref().and_then(|a| a.read_only_hint),
        Some(true)
    );
    let props = plus
        .input_schema
        .get("properties")
        .cloned()
        .unwrap_or_default();
    assert!(props.get("b").is_none(), "fixed argument hidden: {props}");
    assert!(props.get("a").is_some(), "{props}");

    // Fixed arguments win over what the client sends; defaults fill in what it leaves out.
    let r = call(&client, "plus", json!({"a": 2, "b": 1000})).await;
    assert_eq!(r.structured_content, Some(json!({"sum": 42})), "{r:?}");
    let r = call(&client, "fixture__echo", json!({"x": 1})).await;
    assert_eq!(
        r.structured_content,
        Some(json!({"x": 1, "who": "default"}))
    );
    let r = call(&client, "fixture__echo", json!({"who": "me"})).await;
    assert_eq!(r.structured_content, Some(json!({"who": "me"})));

    // Content of other types and tool errors pass through unchanged.
    let r = call(&client, "fixture__image", json!({})).await;
    let block = serde_json::to_value(&r.content[0]).expect("json");
    assert_eq!(block["type"], "image", "{block}");
    let r = call(&client, "fixture__fail", json!({"message": "boom"})).await;
    assert_eq!(r.is_error, Some(true));
    assert_eq!(text(&r), "boom");

    // A filtered-out tool is not callable either.
    let err = client
        .call_tool(rmcp::model::CallToolRequestParams::new(
            "fixture__echo_text",
        ))
        .await;
    assert!(err.is_err(), "{err:?}");
    client.cancel().await.expect("closes");
}

#[tokio::test]
async fn an_unreachable_upstream_hides_only_its_own_tools() {
    let yaml = BASE.replace(
        "    command: \"{fixture}\"\ntools:",
        "    command: \"{fixture}\"\n  gone:\n    command: \"/nonexistent/mcp-server\"\ntools:",
    ) + "proxy:\n  upstreams:\n    gone: {}\n    fx: {include: [echo]}\n";
    let (_dir, client) = serve(&yaml).await;
    assert_eq!(names(&client).await, ["graph_echo", "fx__echo"]);
    let r = call(&client, "fx__echo", json!({"ok": true})).await;
    assert_eq!(r.structured_content, Some(json!({"ok": true})));
    client.cancel().await.expect("closes");
}

/// An upstream that was listed and then went down: `fail` keeps its last tools listed and
/// their calls fail with the upstream's error; `hide` drops them. Either way the graph tool stays.
#[tokio::test]
async fn an_upstream_that_went_down_keeps_its_tools_under_fail_and_loses_them_under_hide() {
    for (mode, kept) in [("fail", true), ("hide", false)] {
        let dir = tempfile::tempdir().expect("tempdir");
        // The upstream starts only while the marker exists: removing it keeps it down.
        let marker = dir.path().join("up");
        std::fs::write(&marker, "").expect("marker");
        let yaml = BASE.replace(
            "    command: \"{fixture}\"\ntools:",
            &format!(
                "    command: \"/bin/sh\"\n    args: [\"-c\", \"test -e {} && exec {{fixture}}\"]\ntools:",
                marker.display()
            ),
        ) + &format!(
            "proxy:\n  failureMode: {mode}\n  upstreams:\n    fx: {{include: [echo, crash, tools_changed]}}\n"
        );
        let path = write_config(dir.path(), &yaml);
        let client = connect(&["serve", path.to_str().expect("utf-8")], None).await;
        // The upstream's own order.
        let listed = ["graph_echo", "fx__echo", "fx__crash", "fx__tools_changed"];
        assert_eq!(names(&client).await, listed);
        // The upstream says its list changed (so it is listed again on next need), then dies
        // and cannot come back.
        let r = call(&client, "fx__tools_changed", json!({})).await;
        assert_ne!(r.is_error, Some(true), "{r:?}");
        std::fs::remove_file(&marker).expect("marker removed");
        let r = call(&client, "fx__crash", json!({})).await;
        assert_eq!(r.is_error, Some(true), "{r:?}");
        if kept {
            assert_eq!(names(&client).await, listed, "failureMode: {mode}");
            let r = call(&client, "fx__echo", json!({"x": 1})).await;
            assert_eq!(r.is_error, Some(true), "{r:?}");
            assert!(
                text(&r).contains("`fx`"),
                "names the upstream: {}",
                text(&r)
            );
        } else {
            assert_eq!(names(&client).await, ["graph_echo"], "failureMode: {mode}");
        }
        let r = call(&client, "graph_echo", json!({"still": "here"})).await;
        assert_ne!(r.is_error, Some(true), "{r:?}");
        client.cancel().await.expect("closes");
    }
}

/// A graph's `mcp` node has no client behind it: an upstream that asks for sampling during
/// such a call gets a clear refusal at once (and the run goes on with the tool's answer).
#[tokio::test]
async fn an_upstream_asking_a_graph_node_for_sampling_is_refused_not_left_hanging() {
    let yaml = BASE.replace(
        "tools:\n",
        r#"tools:
  - name: ask_model
    description: "a graph that calls an upstream tool which samples"
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: ask}
      - {id: ask, type: mcp, server: fx, tool: test_sampling, args: {prompt: "hi"}, next: exit}
      - {id: exit, type: exit}
"#,
    ) + PLAIN;
    let (_dir, client) = serve(&yaml).await;
    let r = call(&client, "ask_model", json!({})).await;
    let answer = serde_json::to_string(&r).unwrap_or_default();
    assert!(
        answer.contains("no client to ask"),
        "the upstream's tool reports our refusal: {answer}"
    );
    client.cancel().await.expect("closes");
}

#[tokio::test]
async fn a_name_taken_twice_without_prefixes_is_a_load_error_naming_both() {
    let dir = tempfile::tempdir().expect("tempdir");
    let yaml = BASE.replace(
        "    command: \"{fixture}\"\ntools:",
        "    command: \"{fixture}\"\n  fx2:\n    command: \"{fixture}\"\ntools:",
    ) + "proxy:\n  upstreams:\n    fx: {naming: none, include: [echo]}\n    fx2: {naming: none, include: [echo]}\n";
    let path = write_config(dir.path(), &yaml);
    let out = cli(&["serve", path.to_str().expect("utf-8")], None);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("tool `echo` of upstream `fx`")
            && err.contains("tool `echo` of upstream `fx2`"),
        "{err}"
    );
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

/// One `notifications/progress`: token, progress, total.
type Progress = (rmcp::model::ProgressToken, f64, Option<f64>);

/// A client that records the progress notifications it receives, by token.
#[derive(Clone, Default)]
struct ProgressLog(
    std::sync::Arc<std::sync::Mutex<Vec<Progress>>>,
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
);

impl rmcp::ClientHandler for ProgressLog {
    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        if let Ok(mut log) = self.0.lock() {
            log.push((params.progress_token, params.progress, params.total));
        }
    }

    async fn on_tool_list_changed(
        &self,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        self.1.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    fn get_info(&self) -> rmcp::model::ClientConfig {
        rmcp::model::ClientConfig::new(
            rmcp::model::ClientCapabilities::default(),
            rmcp::model::Implementation::new("progress-tests", "0.0.0"),
        )
        .with_protocol_version(rmcp::model::ProtocolVersion::V_2025_11_25)
    }
}

const PLAIN: &str = "\nproxy:\n  upstreams:\n    fx: {}\n";

#[tokio::test]
async fn progress_cancellation_and_list_changes_cross_the_gateway() {
    use rmcp::ServiceExt;
    use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest, ServerResult};
    use rmcp::service::PeerRequestOptions;

    let dir = tempfile::tempdir().expect("tempdir");
    let path = write_config(dir.path(), &format!("{BASE}{PLAIN}"));
    let mut cmd = tokio::process::Command::new(common::mcpflow());
    cmd.args(["serve", path.to_str().expect("utf-8")]);
    let transport = rmcp::transport::TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .map(|(t, _)| t)
        .expect("mcpflow starts");
    let log = ProgressLog::default();
    let client = log.clone().serve(transport).await.expect("initialize");

    let mut args = serde_json::Map::new();
    args.insert("steps".into(), json!(3));
    args.insert("ms".into(), json!(20));
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(
        CallToolRequestParams::new("fx__progress").with_arguments(args),
    ));
    let handle = client
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await
        .expect("sent");
    let token = handle.progress_token.clone();
    let response = handle.await_response().await.expect("answer");
    let ServerResult::CallToolResult(result) = response else {
        panic!("not a tool result: {response:?}")
    };
    assert_eq!(result.structured_content, Some(json!({"steps": 3})));
    let seen: Vec<(f64, Option<f64>)> = log
        .0
        .lock()
        .map(|l| {
            l.iter()
                .filter(|(t, ..)| *t == token)
                .map(|(_, p, t)| (*p, *t))
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(seen, [(1.0, Some(3.0)), (2.0, Some(3.0)), (3.0, Some(3.0))]);

    // A cancelled call is cancelled upstream too: the fixture counts it.
    let mut args = serde_json::Map::new();
    args.insert("key".into(), json!("cancel-me"));
    args.insert("ms".into(), json!(60_000));
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(
        CallToolRequestParams::new("fx__track").with_arguments(args),
    ));
    let handle = client
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await
        .expect("sent");
    // Wait until the upstream has the call in flight, then cancel it.
    for _ in 0..400 {
        let stats = client
            .call_tool(
                CallToolRequestParams::new("fx__track_stats").with_arguments(
                    json!({"key": "cancel-me"})
                        .as_object()
                        .cloned()
                        .unwrap_or_default(),
                ),
            )
            .await
            .expect("stats");
        if stats
            .structured_content
            .as_ref()
            .is_some_and(|s| s["in_flight"] == 1)
        {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    handle
        .cancel(Some("test".into()))
        .await
        .expect("cancel sent");
    let mut cancelled = Value::Null;
    for _ in 0..400 {
        let r = client
            .call_tool(CallToolRequestParams::new("fx__cancelled_count"))
            .await
            .expect("count");
        cancelled = r.structured_content.unwrap_or_default();
        if cancelled["cancelled"] == 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(cancelled["cancelled"], 1, "{cancelled}");
    // An upstream's list change reaches our client as our own list change.
    let r = call_plain(&client, "fx__tools_changed").await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    for _ in 0..400 {
        if log.1.load(std::sync::atomic::Ordering::SeqCst) > 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(log.1.load(std::sync::atomic::Ordering::SeqCst), 1);
    client.cancel().await.expect("closes");
}

async fn call_plain<S: rmcp::service::Service<rmcp::RoleClient>>(
    client: &rmcp::service::RunningService<rmcp::RoleClient, S>,
    tool: &'static str,
) -> rmcp::model::CallToolResult {
    client
        .call_tool(rmcp::model::CallToolRequestParams::new(tool))
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e}"))
}
