//! Tool search mode (`proxy.toolSearch`), served in process (`support`) with the fixture as the
//! upstream: what is listed, the scored search, the call tool forwarding as a direct call does
//! (overrides and hooks included), and the errors of malformed calls.

mod support;

use serde_json::{Value, json};
use support::{Client, call, text};

const FIND: &str = "mcpflow_find_tool";
const CALL: &str = "mcpflow_call_tool";

fn config(extra: &str) -> String {
    format!(
        r#"
version: "1.0"
server: {{name: gw, version: "1.0.0"}}
mcpServers:
  fx:
    command: "{{fixture}}"
tools:
  - name: graph_echo
    description: "a graph tool beside the proxied ones"
    inputSchema: {{type: object}}
    nodes:
      - {{id: entry, type: entry, next: exit}}
      - {{id: exit, type: exit}}
proxy:
  toolSearch:
    pinned: ["fx__add"]
  upstreams:
    fx:
      tools:
        echo_text: {{name: say}}
{extra}"#
    )
}

async fn serve(extra: &str) -> (tempfile::TempDir, Client) {
    support::serve_yaml(&config(extra)).await
}

fn structured(r: &rmcp::model::CallToolResult) -> Value {
    r.structured_content
        .clone()
        .unwrap_or_else(|| panic!("structured content in {r:?}"))
}

/// The message of a tool-level error.
fn refusal(r: &rmcp::model::CallToolResult) -> String {
    assert_eq!(r.is_error, Some(true), "an error: {r:?}");
    text(r)
}

#[tokio::test]
async fn the_list_holds_the_graph_tools_the_pinned_ones_and_the_two_builtins() {
    let (_dir, client) = serve("").await;
    let tools = client.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| &*t.name).collect();
    assert_eq!(names, ["graph_echo", "fx__add", FIND, CALL]);
    let find = &tools[2];
    assert_eq!(find.input_schema["required"], json!(["query"]));
    // Unlisted proxied tools are still callable by name.
    let r = call(&client, "say", json!({"text": "direct"})).await;
    assert_eq!(text(&r), "direct");
    client.cancel().await.expect("closes");
}

#[tokio::test]
async fn switched_off_everything_is_listed_and_the_builtins_do_not_exist() {
    let yaml = config("").replace("toolSearch:\n", "toolSearch:\n    enabled: false\n");
    let (_dir, client) = support::serve_yaml(&yaml).await;
    let names = support::tool_names(&client).await;
    assert!(names.contains(&"fx__echo".to_owned()), "{names:?}");
    assert!(!names.iter().any(|n| n == FIND || n == CALL), "{names:?}");
    let r = client
        .call_tool(rmcp::model::CallToolRequestParams::new(FIND))
        .await;
    assert!(
        r.is_err() || r.as_ref().is_ok_and(|r| r.is_error == Some(true)),
        "{r:?}"
    );
    client.cancel().await.expect("closes");
}

#[tokio::test]
async fn the_search_answers_best_first_with_scores_and_full_schemas() {
    let (_dir, client) = serve("").await;
    let found = structured(&call(&client, FIND, json!({"query": "fx add"})).await);
    let first = &found["results"][0];
    assert_eq!(first["name"], "fx__add");
    assert_eq!(first["score"], 100);
    assert_eq!(first["server"], "fx");
    assert_eq!(first["matched"], "name");
    assert_eq!(first["inputSchema"]["required"], json!(["a", "b"]));
    assert_eq!(first["description"], "Returns {sum: a + b}.");

    // Renamed tools are found under the name they are listed (and called) by.
    let found = structured(&call(&client, FIND, json!({"query": "say"})).await);
    assert_eq!(found["results"][0]["name"], "say");

    // Parameter names are searched, below a name; best first throughout.
    let found = structured(&call(&client, FIND, json!({"query": "ms", "limit": 50})).await);
    let results = found["results"].as_array().expect("results");
    let names: Vec<&str> = results.iter().filter_map(|r| r["name"].as_str()).collect();
    assert!(names.contains(&"fx__sleep"), "{found}");
    let sleep = results
        .iter()
        .find(|r| r["name"] == "fx__sleep")
        .expect("sleep");
    assert_eq!(sleep["matched"], "parameter");
    let scores: Vec<u64> = results.iter().filter_map(|r| r["score"].as_u64()).collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");

    // The limit cuts, the total counts everything that scored.
    let found = structured(&call(&client, FIND, json!({"query": "e", "limit": 1})).await);
    assert_eq!(found["results"].as_array().map(Vec::len), Some(1));
    assert!(found["total"].as_u64() > Some(1), "{found}");

    // Filtered by server: an upstream that exists gives its tools.
    let found = structured(&call(&client, FIND, json!({"query": "echo", "server": "fx"})).await);
    assert_eq!(found["results"][0]["name"], "fx__echo");

    let nothing = structured(&call(&client, FIND, json!({"query": "qqqqzzzz"})).await);
    assert_eq!(nothing["total"], 0);
    assert!(nothing["note"].as_str().is_some(), "{nothing}");
    client.cancel().await.expect("closes");
}

