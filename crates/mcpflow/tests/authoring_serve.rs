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

#[tokio::test]
async fn the_prompts_walk_a_model_through_writing_and_debugging() {
    use rmcp::model::GetPromptRequestParams;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write_config(dir.path(), CONFIG);
    let client = connect(
        &["serve", path.to_str().expect("utf-8"), "--authoring"],
        None,
    )
    .await;
    let caps = client
        .peer_info()
        .expect("server info")
        .capabilities
        .clone();
    assert!(caps.prompts.is_some(), "prompts are declared: {caps:?}");
    let prompts = client.list_all_prompts().await.expect("prompts/list");
    let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["mcpflow_write_tool", "mcpflow_debug_run"]);

    let text_of = |r: rmcp::model::GetPromptResult| {
        let content = serde_json::to_value(&r.messages[0].content).expect("serializes");
        content["text"].as_str().expect("a text message").to_owned()
    };
    let mut args = serde_json::Map::new();
    args.insert("goal".into(), "count files by extension".into());
    args.insert("upstream".into(), "filesystem".into());
    let write = client
        .get_prompt(GetPromptRequestParams::new("mcpflow_write_tool").with_arguments(args))
        .await
        .expect("prompts/get");
    let text = text_of(write);
    for needed in [
        "count files by extension",
        "mcpflow_syntax",
        "{\"server\": \"filesystem\"}",
        "mcpflow_validate_tool",
        "mcpflow_run_tool",
        "Saving is off",
    ] {
        assert!(text.contains(needed), "{needed} in:\n{text}");
    }
    // callUpstreams is off: the prompt does not send the model to a tool it cannot call.
    assert!(!text.contains("mcpflow_call_upstream"), "{text}");

    let missing = client
        .get_prompt(GetPromptRequestParams::new("mcpflow_write_tool"))
        .await
        .expect_err("a goal is required");
    assert!(missing.to_string().contains("goal"), "{missing}");

    let mut args = serde_json::Map::new();
    args.insert("runId".into(), "abc-1".into());
    let debug = client
        .get_prompt(GetPromptRequestParams::new("mcpflow_debug_run").with_arguments(args))
        .await
        .expect("prompts/get");
    let text = text_of(debug);
    assert!(
        text.contains("{\"runId\": \"abc-1\"}") && text.contains("mcpflow_get_run"),
        "{text}"
    );
    client.cancel().await.expect("closes");
}
