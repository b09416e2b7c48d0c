//! `mcpflow_save_tool` / `mcpflow_delete_tool` on the real binary over stdio: a saved tool is
//! served at once (connected clients told, a fresh client sees it), rejected saves leave every
//! file as it was, concurrent saves both land, a run in flight ends on its old graph and a
//! session waiting on the old graph continues on it.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::{call, cli, stderr, tool_names, write_config};
use rmcp::model::CallToolResult;
use rmcp::service::RunningService;
use serde_json::{Value, json};

const CONFIG: &str = r#"
version: "1.0"
server: {name: saving, version: "1.0.0"}
# Saved tools live in tools/, one file each; this file is never rewritten.
include: ["tools/*.yaml"]
authoring: {save: true}
mcpServers:
  fx: {command: "{fixture}"}
tools:
  - name: by_hand
    description: "written by a person"
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: exit}
      - {id: exit, type: exit}
"#;

use common::Listener;

async fn listening(config: &Path) -> (RunningService<rmcp::RoleClient, Listener>, Listener) {
    common::listening(&["serve", config.to_str().expect("utf-8")]).await
}

fn structured(result: &CallToolResult) -> Value {
    result.structured_content.clone().unwrap_or(Value::Null)
}

fn greet(greeting: &str) -> Value {
    json!({
        "name": "greet",
        "description": "Greets someone",
        "inputSchema": {"type": "object", "properties": {"who": {"type": "string"}}, "required": ["who"]},
        "nodes": [
            {"id": "entry", "type": "entry", "next": "hello"},
            {"id": "hello", "type": "transform", "transform": {"expr": format!("{{'greeting': '{greeting}, ' & $.entry.who}}")}, "next": "exit"},
            {"id": "exit", "type": "exit"}
        ]
    })
}

/// Every file under `dir`, with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("read dir").flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(
                    p.display().to_string(),
                    std::fs::read(&p).expect("read file"),
                );
            }
        }
    }
    out
}

async fn wait_for(count: &AtomicUsize, at_least: usize) {
    for _ in 0..200 {
        if count.load(Ordering::SeqCst) >= at_least {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!(
        "expected {at_least} tools/list_changed, saw {}",
        count.load(Ordering::SeqCst)
    );
}

#[tokio::test]
async fn a_saved_tool_is_served_at_once_to_connected_and_fresh_clients() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(dir.path(), CONFIG);
    let hand_written = std::fs::read(&config).expect("read");
    let (client, listener) = listening(&config).await;
    let names = tool_names_of(&client).await;
    assert!(names.contains(&"mcpflow_save_tool".to_owned()), "{names:?}");
    assert!(!names.contains(&"greet".to_owned()));
    let caps = client
        .peer_info()
        .expect("server info")
        .capabilities
        .clone();
    assert_eq!(
        caps.tools.and_then(|t| t.list_changed),
        Some(true),
        "a server whose tools can be saved declares list changes"
    );

    let saved = call_on(
        &client,
        "mcpflow_save_tool",
        json!({"definition": greet("Hello")}),
    )
    .await;
    let answer = structured(&saved);
    assert_eq!(saved.is_error, Some(false), "{answer}");
    assert_eq!(answer["saved"], "greet");
    assert_eq!(answer["created"], true);
    wait_for(&listener.0, 1).await;
    assert!(tool_names_of(&client).await.contains(&"greet".to_owned()));
    let hi = call_on(&client, "greet", json!({"who": "Ada"})).await;
    assert_eq!(structured(&hi), json!({"greeting": "Hello, Ada"}));

    let file = dir.path().join("tools/greet.yaml");
    let text = std::fs::read_to_string(&file).expect("the tool has a file of its own");
    assert!(text.starts_with("# Written by mcpflow_save_tool"), "{text}");
    assert_eq!(
        std::fs::read(&config).expect("read"),
        hand_written,
        "the hand-written config is untouched"
    );
    let out = cli(&["validate", config.to_str().expect("utf-8")], None);
    assert!(out.status.success(), "{}", stderr(&out));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("2 tool(s)"), "{said}");

    // An update replaces the saved file; a fresh client sees and calls the new tool.
    let updated = call_on(
        &client,
        "mcpflow_save_tool",
        json!({"definition": greet("Welcome")}),
    )
    .await;
    assert_eq!(structured(&updated)["created"], false, "{updated:?}");
    wait_for(&listener.0, 2).await;
    let fresh = common::connect(&["serve", config.to_str().expect("utf-8")], None).await;
    assert!(tool_names(&fresh).await.contains(&"greet".to_owned()));
    let hi = call(&fresh, "greet", json!({"who": "Ada"})).await;
    assert_eq!(structured(&hi), json!({"greeting": "Welcome, Ada"}));
    fresh.cancel().await.expect("closes");

    // Deleted: gone from the list and from disk.
    let deleted = call_on(&client, "mcpflow_delete_tool", json!({"name": "greet"})).await;
    assert_eq!(structured(&deleted)["deleted"], "greet", "{deleted:?}");
    assert!(!file.exists());
    assert!(!tool_names_of(&client).await.contains(&"greet".to_owned()));
    client.cancel().await.expect("closes");
}

