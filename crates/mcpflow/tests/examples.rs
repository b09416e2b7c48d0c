//! The runnable examples the README points to, as a user runs them: `examples/gateway.yaml`
//! served over stdio to an MCP client (server-filesystem from npm behind it, a hook in front),
//! and `examples/approval.yaml`'s waiting session, over MCP and from the command line.
mod common;

use std::path::{Path, PathBuf};

use common::{call, cli, connect, repo_example, stderr, stdout_json, text, tool_names};
use serde_json::{Value, json};

fn utf8(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

fn structured(result: &rmcp::model::CallToolResult) -> Value {
    result
        .structured_content
        .clone()
        .unwrap_or_else(|| panic!("no structuredContent: {result:?}"))
}

/// `examples/gateway.yaml` started in a directory of its own (server-filesystem serves the
/// directory mcpflow starts in): the proxied tools under their prefix, the graph tool beside
/// them, a call through, and the hook's refusal of a parent path.
#[tokio::test]
async fn the_gateway_example_proxies_server_filesystem_behind_its_hook() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("notes.txt"), "hello from the gateway\n").expect("write");
    std::fs::create_dir(dir.path().join("sub")).expect("mkdir");
    let config = repo_example("gateway.yaml")
        .canonicalize()
        .expect("examples/gateway.yaml");
    let client = connect(&["serve", utf8(&config)], Some(dir.path())).await;

    let mut names = tool_names(&client).await;
    names.sort();
    assert_eq!(
        names,
        [
            "count_entries",
            "fs__get_file_info",
            "fs__list_directory",
            "fs__read_text_file"
        ]
    );

    let read = call(&client, "fs__read_text_file", json!({"path": "notes.txt"})).await;
    assert_ne!(read.is_error, Some(true), "{read:?}");
    assert!(text(&read).contains("hello from the gateway"), "{read:?}");

    let counted = call(&client, "count_entries", json!({"directory": "."})).await;
    assert_eq!(structured(&counted), json!({"files": 1, "directories": 1}));

    let refused = call(
        &client,
        "fs__read_text_file",
        json!({"path": "../etc/passwd"}),
    )
    .await;
    assert_eq!(refused.is_error, Some(true), "{refused:?}");
    assert!(text(&refused).contains("no parent paths"), "{refused:?}");
    client.cancel().await.expect("closes");
}

/// `examples/approval.yaml` copied into a temp dir, so that its `state/` lands there.
fn approval_in_temp() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("approval.yaml");
    std::fs::copy(repo_example("approval.yaml"), &path).expect("copy the example");
    (dir, path)
}

/// The commands of the example's header and of the README: `run` prints the handle,
/// `sessions continue` the priced order; the store is the `state/` the config names.
#[test]
fn the_approval_example_waits_and_is_continued_from_the_command_line() {
    let (dir, config) = approval_in_temp();
    let started = cli(
        &[
            "run",
            utf8(&config),
            "order",
            "--args",
            r#"{"item": "tea"}"#,
        ],
        None,
    );
    assert!(started.status.success(), "{}", stderr(&started));
    let handle = stdout_json(&started);
    assert_eq!(handle["status"], "waiting", "{handle}");
    assert_eq!(handle["message"], "How many tea?", "{handle}");
    let session = handle["sessionId"].as_str().expect("sessionId");
    assert!(
        dir.path().join("state/mcpflow.db").exists(),
        "the store is state/mcpflow.db"
    );

    let listed = stdout_json(&cli(
        &["sessions", "list", "--json", "--config", utf8(&config)],
        None,
    ));
    assert!(listed.to_string().contains(session), "{listed}");

    let done = cli(
        &[
            "sessions",
            "continue",
            session,
            "--input",
            r#"{"quantity": 3}"#,
            "--config",
            utf8(&config),
        ],
        None,
    );
    assert!(done.status.success(), "{}", stderr(&done));
    assert_eq!(
        stdout_json(&done),
        json!({"item": "tea", "quantity": 3, "total": 13.5})
    );
}

/// Over MCP: `order` answers the handle, `order_continue` with a bad input leaves it waiting,
/// with a good one finishes it.
#[tokio::test]
async fn the_approval_example_waits_and_is_continued_over_mcp() {
    let (_dir, config) = approval_in_temp();
    let client = connect(&["serve", utf8(&config)], None).await;
    let names = tool_names(&client).await;
    for name in ["order", "order_continue", "order_cancel", "order_status"] {
        assert!(names.iter().any(|n| n == name), "{name} in {names:?}");
    }
    let handle = structured(&call(&client, "order", json!({"item": "cake"})).await);
    assert_eq!(handle["status"], "waiting", "{handle}");
    let session = handle["sessionId"].as_str().expect("sessionId").to_owned();

    let rejected = call(
        &client,
        "order_continue",
        json!({"sessionId": session, "input": {"quantity": 0}}),
    )
    .await;
    assert_eq!(rejected.is_error, Some(true), "{rejected:?}");

    let done = call(
        &client,
        "order_continue",
        json!({"sessionId": session, "input": {"quantity": 2}}),
    )
    .await;
    assert_eq!(
        structured(&done),
        json!({"item": "cake", "quantity": 2, "total": 6})
    );
    client.cancel().await.expect("closes");
}
