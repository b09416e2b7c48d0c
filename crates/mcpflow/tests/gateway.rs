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

/// A proxied upstream whose program does not exist: listings and calls of unknown names answer
/// at once, every time, instead of waiting out its growing restart pause inline (0.25, 0.5,
/// 1, 2, 4, 8, 8 s: 24 s over these seven listings before). The bounds below are generous:
/// they tell "answered at once" from "waited the pause", nothing finer.
#[tokio::test]
async fn a_dead_upstream_slows_no_listing_and_no_unknown_call() {
    let yaml = BASE.replace(
        "    command: \"{fixture}\"\ntools:",
        "    command: \"{fixture}\"\n  gone:\n    command: \"/nonexistent/mcp-server\"\ntools:",
    ) + "proxy:\n  upstreams:\n    gone: {}\n    fx: {include: [echo]}\n";
    let (_dir, client) = serve(&yaml).await;
    let started = std::time::Instant::now();
    for _ in 0..7 {
        assert_eq!(names(&client).await, ["graph_echo", "fx__echo"]);
    }
    for _ in 0..3 {
        let unknown = client
            .call_tool(rmcp::model::CallToolRequestParams::new("gone__nothing"))
            .await;
        assert!(unknown.is_err(), "{unknown:?}");
    }
    assert!(
        started.elapsed() < std::time::Duration::from_secs(8),
        "7 listings and 3 unknown calls took {:?}",
        started.elapsed()
    );
    client.cancel().await.expect("closes");
}

/// A proxied upstream that never answers `initialize` (`sleep 3600`) stalls no client: the
/// gateway's own `initialize` and every listing answer well before the 30 s connect timeout
/// they each used to wait out, with the other upstream's tools.
#[tokio::test]
async fn a_stuck_upstream_stalls_neither_initialize_nor_listings() {
    let yaml = BASE.replace(
        "    command: \"{fixture}\"\ntools:",
        "    command: \"{fixture}\"\n  stuck:\n    command: sleep\n    args: [\"3600\"]\ntools:",
    ) + "proxy:\n  upstreams:\n    stuck: {}\n    fx: {include: [echo]}\n";
    let started = std::time::Instant::now();
    let (_dir, client) = serve(&yaml).await;
    let initialized = started.elapsed();
    assert!(
        // The start waits `START_PATIENCE` (10 s) once; it used to wait the 30 s timeout.
        initialized < std::time::Duration::from_secs(22),
        "initialize took {initialized:?}"
    );
    for _ in 0..3 {
        let listed = std::time::Instant::now();
        assert_eq!(names(&client).await, ["graph_echo", "fx__echo"]);
        assert!(
            listed.elapsed() < std::time::Duration::from_secs(5),
            "a listing took {:?}",
            listed.elapsed()
        );
    }
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