#[tokio::test]
async fn a_rejected_save_leaves_every_file_byte_for_byte() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(dir.path(), CONFIG);
    let (client, _listener) = listening(&config).await;
    // Something saved already, so the tools directory has a file to keep too.
    let ok = call_on(
        &client,
        "mcpflow_save_tool",
        json!({"definition": greet("Hello")}),
    )
    .await;
    assert_eq!(ok.is_error, Some(false), "{ok:?}");
    let before = snapshot(dir.path());

    let mut broken = greet("Hello");
    broken["nodes"][1]["type"] = json!("transfrom");
    broken["nodes"][1]["transform"]["expr"] = json!("$.entry.who &");
    let refused = call_on(&client, "mcpflow_save_tool", json!({"definition": broken})).await;
    let answer = structured(&refused);
    assert_eq!(refused.is_error, Some(true), "{answer}");
    assert_eq!(answer["saved"], false);
    let problems = answer["problems"].to_string();
    assert!(problems.contains("transfrom"), "{problems}");
    assert!(
        problems.contains("transform"),
        "names what was meant: {problems}"
    );

    // A hand-written tool is never rewritten.
    let mut by_hand = greet("Hi");
    by_hand["name"] = json!("by_hand");
    let refused = call_on(&client, "mcpflow_save_tool", json!({"definition": by_hand})).await;
    assert_eq!(refused.is_error, Some(true));
    let why = common::text(&refused);
    assert!(
        why.contains("never rewrites") && why.contains("graph.yaml"),
        "{why}"
    );

    // Nor is one deleted, nor a tool that does not exist.
    let refused = call_on(&client, "mcpflow_delete_tool", json!({"name": "by_hand"})).await;
    assert!(
        common::text(&refused).contains("never rewrites"),
        "{refused:?}"
    );
    let refused = call_on(&client, "mcpflow_delete_tool", json!({"name": "nope"})).await;
    let why = common::text(&refused);
    assert!(
        why.contains("no graph tool named `nope`") && why.contains("greet"),
        "{why}"
    );

    // A name in the built-in namespace, and a malformed call.
    let mut reserved = greet("Hi");
    reserved["name"] = json!("mcpflow_greet");
    let refused = call_on(
        &client,
        "mcpflow_save_tool",
        json!({"definition": reserved}),
    )
    .await;
    assert_eq!(refused.is_error, Some(true), "{refused:?}");
    let refused = call_on(&client, "mcpflow_save_tool", json!({"tool": 1})).await;
    assert!(common::text(&refused).contains("definition"), "{refused:?}");

    assert_eq!(snapshot(dir.path()), before, "no file changed");
    client.cancel().await.expect("closes");
}

#[tokio::test]
async fn two_clients_saving_at_once_both_land() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(dir.path(), CONFIG);
    let path = config.to_str().expect("utf-8");
    let a = common::connect(&["serve", path], None).await;
    let b = common::connect(&["serve", path], None).await;
    let mut first = greet("Hello");
    first["name"] = json!("greet_a");
    let mut second = greet("Hi");
    second["name"] = json!("greet_b");
    let (ra, rb) = tokio::join!(
        call(&a, "mcpflow_save_tool", json!({"definition": first})),
        call(&b, "mcpflow_save_tool", json!({"definition": second})),
    );
    assert_eq!(ra.is_error, Some(false), "{ra:?}");
    assert_eq!(rb.is_error, Some(false), "{rb:?}");
    // Two processes on one config: each serves its own save, and a fresh one serves both.
    let c = common::connect(&["serve", path], None).await;
    let names = tool_names(&c).await;
    assert!(
        names.contains(&"greet_a".to_owned()) && names.contains(&"greet_b".to_owned()),
        "{names:?}"
    );
    for client in [a, b, c] {
        client.cancel().await.expect("closes");
    }
}

