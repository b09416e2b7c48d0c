//! What comes back from each of the fixture's tools, and what the pool tells about servers.

mod common;

use common::{args, count, fixture, pool, structured};
use mcpflow_upstream::UpstreamError;
use serde_json::{Value, json};

const S: &str = "fixture";

fn text_block(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

#[tokio::test]
async fn echo_returns_the_arguments_as_structured_content_and_as_json_text() {
    let pool = pool(vec![(S, fixture(&[], json!({})))]);
    let input = json!({"a": 1, "nested": {"list": [true, null, "x"]}, "s": "é"});
    let result = pool
        .call_tool(S, "echo", args(input.clone()))
        .await
        .unwrap();
    assert!(!result.is_error);
    assert_eq!(result.structured_content, Some(input.clone()));
    assert_eq!(result.content.len(), 1);
    assert_eq!(result.content[0]["type"], "text");
    let text = result.content[0]["text"].as_str().unwrap();
    assert_eq!(serde_json::from_str::<Value>(text).unwrap(), input);
}

#[tokio::test]
async fn text_tools_return_plain_text_json_text_and_empty_text() {
    let pool = pool(vec![(S, fixture(&[], json!({})))]);

    let plain = pool
        .call_tool(S, "echo_text", args(json!({"text": "hello world"})))
        .await
        .unwrap();
    assert_eq!(plain.content, vec![text_block("hello world")]);
    assert_eq!(plain.structured_content, None);
    assert!(!plain.is_error);

    let value = json!({"n": 15, "items": ["a", "b"]});
    let json_text = pool
        .call_tool(S, "json_text", args(json!({"value": value})))
        .await
        .unwrap();
    assert_eq!(json_text.structured_content, None);
    let text = json_text.content[0]["text"].as_str().unwrap();
    assert_eq!(serde_json::from_str::<Value>(text).unwrap(), value);

    let empty_text = pool
        .call_tool(S, "empty_text", args(json!({})))
        .await
        .unwrap();
    assert_eq!(empty_text.content, vec![text_block("")]);
}

#[tokio::test]
async fn fail_is_a_tool_error_not_an_upstream_error() {
    let pool = pool(vec![(S, fixture(&[], json!({})))]);
    let result = pool
        .call_tool(S, "fail", args(json!({"message": "disk full"})))
        .await
        .unwrap();
    assert!(result.is_error);
    assert_eq!(result.content, vec![text_block("disk full")]);
}

#[tokio::test]
async fn image_and_empty_content() {
    let pool = pool(vec![(S, fixture(&[], json!({})))]);
    let image = pool.call_tool(S, "image", args(json!({}))).await.unwrap();
    assert_eq!(image.content.len(), 1);
    assert_eq!(image.content[0]["type"], "image");
    assert_eq!(image.content[0]["mimeType"], "image/png");
    assert!(
        image.content[0]["data"]
            .as_str()
            .unwrap()
            .starts_with("iVBORw0KGgo")
    );

    let empty = pool.call_tool(S, "empty", args(json!({}))).await.unwrap();
    assert!(empty.content.is_empty());
    assert_eq!(empty.structured_content, None);
    assert!(!empty.is_error);
}

#[tokio::test]
async fn add_returns_a_structured_sum() {
    let pool = pool(vec![(S, fixture(&[], json!({})))]);
    assert_eq!(
        structured(&pool, S, "add", json!({"a": 2, "b": 3})).await,
        json!({"sum": 5})
    );
    assert_eq!(
        structured(&pool, S, "add", json!({"a": 1.5, "b": 2})).await,
        json!({"sum": 3.5})
    );
    let bad = pool
        .call_tool(S, "add", args(json!({"a": "two", "b": 3})))
        .await
        .unwrap();
    assert!(
        bad.is_error,
        "bad arguments are reported by the tool: {bad:?}"
    );
}

#[tokio::test]
async fn list_tools_gives_names_titles_and_schemas() {
    let pool = pool(vec![(S, fixture(&[], json!({})))]);
    let tools = pool.list_tools(S).await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    for expected in [
        "echo",
        "echo_text",
        "json_text",
        "fail",
        "image",
        "empty",
        "empty_text",
        "sleep",
        "stderr",
        "crash",
        "garbage",
        "count",
        "add",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    let add = tools.iter().find(|t| t.name == "add").unwrap();
    assert_eq!(add.title.as_deref(), Some("Add two numbers"));
    assert_eq!(add.input_schema["required"], json!(["a", "b"]));
    assert_eq!(
        add.output_schema.as_ref().unwrap()["properties"]["sum"]["type"],
        "number"
    );
    let echo_text = tools.iter().find(|t| t.name == "echo_text").unwrap();
    assert!(
        echo_text
            .description
            .as_deref()
            .unwrap()
            .contains("plain text")
    );
    assert_eq!(echo_text.output_schema, None);
}

#[tokio::test]
async fn the_tool_list_is_cached_until_the_server_says_it_changed() {
    let pool = pool(vec![(S, fixture(&[], json!({})))]);
    let lists = async |pool| {
        structured(pool, S, "count", json!({})).await["lists"]
            .as_u64()
            .unwrap()
    };

    pool.list_tools(S).await.unwrap();
    pool.list_tools(S).await.unwrap();
    assert_eq!(
        lists(&pool).await,
        1,
        "the second listing came from the cache"
    );

    structured(&pool, S, "tools_changed", json!({})).await;
    common::eventually("the tool list is fetched again", async || {
        pool.list_tools(S).await.unwrap();
        lists(&pool).await == 2
    })
    .await;
}

#[tokio::test]
async fn unknown_tool_is_rejected_with_the_servers_message() {
    let pool = pool(vec![(S, fixture(&[], json!({})))]);
    let error = pool
        .call_tool(S, "no_such_tool", args(json!({})))
        .await
        .unwrap_err();
    match &error {
        UpstreamError::Rejected {
            server,
            code,
            message,
            ..
        } => {
            assert_eq!(server, S);
            assert_eq!(*code, -32602);
            assert!(message.contains("no_such_tool"), "{message}");
        }
        other => panic!("expected Rejected, got {other:?}"),
    }
    // A refusal does not hurt the connection.
    assert_eq!(count(&pool, S).await, 2);
}

#[tokio::test]
async fn unknown_server_names_the_declared_ones() {
    let pool = pool(vec![(S, fixture(&[], json!({})))]);
    let error = pool
        .call_tool("nope", "echo", args(json!({})))
        .await
        .unwrap_err();
    assert!(
        matches!(error, UpstreamError::UnknownServer { .. }),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(
        message.contains("`nope`") && message.contains("fixture"),
        "{message}"
    );
}

#[tokio::test]
async fn negotiates_2025_11_25_and_accepts_an_older_server() {
    let pool = pool(vec![
        (S, fixture(&[], json!({}))),
        (
            "old",
            fixture(&["--max-protocol-version", "2024-11-05"], json!({})),
        ),
    ]);
    let info = pool.server_info(S).await.unwrap();
    assert_eq!(info.protocol_version, "2025-11-25");
    assert_eq!(info.name.as_deref(), Some("mcpflow-fixture"));

    let old = pool.server_info("old").await.unwrap();
    assert_eq!(old.protocol_version, "2024-11-05");
    assert_eq!(
        structured(&pool, "old", "add", json!({"a": 1, "b": 1})).await,
        json!({"sum": 2})
    );
}

#[tokio::test]
async fn env_and_cwd_reach_the_child() {
    let base = tempfile::tempdir().unwrap();
    std::fs::create_dir(base.path().join("work")).unwrap();
    let server = fixture(
        &[],
        json!({"cwd": "work", "env": {"MCPFLOW_FIXTURE_GREETING": "hello from the config"}}),
    );
    let pool = common::pool_in(
        vec![(S, server)],
        base.path().to_path_buf(),
        common::CONNECT_TIMEOUT,
    );

    let env = structured(&pool, S, "env", json!({"name": "MCPFLOW_FIXTURE_GREETING"})).await;
    assert_eq!(env["value"], "hello from the config");
    // The rest of the environment is inherited.
    let path = structured(&pool, S, "env", json!({"name": "PATH"})).await;
    assert_eq!(
        path["value"].as_str(),
        std::env::var("PATH").ok().as_deref()
    );

    let cwd = structured(&pool, S, "cwd", json!({})).await;
    let cwd = std::path::PathBuf::from(cwd["cwd"].as_str().unwrap());
    assert_eq!(
        cwd.canonicalize().unwrap(),
        base.path().join("work").canonicalize().unwrap()
    );
}

#[tokio::test]
async fn stderr_is_captured_and_available() {
    let pool = pool(vec![(S, fixture(&[], json!({})))]);
    structured(&pool, S, "stderr", json!({"text": "a line for the log"})).await;
    common::eventually("the stderr line is captured", async || {
        pool.stderr_tail(S)
            .is_some_and(|tail| tail.contains("a line for the log"))
    })
    .await;
}

#[tokio::test]
async fn garbage_on_stdout_neither_hangs_nor_breaks_the_connection() {
    let pool = pool(vec![(S, fixture(&[], json!({})))]);
    let pid = common::fixture_pid(&pool, S).await;
    // rmcp skips lines that are not JSON-RPC; the answer behind them still arrives.
    assert_eq!(
        structured(&pool, S, "garbage", json!({})).await,
        json!({"ok": true})
    );
    assert_eq!(
        structured(&pool, S, "add", json!({"a": 1, "b": 2})).await,
        json!({"sum": 3})
    );
    assert_eq!(
        common::fixture_pid(&pool, S).await,
        pid,
        "same process throughout"
    );
}