#[tokio::test]
async fn the_call_tool_answers_as_a_direct_call_does() {
    let (_dir, client) = serve("").await;
    let direct = call(&client, "fx__add", json!({"a": 2, "b": 3})).await;
    let through = call(
        &client,
        CALL,
        json!({"name": "fx__add", "arguments": {"a": 2, "b": 3}}),
    )
    .await;
    assert_eq!(structured(&through)["sum"].as_f64(), Some(5.0));
    assert_eq!(through.content, direct.content);
    assert_eq!(through.structured_content, direct.structured_content);
    assert_eq!(through.is_error, direct.is_error);
    // Through the override's name to the upstream's own tool.
    let r = call(
        &client,
        CALL,
        json!({"name": "say", "arguments": {"text": "hi"}}),
    )
    .await;
    assert_eq!(text(&r), "hi");
    // A tool that fails fails the same way.
    let r = call(
        &client,
        CALL,
        json!({"name": "fx__fail", "arguments": {"message": "no"}}),
    )
    .await;
    assert_eq!(refusal(&r), "no");
    client.cancel().await.expect("closes");
}

#[tokio::test]
async fn hooks_see_calls_through_the_call_tool_as_direct_ones() {
    let (_dir, client) = serve(
        r#"
hooks:
  - id: guard
    method: tools/call
    phase: pre
    tool: echo_text
    script: |
      (ctx) => ctx.request.params.arguments.text === "rm -rf /" ? {reject: "not that, " + ctx.metadata.toolName} : undefined
  - id: sign
    method: tools/call
    phase: post
    tool: echo_text
    script: |
      (ctx) => { ctx.response.content[0].text += " (signed)"; return ctx; }
"#,
    )
    .await;
    let bad = json!({"text": "rm -rf /"});
    let direct = call(&client, "say", bad.clone()).await;
    assert_eq!(refusal(&direct), "not that, echo_text");
    let through = call(&client, CALL, json!({"name": "say", "arguments": bad})).await;
    assert_eq!(refusal(&through), "not that, echo_text");
    let ok = call(
        &client,
        CALL,
        json!({"name": "say", "arguments": {"text": "ls"}}),
    )
    .await;
    assert_eq!(text(&ok), "ls (signed)");
    client.cancel().await.expect("closes");
}

#[tokio::test]
async fn malformed_calls_say_what_and_how_to_fix() {
    let (_dir, client) = serve("").await;
    let cases = [
        (CALL, json!({}), "missing `name`"),
        (CALL, json!({"name": 3}), "`name` must be a string"),
        (
            CALL,
            json!({"name": "fx__add", "arguments": [1, 2]}),
            "`arguments` must be an object",
        ),
        (
            CALL,
            json!({"name": "fx__add", "args": {}}),
            "unknown field `args`",
        ),
        (CALL, json!({"name": "fx__ad"}), "the closest are `fx__add`"),
        (CALL, json!({"name": "nothing_like_it_at_all_99"}), FIND),
        (CALL, json!({"name": "graph_echo"}), "is a graph tool"),
        (CALL, json!({"name": CALL}), "is a built-in tool"),
        (FIND, json!({}), "missing `query`"),
        (FIND, json!({"query": 7}), "`query` must be a string"),
        (FIND, json!({"query": "--"}), "no letters or digits"),
        (
            FIND,
            json!({"query": "x", "limit": 0}),
            "`limit` must be a whole number from 1 to 50",
        ),
        (
            FIND,
            json!({"query": "x", "server": "nope"}),
            "use one of `fx`",
        ),
    ];
    for (tool, args, expected) in cases {
        let r = call(&client, tool, args.clone()).await;
        let message = refusal(&r);
        assert!(
            message.contains(expected),
            "{tool} {args}: {message:?} should contain {expected:?}"
        );
    }
    client.cancel().await.expect("closes");
}

