//! The MCP face in process: a `GraphServer` served on one end of an in-memory duplex stream,
//! the rmcp client on the other, no binary spawned. What the server itself decides is checked
//! here (listing, arguments, results, hooks on graph tools, what it declares and refuses, the
//! gateway's routing); the transports and the CLI keep their spawning tests in
//! `crates/mcpflow/tests`. The proxied upstream is the workspace's fixture server, a real
//! child process over a real pipe.

mod support;

use mcpflow_server::{GraphServer, ServerError};
use rmcp::model::{CallToolRequestParams, ErrorCode};
use serde_json::json;
use support::{call, text};

async fn serve(yaml: &str) -> support::Client {
    // The directory holds nothing these configs read once they are loaded.
    support::serve_yaml(yaml).await.1
}

const GRAPHS: &str = r#"
version: "1.0"
server: {name: inproc, version: "1.0.0", title: "In process"}
tools:
  - name: double
    description: "doubles n"
    inputSchema:
      type: object
      properties: {n: {type: integer, minimum: 0}}
      required: [n]
    outputSchema:
      type: object
      properties: {twice: {type: integer}}
      required: [twice]
    nodes:
      - {id: entry, type: entry, next: calc}
      - {id: calc, type: transform, transform: {expr: '{"twice": $.entry.n * 2}'}, next: exit}
      - {id: exit, type: exit}
  - name: liar
    description: "promises an object with `twice`, answers a string"
    inputSchema: {type: object}
    outputSchema: {type: object, required: [twice]}
    nodes:
      - {id: entry, type: entry, next: say}
      - {id: say, type: transform, transform: {expr: '"not an object"'}, next: exit}
      - {id: exit, type: exit}
"#;

#[tokio::test]
async fn tools_are_listed_with_their_full_schemas_and_run_on_call() {
    let client = serve(GRAPHS).await;
    let info = client.peer_info().expect("initialized");
    let server = info.server_info.as_ref().expect("server info");
    assert_eq!(server.name, "inproc");
    assert_eq!(server.title.as_deref(), Some("In process"));
    // No `proxy:`: tools only, nothing more is declared.
    assert!(info.capabilities.resources.is_none() && info.capabilities.logging.is_none());
    let tools = client.list_all_tools().await.expect("tools/list");
    let double = tools.iter().find(|t| t.name == "double").expect("listed");
    assert_eq!(double.input_schema["required"], json!(["n"]));
    assert_eq!(
        double.output_schema.as_ref().map(|s| s["required"].clone()),
        Some(json!(["twice"]))
    );
    let r = call(&client, "double", json!({"n": 21})).await;
    assert_eq!(r.is_error, Some(false), "{r:?}");
    assert_eq!(r.structured_content, Some(json!({"twice": 42})));
    client.cancel().await.expect("closes");
}

#[tokio::test]
async fn bad_arguments_and_results_are_tool_errors_that_say_where() {
    let client = serve(GRAPHS).await;
    let r = call(&client, "double", json!({"n": -1})).await;
    assert_eq!(r.is_error, Some(true));
    let message = text(&r);
    assert!(
        message.starts_with("invalid arguments for `double`") && message.contains("/n"),
        "{message}"
    );
    let r = call(&client, "liar", json!({})).await;
    assert_eq!(r.is_error, Some(true));
    assert!(
        text(&r).contains("does not match its outputSchema"),
        "{r:?}"
    );
    // An unknown name is a protocol error that lists what exists.
    let e = client
        .call_tool(CallToolRequestParams::new("nope"))
        .await
        .expect_err("unknown tool");
    assert!(e.to_string().contains("double, liar"), "{e}");
    client.cancel().await.expect("closes");
}

#[tokio::test]
async fn methods_of_capabilities_not_declared_are_not_found() {
    let client = serve(GRAPHS).await;
    let e = client
        .list_resources(None)
        .await
        .expect_err("no resources without proxy");
    let rmcp::ServiceError::McpError(e) = e else {
        panic!("a JSON-RPC error, got {e:?}")
    };
    assert_eq!(e.code, ErrorCode::METHOD_NOT_FOUND);
    let e = client
        .list_prompts(None)
        .await
        .expect_err("no prompts without proxy");
    assert!(e.to_string().contains("offers no prompts"), "{e}");
    client.cancel().await.expect("closes");
}

const GATEWAY: &str = r#"
version: "1.0"
server: {name: gw, version: "1.0.0"}
mcpServers:
  fx:
    command: "{fixture}"
proxy:
  upstreams:
    fx:
      include: ["echo"]
tools:
  - name: graph_echo
    description: "answers its arguments"
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: exit}
      - {id: exit, type: exit}
