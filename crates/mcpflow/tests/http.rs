//! `mcpflow serve --http`: Streamable HTTP over a real socket, spoken to with curl.
mod common;
mod http_common;

use std::process::Command;

use http_common::{curl, header, message, start};
use serde_json::{Value, json};

fn post(url: &str, session: Option<&str>, body: &Value) -> (String, String) {
    let mut args = vec![
        "-X".to_owned(),
        "POST".to_owned(),
        url.to_owned(),
        "-H".to_owned(),
        "Content-Type: application/json".to_owned(),
        "-H".to_owned(),
        "Accept: application/json, text/event-stream".to_owned(),
        "-H".to_owned(),
        "MCP-Protocol-Version: 2025-11-25".to_owned(),
        "--data".to_owned(),
        body.to_string(),
    ];
    if let Some(id) = session {
        args.push("-H".to_owned());
        args.push(format!("Mcp-Session-Id: {id}"));
    }
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    curl(&refs)
}

#[test]
fn a_graph_tool_answers_over_streamable_http() {
    let server = start(&common::example("loop_example.yaml"), &[]);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "curl-test", "version": "0"}}});
    let (head, body) = post(&server.url, None, &init);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}\n{body}");
    let reply = message(&body);
    assert_eq!(reply["result"]["serverInfo"]["name"], "loopExample");
    let session = header(&head, "mcp-session-id")
        .expect("a session id")
        .to_owned();

    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (head, _) = post(&server.url, Some(&session), &initialized);
    assert!(head.starts_with("HTTP/1.1 202"), "{head}");

    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "sum_to_n", "arguments": {"n": 4}}});
    let (head, body) = post(&server.url, Some(&session), &call);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}\n{body}");
    assert_eq!(
        message(&body)["result"]["structuredContent"],
        json!({"sum": 10})
    );
}

#[test]
fn health_readiness_and_dns_rebinding() {
    let server = start(&common::example("test_minimal.yaml"), &[]);
    let base = server.url.trim_end_matches("/mcp").to_owned();
    let (head, body) = curl(&[&format!("{base}/healthz")]);
    assert!(
        head.starts_with("HTTP/1.1 200") && body.starts_with("ok"),
        "{head}{body}"
    );
    let (head, _) = curl(&[&format!("{base}/readyz")]);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    // A foreign Host (a DNS-rebinding page) is refused.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "curl-test", "version": "0"}}});
    let (head, _) = curl(&[
        "-X",
        "POST",
        &server.url,
        "-H",
        "Host: evil.example",
        "-H",
        "Content-Type: application/json",
        "-H",
        "Accept: application/json, text/event-stream",
        "--data",
        &init.to_string(),
    ]);
    assert!(head.starts_with("HTTP/1.1 403"), "{head}");
}

#[test]
fn sigterm_stops_the_server_cleanly() {
    let mut server = start(&common::example("test_minimal.yaml"), &[]);
    let pid = server.child.id().to_string();
    let status = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill runs");
    assert!(status.success());
    let code = server.child.wait().expect("exits");
    assert!(code.success(), "exit status after SIGTERM: {code}");
}