#[tokio::test]
async fn a_graph_tool_under_a_builtin_name_is_a_load_error() {
    // The loader refuses it at the name (crates/config/tests/proxy.rs); a config made in
    // code is refused by the gateway itself.
    let yaml = config("")
        .replace("name: graph_echo", &format!("name: {FIND}"))
        .replace("  toolSearch:\n", "  toolSearch:\n    enabled: false\n");
    let (_dir, mut loaded, engine) = support::load(&yaml);
    if let Some(proxy) = loaded.config.proxy.as_mut() {
        proxy.tool_search = Some(Default::default());
    }
    let Err(e) = mcpflow_server::GraphServer::new(&loaded.config, engine) else {
        panic!("a graph tool named {FIND} must not load with toolSearch on");
    };
    assert!(e.to_string().contains("rename the graph tool"), "{e}");
}

#[tokio::test]
async fn with_the_authoring_tools_every_name_is_listed_once() {
    let (_dir, loaded, engine) = support::load(&config("authoring: {}\n"));
    let authoring = support::authoring(&loaded, &engine);
    let server = mcpflow_server::GraphServer::new(&loaded.config, engine)
        .expect("the server starts")
        .with_authoring(authoring)
        .expect("authoring added");
    server.check_names().await.expect("no name is taken twice");
    let client = support::connect(server).await;
    let names = support::tool_names(&client).await;
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), names.len(), "{names:?}");
    assert!(names.iter().any(|n| n == "mcpflow_search"), "{names:?}");
    assert!(names.iter().any(|n| n == FIND) && names.iter().any(|n| n == CALL));
    client.cancel().await.expect("closes");
}

/// Over npm's server-filesystem and server-everything: the search finds a tool by what it
/// does, and the call tool reads a file as the direct call does.
#[tokio::test]
async fn npm_servers_are_found_by_what_their_tools_do() {
    let ok = std::process::Command::new("npx")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "this test needs node and npx (scripts/test warms the npm servers)"
    );
    let root = tempfile::tempdir().expect("tempdir");
    let root_path = root.path().canonicalize().expect("canonical tempdir");
    std::fs::write(root_path.join("hello.txt"), "hello from disk").expect("write");
    let yaml = format!(
        r#"
version: "1.0"
server: {{name: gw, version: "1.0.0"}}
mcpServers:
  filesystem:
    command: npx
    args: ["-y", "@modelcontextprotocol/server-filesystem@2026.8.31", "{root}"]
  everything:
    command: npx
    args: ["-y", "@modelcontextprotocol/server-everything@2026.8.31"]
proxy:
  toolSearch: {{}}
  upstreams:
    filesystem: {{prefix: fs}}
    everything: {{}}
tools: []
"#,
        root = root_path.display()
    );
    let (_dir, client) = support::serve_yaml(&yaml).await;
    assert_eq!(support::tool_names(&client).await, [FIND, CALL]);

    // An npx server slower than the start's patience is searched once it answers.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
    let found = loop {
        let found = structured(&call(&client, FIND, json!({"query": "list directory"})).await);
        if found["total"] != 0 || std::time::Instant::now() > deadline {
            break found;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    };
    assert_eq!(found["results"][0]["name"], "fs__list_directory", "{found}");
    assert_eq!(found["results"][0]["server"], "filesystem");
    assert!(
        found["results"][0]["inputSchema"]["properties"]["path"].is_object(),
        "{found}"
    );
    // Only the named server's tools; `everything` may answer later than `filesystem` did.
    let found = loop {
        let found = structured(
            &call(
                &client,
                FIND,
                json!({"query": "sum", "server": "everything"}),
            )
            .await,
        );
        if found["total"] != 0 || std::time::Instant::now() > deadline {
            break found;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    };
    let results = found["results"].as_array().expect("results");
    assert_eq!(results[0]["name"], "everything__get-sum", "{found}");
    assert!(
        results.iter().all(|r| r["server"] == "everything"),
        "{found}"
    );

    let file = root_path.join("hello.txt").display().to_string();
    let direct = call(&client, "fs__read_text_file", json!({"path": file})).await;
    let through = call(
        &client,
        CALL,
        json!({"name": "fs__read_text_file", "arguments": {"path": file}}),
    )
    .await;
    assert_eq!(text(&through), "hello from disk");
    assert_eq!(through.content, direct.content);
    client.cancel().await.expect("closes");
}