#[tokio::test]
async fn concurrent_saves_through_one_server_both_land() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(dir.path(), CONFIG);
    let (client, _listener) = listening(&config).await;
    let saves = (0..4).map(|i| {
        let mut def = greet("Hello");
        def["name"] = json!(format!("greet_{i}"));
        call_on(&client, "mcpflow_save_tool", json!({"definition": def}))
    });
    for result in futures::future::join_all(saves).await {
        assert_eq!(result.is_error, Some(false), "{result:?}");
    }
    let names = tool_names_of(&client).await;
    for i in 0..4 {
        assert!(names.contains(&format!("greet_{i}")), "{names:?}");
    }
    client.cancel().await.expect("closes");
}

const WAITING: &str = r#"
version: "1.0"
server: {name: saving, version: "1.0.0"}
include: ["tools/*.yaml"]
authoring: {save: true}
store: "sqlite://state.db"
mcpServers:
  fx: {command: "{fixture}"}
tools: []
"#;

fn slow(label: &str) -> Value {
    json!({
        "name": "slow",
        "description": "Waits, then says which graph ran",
        "inputSchema": {"type": "object"},
        "nodes": [
            {"id": "entry", "type": "entry", "next": "nap"},
            {"id": "nap", "type": "mcp", "server": "fx", "tool": "sleep", "args": {"ms": 1500}, "next": "say"},
            {"id": "say", "type": "transform", "transform": {"expr": format!("{{'graph': '{label}'}}")}, "next": "exit"},
            {"id": "exit", "type": "exit"}
        ]
    })
}

fn ask(label: &str) -> Value {
    json!({
        "name": "ask",
        "description": "Waits for an answer, then says which graph ran",
        "inputSchema": {"type": "object"},
        "nodes": [
            {"id": "entry", "type": "entry", "next": "question"},
            {"id": "question", "type": "await", "message": "Yes?", "inputSchema": {"type": "object"}, "next": "say"},
            {"id": "say", "type": "transform", "transform": {"expr": format!("{{'graph': '{label}', 'answer': $.question}}")}, "next": "exit"},
            {"id": "exit", "type": "exit"}
        ]
    })
}

#[tokio::test]
async fn a_run_in_flight_ends_on_its_graph_and_a_waiting_session_continues() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(dir.path(), WAITING);
    let (client, listener) = listening(&config).await;
    for def in [slow("old"), ask("old")] {
        let r = call_on(&client, "mcpflow_save_tool", json!({"definition": def})).await;
        assert_eq!(r.is_error, Some(false), "{r:?}");
    }
    wait_for(&listener.0, 2).await;
    let waiting = structured(&call_on(&client, "ask", json!({})).await);
    assert_eq!(waiting["status"], "waiting", "{waiting}");
    let session = waiting["sessionId"]
        .as_str()
        .expect("session id")
        .to_owned();

    let in_flight = call_on(&client, "slow", json!({}));
    let save_meanwhile = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        for def in [slow("new"), ask("new")] {
            let r = call_on(&client, "mcpflow_save_tool", json!({"definition": def})).await;
            assert_eq!(r.is_error, Some(false), "{r:?}");
        }
    };
    let (old_run, ()) = tokio::join!(in_flight, save_meanwhile);
    assert_eq!(
        structured(&old_run),
        json!({"graph": "old"}),
        "the run kept its graph"
    );
    wait_for(&listener.0, 4).await;
    let new_run = call_on(&client, "slow", json!({})).await;
    assert_eq!(structured(&new_run), json!({"graph": "new"}));

    let done = call_on(
        &client,
        "ask_continue",
        json!({"sessionId": session, "input": {"ok": true}}),
    )
    .await;
    assert_eq!(
        structured(&done),
        json!({"graph": "old", "answer": {"ok": true}}),
        "the session went on on the graph it started with: {done:?}"
    );
    client.cancel().await.expect("closes");
}

async fn call_on(
    client: &RunningService<rmcp::RoleClient, impl rmcp::ClientHandler>,
    tool: &str,
    args: Value,
) -> CallToolResult {
    let Value::Object(map) = args else {
        panic!("arguments must be an object")
    };
    client
        .call_tool(rmcp::model::CallToolRequestParams::new(tool.to_owned()).with_arguments(map))
        .await
        .unwrap_or_else(|e| panic!("tools/call {tool} failed at the protocol level: {e}"))
}

async fn tool_names_of(
    client: &RunningService<rmcp::RoleClient, impl rmcp::ClientHandler>,
) -> Vec<String> {
    let tools = client.list_all_tools().await.expect("tools/list");
    tools.iter().map(|t| t.name.to_string()).collect()
}
