//! A `tools/call` is answered alike whichever way the listener serves it: by its own path
//! (`server/src/http/calls/`, taken when every check rmcp makes passes as written) or by
//! rmcp's service (here forced by an `Accept` header with a quality value, which the
//! listener's path leaves to rmcp to weigh), statelessly (2026-07-28) and in a session
//! (2025-11-25).

mod http_common;

use http_common::{Server, start};
use serde_json::{Value, json};

const PLAIN: &str = "application/json, text/event-stream";
const WEIGHED: &str = "application/json;q=1, text/event-stream";

/// POSTs `body` as JSON with `headers`: (status, content type, body text).
async fn post(
    http: &reqwest::Client,
    server: &Server,
    headers: &[(&str, &str)],
    body: &Value,
) -> (u16, String, String) {
    let mut request = http
        .post(&server.url)
        .header("content-type", "application/json");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request
        .body(body.to_string())
        .send()
        .await
        .expect("the request is sent");
    let status = response.status().as_u16();
    let kind = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    (status, kind, response.text().await.expect("the body"))
}

/// (status, content type, the last JSON-RPC message) of one stateless call.
async fn call(
    http: &reqwest::Client,
    server: &Server,
    id: u64,
    (name, arguments): (&str, Value),
    accept: &str,
) -> (u16, String, Value) {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
    "name": name, "arguments": arguments, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "mcpflow-test", "version": "0.0.0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }}});
    let headers = [
        ("accept", accept),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", name),
    ];
    let (status, kind, text) = post(http, server, &headers, &body).await;
    (status, kind, http_common::message(&text))
}

/// What two runs of one call share: everything but the ids a run is given.
fn comparable(mut message: Value) -> Value {
    if let Some(result) = message.get_mut("result").and_then(Value::as_object_mut) {
        result.remove("_meta");
    }
    message
}

#[tokio::test]
async fn stateless_calls_are_answered_alike_on_both_paths() {
    let server = start(&http_common::repo_root().join("examples/sum.yaml"), &[]);
    let http = reqwest::Client::new();
    let (plain, weighed) = (PLAIN, WEIGHED);
    let calls = [
        ("sum_to_n", json!({"n": 10})),
        ("sum_to_n", json!({"n": 0})),
        ("sum_to_n", json!({"n": "ten"})),
        ("no_such_tool", json!({})),
    ];
    for (id, (name, arguments)) in (1u64..).zip(calls) {
        let ours = call(&http, &server, id, (name, arguments.clone()), plain).await;
        let rmcps = call(&http, &server, id, (name, arguments.clone()), weighed).await;
        assert_eq!(ours.0, rmcps.0, "status of {name} {arguments}");
        assert_eq!(ours.1, rmcps.1, "content type of {name} {arguments}");
        assert_eq!(
            comparable(ours.2),
            comparable(rmcps.2),
            "answer of {name} {arguments}"
        );
    }
    let (status, _, answer) = call(&http, &server, 9, ("sum_to_n", json!({"n": 10})), plain).await;
    assert_eq!(status, 200);
    assert_eq!(answer["result"]["structuredContent"]["sum"], 55, "{answer}");
}

/// A 2025-11-25 session's id, opened with `initialize` and `notifications/initialized`.
async fn open_session(http: &reqwest::Client, server: &Server) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "mcpflow-test", "version": "0.0.0"}}});
    let response = http
        .post(&server.url)
        .header("content-type", "application/json")
        .header("accept", PLAIN)
        .body(init.to_string())
        .send()
        .await
        .expect("initialize sent");
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .expect("a session id")
        .to_owned();
    response.text().await.expect("the initialize answer");
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let headers = [
        ("accept", PLAIN),
        ("mcp-protocol-version", "2025-11-25"),
        ("mcp-session-id", session.as_str()),
    ];
    let (status, _, _) = post(http, server, &headers, &note).await;
    assert!((200..300).contains(&status), "{status}");
    session
}

/// (status, content type, the SSE fields of each event, the last message) of a call in a session.
async fn session_call(
    http: &reqwest::Client,
    server: &Server,
    session: &str,
    id: u64,
    (name, arguments): (&str, Value),
    accept: &str,
) -> (u16, String, Vec<String>, Value) {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": name, "arguments": arguments}});
    let headers = [
        ("accept", accept),
        ("mcp-protocol-version", "2025-11-25"),
        ("mcp-session-id", session),
    ];
    let (status, kind, text) = post(http, server, &headers, &body).await;
    // Each event's field names in order ("data id retry"): the framing, not the values.
    let fields = text
        .split("\n\n")
        .filter(|e| !e.trim().is_empty())
        .map(|e| {
            e.lines()
                .filter_map(|l| l.split_once(':').map(|(k, _)| k))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    (status, kind, fields, http_common::message(&text))
}

#[tokio::test]
async fn calls_in_a_session_are_answered_alike_on_both_paths() {
    let server = start(&http_common::repo_root().join("examples/sum.yaml"), &[]);
    let http = reqwest::Client::new();
    let session = open_session(&http, &server).await;
    let calls = [
        ("sum_to_n", json!({"n": 10})),
        ("sum_to_n", json!({"n": 0})),
        ("no_such_tool", json!({})),
    ];
    for (id, (name, arguments)) in (1u64..).zip(calls) {
        let ours = session_call(
            &http,
            &server,
            &session,
            id,
            (name, arguments.clone()),
            PLAIN,
        )
        .await;
        let rmcps = session_call(
            &http,
            &server,
            &session,
            id + 100,
            (name, arguments.clone()),
            WEIGHED,
        )
        .await;
        assert_eq!(ours.0, rmcps.0, "status of {name} {arguments}");
        assert_eq!(ours.1, rmcps.1, "content type of {name} {arguments}");
        assert_eq!(ours.2, rmcps.2, "events of {name} {arguments}");
        assert_eq!(
            ours.2.first().map(String::as_str),
            Some("data id retry"),
            "a priming event first: {:?}",
            ours.2
        );
        let (mut ours, rmcps) = (comparable(ours.3), comparable(rmcps.3));
        ours["id"] = json!(id + 100);
        assert_eq!(ours, rmcps, "answer of {name} {arguments}");
    }
    let (_, kind, _, answer) = session_call(
        &http,
        &server,
        &session,
        9,
        ("sum_to_n", json!({"n": 10})),
        PLAIN,
    )
    .await;
    assert_eq!(kind, "text/event-stream");
    assert_eq!(answer["result"]["structuredContent"]["sum"], 55, "{answer}");
}
