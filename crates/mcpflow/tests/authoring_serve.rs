//! `mcpflow serve --authoring`: the built-in authoring tools on the real binary over stdio,
//! and a graph tool in their namespace refused at start with the fix.

mod common;

use common::{cli, connect, stderr, write_config};

const CONFIG: &str = r#"
version: "1.0"
server: {name: authored, version: "1.0.0"}
tools:
  - name: graph_echo
    description: "answers its arguments"
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: exit}
      - {id: exit, type: exit}
"#;

#[tokio::test]
async fn the_flag_adds_the_built_in_tools_and_without_it_there_are_none() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write_config(dir.path(), CONFIG);
    let path = path.to_str().expect("utf-8");
    let client = connect(&["serve", path], None).await;
    assert_eq!(common::tool_names(&client).await, ["graph_echo"]);
    client.cancel().await.expect("closes");
    let client = connect(&["serve", path, "--authoring"], None).await;
    let names = common::tool_names(&client).await;
    for built_in in [
        "mcpflow_syntax",
        "mcpflow_node_types",
        "mcpflow_validate_tool",
    ] {
        assert!(
            names.iter().any(|n| n == built_in),
            "{built_in} in {names:?}"
        );
    }
    // callUpstreams is off unless the config's `authoring:` section turns it on.
    assert!(
        !names.iter().any(|n| n == "mcpflow_call_upstream"),
        "{names:?}"
    );
    client.cancel().await.expect("closes");
}

#[test]
fn a_graph_tool_named_like_a_built_in_is_a_start_error_with_the_fix() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write_config(dir.path(), &CONFIG.replace("graph_echo", "mcpflow_echo"));
    let out = cli(
        &["serve", path.to_str().expect("utf-8"), "--authoring"],
        None,
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("`mcpflow_echo`") && err.contains("rename"),
        "{err}"
    );
}
