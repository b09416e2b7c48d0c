//! A call of a tool no one here has: the error names every tool a call can reach, the proxied
//! ones included, and stays short on a server with many tools.

mod support;

use rmcp::model::CallToolRequestParams;

const PROXIED: &str = r#"
version: "1.0"
server: {name: gw, version: "1.0.0"}
mcpServers:
  fx:
    command: "{fixture}"
tools:
  - name: graph_echo
    description: "a graph tool beside the proxied ones"
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: exit}
      - {id: exit, type: exit}
proxy:
  upstreams:
    fx:
      include: ["echo", "echo_text"]
"#;

async fn unknown(client: &support::Client, name: &str) -> String {
    client
        .call_tool(CallToolRequestParams::new(name.to_owned()))
        .await
        .expect_err("an unknown tool is a protocol error")
        .to_string()
}

#[tokio::test]
async fn the_error_lists_the_proxied_tools_too() {
    let (_dir, client) = support::serve_yaml(PROXIED).await;
    let err = unknown(&client, "nope").await;
    for name in ["graph_echo", "fx__echo", "fx__echo_text"] {
        assert!(err.contains(name), "`{name}` is missing from: {err}");
    }
    assert!(!err.contains("more"), "{err}");
    // The server keeps serving.
    let r = support::call(&client, "fx__echo", serde_json::json!({"text": "hi"})).await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
}

#[tokio::test]
async fn a_long_list_is_cut_with_a_count_of_the_rest() {
    let mut extra = String::new();
    for i in 0..70 {
        extra.push_str(&format!(
            "  - name: t{i:02}\n    description: \"filler\"\n    inputSchema: {{type: object}}\n    nodes:\n      - {{id: entry, type: entry, next: exit}}\n      - {{id: exit, type: exit}}\n"
        ));
    }
    let yaml = PROXIED.replace("proxy:\n", &format!("{extra}proxy:\n"));
    let (_dir, client) = support::serve_yaml(&yaml).await;
    let err = unknown(&client, "nope").await;
    // 71 graph tools and 2 proxied: 50 named, 23 counted.
    assert!(err.contains("and 23 more"), "{err}");
    assert!(err.contains("t00") && !err.contains("t69"), "{err}");
    assert!(err.len() < 1200, "{} bytes: {err}", err.len());
}
