//! `script` nodes through the binary: `mcpflow run`, `validate`, and a tool call over MCP stdio.
mod common;

use common::{call, cli, connect, repo_example, stderr, stdout_json, text};
use serde_json::json;

const ORDER: &str = r#"{"items": [{"name": "tea", "price": 4.5, "qty": 2}, {"name": "cake", "price": 3, "qty": 1}], "coupon": "TENOFF"}"#;

#[test]
fn run_prices_the_example_order_and_history_keeps_the_console() {
    let path = repo_example("script.yaml");
    let path = path.to_str().expect("utf-8 path");
    let out = cli(&["run", path, "order_total", "--args", ORDER], None);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout_json(&out),
        json!({"total": 10.8, "summary": "2 x tea, 1 x cake = 10.8"})
    );

    let out = cli(
        &["run", path, "order_total", "--args", ORDER, "--history"],
        None,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let history = stdout_json(&out)["history"].clone();
    assert_eq!(history[1]["type"], "script");
    assert_eq!(history[1]["logs"], json!(["2 items, subtotal 12"]));
}

const BROKEN: &str = r#"version: "1.0"
server: { name: "broken", version: "1.0.0" }
tools:
  - name: "t"
    nodes:
      - { id: entry, type: entry, next: s }
      - id: s
        type: script
        source: |
          (input) => {
            const total = input.entry.n *;
            return { total };
          }
        next: exit
      - { id: exit, type: exit }
"#;

#[test]
fn validate_points_at_the_script_syntax_error_in_the_yaml() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("broken.yaml");
    std::fs::write(&path, BROKEN).expect("write");
    let out = cli(&["validate", path.to_str().expect("utf-8")], None);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    // Line 11 of the file; the `;` after `*` is at column 42.
    assert!(err.contains("broken.yaml:11:42: "), "{err}");
    assert!(
        err.contains("syntax error in the script of node \"s\""),
        "{err}"
    );
}

const SPIN: &str = r#"version: "1.0"
server: { name: "spin", version: "1.0.0" }
tools:
  - name: "spin"
    nodes:
      - { id: entry, type: entry, next: s }
      - { id: s, type: script, source: "() => { for (;;) {} }", limits: { cpuMs: 20 }, next: exit }
      - { id: exit, type: exit }
  - name: "add"
    nodes:
      - { id: entry, type: entry, next: s }
      - { id: s, type: script, source: "(ctx) => ctx.entry.a + ctx.entry.b", next: exit }
      - { id: exit, type: exit }
"#;

#[test]
fn run_of_a_spinning_script_fails_with_exit_code_1() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("spin.yaml");
    std::fs::write(&path, SPIN).expect("write");
    let out = cli(&["run", path.to_str().expect("utf-8"), "spin"], None);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("node `s`"), "{err}");
    assert!(err.contains("CPU time budget of 20ms"), "{err}");
}

#[tokio::test]
async fn over_mcp_a_failing_script_is_a_tool_error_and_the_server_keeps_serving() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("spin.yaml");
    std::fs::write(&path, SPIN).expect("write");
    let client = connect(&["serve", path.to_str().expect("utf-8")], None).await;
    let spun = call(&client, "spin", json!({})).await;
    assert_eq!(spun.is_error, Some(true));
    assert!(text(&spun).contains("CPU time budget"), "{}", text(&spun));
    let added = call(&client, "add", json!({"a": 2, "b": 40})).await;
    assert_ne!(added.is_error, Some(true), "{}", text(&added));
    assert_eq!(text(&added), "42");
    client.cancel().await.expect("closes");
}
