//! mcpflow as an MCP server over a real stdio pipe, driven by an rmcp client.
mod common;

use common::{call, connect, example, text};
use serde_json::json;

#[tokio::test]
async fn initialize_carries_title_and_instructions() {
    let path = example("loop_example.yaml");
    let client = connect(&["serve", path.to_str().expect("utf-8")], None).await;
    let info = client.peer_info().expect("server info");
    assert_eq!(
        info.server_info.as_ref().expect("serverInfo").name,
        "loopExample"
    );
    assert_eq!(
        info.server_info
            .as_ref()
            .expect("serverInfo")
            .title
            .as_deref(),
        Some("Loop Example")
    );
    assert!(
        info.instructions
            .as_deref()
            .unwrap_or_default()
            .contains("loops")
    );
    client.cancel().await.expect("closes");
}

#[tokio::test]
async fn title_defaults_to_the_name() {
    let path = example("test_minimal.yaml");
    let client = connect(&["-g", path.to_str().expect("utf-8")], None).await;
    let info = client.peer_info().expect("server info");
    assert_eq!(
        info.server_info
            .as_ref()
            .expect("serverInfo")
            .title
            .as_deref(),
        Some("testMinimal")
    );
    assert_eq!(info.instructions, None);
    client.cancel().await.expect("closes");
}

#[tokio::test]
async fn tools_keep_their_full_schemas() {
    let path = example("file_utils.yaml");
    let client = connect(&["serve", path.to_str().expect("utf-8")], None).await;
    let tools = client.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| &*t.name).collect();
    assert_eq!(names, ["count_files", "sum_file_sizes"]);
    let count = &tools[0];
    assert_eq!(count.input_schema["required"], json!(["directory"]));
    assert_eq!(
        count.input_schema["properties"]["directory"]["description"],
        "The directory path to count files in"
    );
    let out = count.output_schema.as_ref().expect("outputSchema kept");
    assert_eq!(out["properties"]["count"]["type"], "number");
    client.cancel().await.expect("closes");
}

#[tokio::test]
async fn examples_give_their_results_over_mcp() {
    let path = example("loop_example.yaml");
    let client = connect(&["serve", path.to_str().expect("utf-8")], None).await;
    for (n, sum) in [(3, 6), (1, 1), (0, 1), (4, 10), (5, 15)] {
        let r = call(&client, "sum_to_n", json!({"n": n})).await;
        assert_eq!(r.is_error, Some(false));
        assert_eq!(r.structured_content, Some(json!({"sum": sum})));
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&text(&r)).ok(),
            Some(json!({"sum": sum}))
        );
    }
    client.cancel().await.expect("closes");

    let path = example("switch_example.yaml");
    let client = connect(&["serve", path.to_str().expect("utf-8")], None).await;
    for (v, want) in [
        (json!(15), "high"),
        (json!(5), "low"),
        (json!(10), "low"),
        (json!(0), "zero_or_negative"),
        (json!(-5), "zero_or_negative"),
    ] {
        let r = call(&client, "test_switch", json!({"value": v})).await;
        assert_eq!(r.structured_content, Some(json!({"result": want})), "{v}");
    }
    client.cancel().await.expect("closes");
}

#[tokio::test]
async fn wrong_arguments_are_reported_and_the_server_keeps_serving() {
    let path = example("switch_example.yaml");
    let client = connect(&["serve", path.to_str().expect("utf-8")], None).await;
    // "15" is a string: the schema says number.
    let r = call(&client, "test_switch", json!({"value": "15"})).await;
    assert_eq!(r.is_error, Some(true));
    assert!(text(&r).contains("at /value"), "{}", text(&r));
    let r = call(&client, "test_switch", json!({})).await;
    assert_eq!(r.is_error, Some(true));
    assert!(
        text(&r).contains("value"),
        "names the missing property: {}",
        text(&r)
    );
    let r = call(&client, "test_switch", json!({"value": 11})).await;
    assert_eq!(r.structured_content, Some(json!({"result": "high"})));
    // An unknown tool is a protocol error, and the connection stays up.
    let params = rmcp::model::CallToolRequestParams::new("nope");
    let err = client.call_tool(params).await.expect_err("unknown tool");
    assert!(err.to_string().contains("test_switch"), "{err}");
    let r = call(&client, "test_switch", json!({"value": 1})).await;
    assert_eq!(r.structured_content, Some(json!({"result": "low"})));
    client.cancel().await.expect("closes");
}

#[tokio::test]
async fn concurrent_calls_on_one_connection() {
    let path = example("loop_example.yaml");
    let client =
        std::sync::Arc::new(connect(&["serve", path.to_str().expect("utf-8")], None).await);
    let mut tasks = Vec::new();
    for n in 1..=20u64 {
        let client = client.clone();
        tasks.push(tokio::spawn(async move {
            (n, call(&client, "sum_to_n", json!({"n": n})).await)
        }));
    }
    for t in tasks {
        let (n, r) = t.await.expect("joins");
        assert_eq!(r.structured_content, Some(json!({"sum": n * (n + 1) / 2})));
    }
}
