//! Three real upstreams from npm behind one mcpflow, with prefixes, filters and overrides:
//! `@modelcontextprotocol/server-filesystem`, `server-memory` and `server-everything` (pinned;
//! `scripts/test` warms them), listed and called by an rmcp client over stdio.
mod common;

use common::{call, connect, text, write_config};
use serde_json::json;

const CONFIG: &str = r#"
version: "1.0"
server: {name: aggregate, version: "1.0.0"}
mcpServers:
  filesystem:
    command: npx
    args: ["-y", "@modelcontextprotocol/server-filesystem@2026.8.31", "{root}"]
  memory:
    command: npx
    args: ["-y", "@modelcontextprotocol/server-memory@2026.8.31"]
    env: {MEMORY_FILE_PATH: "{root}/memory.jsonl"}
  everything:
    command: npx
    args: ["-y", "@modelcontextprotocol/server-everything@2026.8.31"]
proxy:
  upstreams:
    filesystem:
      prefix: fs
      include: ["read_text_file", "list_directory", "write_file"]
      tools:
        list_directory:
          name: ls_root
          description: "Lists the sandbox root"
          fixedArguments: {path: "{root}"}
    memory:
      prefix: mem
      separator: "."
      exclude: ["delete_*"]
    everything:
      prefix: ev
      include: ["echo", "get-sum", "get-tiny-image", "get-structured-content"]
      tools:
        get-sum:
          title: "Add two numbers"
          annotations: {readOnlyHint: true}
          defaultArguments: {b: 1}
tools: []
"#;

fn npx_available() {
    let ok = std::process::Command::new("npx")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "this test needs node and npx (the upstreams come from npm; scripts/test warms them)"
    );
}

#[tokio::test]
async fn three_npm_upstreams_are_listed_and_called_through_one_endpoint() {
    npx_available();
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical tempdir");
    std::fs::write(root.join("hello.txt"), "hello from disk").expect("write");
    let path = write_config(
        dir.path(),
        &CONFIG.replace("{root}", &root.display().to_string()),
    );
    let client = connect(&["serve", path.to_str().expect("utf-8")], None).await;

    // An npx upstream may take longer than `serve`'s start patience: its tools join the list
    // (with `tools/list_changed`) once it answers, so list until all three are in.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
    let tools = loop {
        let tools = client.list_all_tools().await.expect("tools/list");
        let upstreams = ["ev__", "fs__", "mem."]
            .iter()
            .filter(|p| tools.iter().any(|t| t.name.starts_with(*p)))
            .count();
        if upstreams == 3 || std::time::Instant::now() > deadline {
            break tools;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    };
    let mut names: Vec<&str> = tools.iter().map(|t| &*t.name).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "ev__echo",
            "ev__get-structured-content",
            "ev__get-sum",
            "ev__get-tiny-image",
            "fs__read_text_file",
            "fs__write_file",
            "ls_root",
            "mem.add_observations",
            "mem.create_entities",
            "mem.create_relations",
            "mem.open_nodes",
            "mem.read_graph",
            "mem.search_nodes",
        ]
    );
    let ls = tools.iter().find(|t| t.name == "ls_root").expect("ls_root");
    assert_eq!(ls.description.as_deref(), Some("Lists the sandbox root"));
    assert!(
        ls.input_schema
            .get("properties")
            .and_then(|p| p.get("path"))
            .is_none(),
        "the fixed path is hidden: {:?}",
        ls.input_schema
    );
    let sum = tools
        .iter()
        .find(|t| t.name == "ev__get-sum")
        .expect("get-sum");
    assert_eq!(sum.title.as_deref(), Some("Add two numbers"));
    assert_eq!(
        sum.annotations.as_ref().and_then(|a| a.read_only_hint),
        Some(true)
    );

    // filesystem: a fixed argument, then a write and a read through the prefix.
    let r = call(&client, "ls_root", json!({})).await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    assert!(text(&r).contains("hello.txt"), "{}", text(&r));
    let file = root.join("note.txt").display().to_string();
    let r = call(
        &client,
        "fs__write_file",
        json!({"path": file, "content": "via gateway"}),
    )
    .await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    let r = call(&client, "fs__read_text_file", json!({"path": file})).await;
    assert_eq!(text(&r), "via gateway");
    // Outside the root the upstream's own refusal comes back as its tool error.
    let r = call(
        &client,
        "fs__read_text_file",
        json!({"path": "/etc/passwd"}),
    )
    .await;
    assert_eq!(r.is_error, Some(true), "{r:?}");

    // memory: state kept across calls of one upstream behind the gateway.
    let r = call(
        &client,
        "mem.create_entities",
        json!({"entities": [{"name": "mcpflow", "entityType": "project", "observations": ["a gateway"]}]}),
    )
    .await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    let r = call(&client, "mem.search_nodes", json!({"query": "gateway"})).await;
    assert!(text(&r).contains("mcpflow"), "{}", text(&r));

    // everything: text, a default argument, an image, structured content.
    let r = call(&client, "ev__echo", json!({"message": "hi"})).await;
    assert!(text(&r).contains("hi"), "{}", text(&r));
    let r = call(&client, "ev__get-sum", json!({"a": 41})).await;
    assert!(text(&r).contains("42"), "{}", text(&r));
    let r = call(&client, "ev__get-tiny-image", json!({})).await;
    let kinds: Vec<String> = r
        .content
        .iter()
        .filter_map(|c| serde_json::to_value(c).ok())
        .filter_map(|v| v["type"].as_str().map(str::to_owned))
        .collect();
    assert!(kinds.iter().any(|k| k == "image"), "{kinds:?}");
    let r = call(
        &client,
        "ev__get-structured-content",
        json!({"location": "New York"}),
    )
    .await;
    assert!(r.structured_content.is_some(), "{r:?}");

    // Resources pass through under their own URIs, templates' URIs included; prompts get the
    // upstream's prefix.
    let resources = client.list_all_resources().await.expect("resources/list");
    let doc = "demo://resource/static/document/features.md";
    assert!(resources.iter().any(|r| r.uri == doc), "{resources:?}");
    let read = client
        .read_resource(rmcp::model::ReadResourceRequestParams::new(doc))
        .await
        .expect("resources/read");
    assert!(!read.contents.is_empty());
    let read = client
        .read_resource(rmcp::model::ReadResourceRequestParams::new(
            "demo://resource/dynamic/text/7",
        ))
        .await
        .expect("resources/read of a template's URI");
    assert!(format!("{read:?}").contains('7'), "{read:?}");
    let prompts = client.list_all_prompts().await.expect("prompts/list");
    assert!(
        prompts.iter().any(|p| p.name == "ev__simple-prompt"),
        "{prompts:?}"
    );
    let mut args = serde_json::Map::new();
    args.insert("city".into(), json!("Lisbon"));
    let prompt = client
        .get_prompt(
            rmcp::model::GetPromptRequestParams::new("ev__args-prompt").with_arguments(args),
        )
        .await
        .expect("prompts/get");
    assert!(format!("{prompt:?}").contains("Lisbon"), "{prompt:?}");

    client.cancel().await.expect("closes");
}