hooks:
  - id: guard
    method: tools/call
    phase: pre
    appliesTo: all
    script: |
      (ctx) => {
        const path = ctx.request.params.arguments.path;
        if (typeof path === "string" && path.includes("..")) return {reject: "no .. in " + ctx.request.params.name};
        ctx.request.params.arguments.seen = ctx.metadata.serverName;
        return ctx;
      }
  - id: tag
    method: tools/call
    phase: post
    appliesTo: all
    script: |
      (ctx) => { ctx.response.structuredContent = {tagged: ctx.response.structuredContent}; return ctx; }
"#;

#[tokio::test]
async fn one_hook_sequence_guards_proxied_and_graph_tools_alike() {
    let client = serve(GATEWAY).await;
    let names: Vec<String> = client
        .list_all_tools()
        .await
        .expect("tools/list")
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(names, ["graph_echo", "fx__echo"]);
    // The same pre and post hooks around a proxied call and a graph tool's run.
    let proxied = call(&client, "fx__echo", json!({"path": "notes.txt"})).await;
    assert_eq!(
        proxied.structured_content,
        Some(json!({"tagged": {"path": "notes.txt", "seen": "fx"}})),
        "{proxied:?}"
    );
    let graph = call(&client, "graph_echo", json!({"path": "notes.txt"})).await;
    assert_eq!(
        graph.structured_content,
        Some(json!({"tagged": {"path": "notes.txt", "seen": null}})),
        "{graph:?}"
    );
    for tool in ["fx__echo", "graph_echo"] {
        let r = call(&client, tool, json!({"path": "../etc/shadow"})).await;
        assert_eq!(r.is_error, Some(true), "{tool}: {r:?}");
        let expected = if tool == "fx__echo" { "echo" } else { tool };
        assert_eq!(text(&r), format!("no .. in {expected}"));
    }
    // With `proxy:`, list changes and logging are declared; the fixture passes resources.
    let caps = &client.peer_info().expect("initialized").capabilities;
    assert!(caps.tools.as_ref().and_then(|t| t.list_changed) == Some(true));
    assert!(caps.logging.is_some());
    client.cancel().await.expect("closes");
}

const AUTHORING: &str = r#"
version: "1.0"
server: {name: authored, version: "1.0.0", instructions: "Graph tools for tests."}
authoring: {search: false}
tools:
  - name: graph_echo
    description: "answers its arguments"
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: exit}
      - {id: exit, type: exit}
"#;

#[tokio::test]
async fn the_authoring_tools_are_listed_and_answer_only_when_added() {
    let (_dir, loaded, engine) = support::load(AUTHORING);
    let authoring = support::authoring(&loaded, &engine);
    let plain = GraphServer::new(&loaded.config, engine).expect("starts");
    let with = plain.clone().with_authoring(authoring.clone());
    assert!(
        matches!(with, Err(ServerError::AlreadyShared)),
        "a clone shares the server"
    );
    let client = support::connect(plain).await;
    assert_eq!(support::tool_names(&client).await, ["graph_echo"]);
    let e = client
        .call_tool(CallToolRequestParams::new("mcpflow_node_types"))
        .await
        .expect_err("not a tool without authoring");
    assert!(e.to_string().contains("unknown tool"), "{e}");
    client.cancel().await.expect("closes");

    let (_dir, loaded, engine) = support::load(AUTHORING);
    let authoring = support::authoring(&loaded, &engine);
    let server = GraphServer::new(&loaded.config, engine)
        .and_then(|s| s.with_authoring(authoring))
        .expect("authoring added");
    let client = support::connect(server).await;
    let names = support::tool_names(&client).await;
    assert_eq!(names[0], "graph_echo");
    assert!(names.contains(&"mcpflow_syntax".to_owned()), "{names:?}");
    // `search: false` in the config's section: the search tool is not listed at all.
    assert!(!names.contains(&"mcpflow_search".to_owned()), "{names:?}");
    let instructions = client
        .peer_info()
        .and_then(|i| i.instructions.clone())
        .expect("instructions");
    assert!(
        instructions.starts_with("Graph tools for tests."),
        "{instructions}"
    );
    assert!(instructions.contains("mcpflow_syntax"), "{instructions}");
    let r = call(&client, "mcpflow_node_types", json!({})).await;
    assert_eq!(r.is_error, Some(false), "{r:?}");
    assert!(text(&r).contains("transform"), "{}", text(&r));
    client.cancel().await.expect("closes");
}

#[tokio::test]
async fn a_graph_tool_in_the_authoring_namespace_is_refused() {
    let yaml = AUTHORING.replace("name: graph_echo", "name: mcpflow_echo");
    let (_dir, loaded, engine) = support::load(&yaml);
    let authoring = support::authoring(&loaded, &engine);
    let refused = GraphServer::new(&loaded.config, engine)
        .and_then(|s| s.with_authoring(authoring))
        .err()
        .expect("a clash");
    let message = refused.to_string();
    assert!(
        message.contains("`mcpflow_echo`") && message.contains("reserved"),
        "{message}"
    );
}
