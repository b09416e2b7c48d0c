//! The stateless path in front of a stand-in for rmcp's service: which requests it answers,
//! which it passes on, and what its answers carry.

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use mcpflow_engine::Engine;
use mcpflow_upstream::UpstreamPool;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use super::reply::{self, Reply};
use super::stateless::{names_param_headers, status_of};
use super::*;
use crate::server::GraphServer;
use rmcp::model::ServerJsonRpcMessage;

/// Answers what the stateless path passes on: rmcp's service in the listener.
const PASSED: StatusCode = StatusCode::IM_A_TEAPOT;

const CONFIG: &str = r#"
version: "1.0"
server: { name: "stateless", version: "1.0.0" }
tools:
  - name: "add"
    description: "a + b, in two steps"
    inputSchema:
      type: "object"
      properties: { a: { type: "number" }, b: { type: "number" } }
      required: ["a", "b"]
    nodes:
      - { id: "entry", type: "entry", next: "sum" }
      - id: "sum"
        type: "transform"
        transform: { expr: '{ "sum": entry.a + entry.b }' }
        next: "twice"
      - id: "twice"
        type: "transform"
        transform: { expr: '{ "sum": sum.sum, "twice": sum.sum * 2 }' }
        next: "exit"
      - { id: "exit", type: "exit" }
  - name: "routed"
    description: "names its argument as a header (SEP-2243)"
    inputSchema:
      type: "object"
      properties: { region: { type: "string", "x-mcp-header": "Region" } }
    nodes:
      - { id: "entry", type: "entry", next: "exit" }
      - { id: "exit", type: "exit" }
"#;

fn router() -> Router {
    let draft = mcpflow_config::Loader::new()
        .read_str(CONFIG, "stateless.yaml")
        .unwrap_or_else(|e| panic!("the config reads: {e}"));
    let (loaded, engine) = draft
        .compile(
            |config, base_dir| {
                let pool = UpstreamPool::new(config.mcp_servers.clone(), base_dir.into());
                Engine::new(config, pool)
            },
            mcpflow_engine::check,
        )
        .unwrap_or_else(|e| panic!("the config compiles: {e}"));
    let server = GraphServer::new(&loaded.config, engine).expect("the server starts");
    let sessions = Sessions::new(8, Duration::from_secs(60), None);
    let calls = Calls::new(server.into(), sessions, 1 << 20, CancellationToken::new());
    Router::new()
        .fallback(|| async { (PASSED, "passed on") })
        .layer(axum::middleware::from_fn_with_state(calls, serve))
}

fn body(id: u64, name: &str, meta: Value) -> Value {
    let mut context = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "tests", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    if let (Some(c), Some(m)) = (context.as_object_mut(), meta.as_object()) {
        c.extend(m.clone());
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": name, "arguments": {"a": 2, "b": 3}, "_meta": context}})
}

/// A call as a 2026-07-28 client sends it; `change` edits the headers before it is sent.
fn call(body: &Value, change: impl FnOnce(&mut axum::http::HeaderMap)) -> Request<Body> {
    let name = body["params"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let mut request = Request::post("/mcp")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", name)
        .body(Body::from(body.to_string()))
        .expect("a request");
    change(request.headers_mut());
    request
}

async fn send(router: &Router, request: Request<Body>) -> (StatusCode, String, String) {
    let response = router.clone().oneshot(request).await.expect("answered");
    let status = response.status();
    let kind = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .expect("the body");
    (status, kind, String::from_utf8_lossy(&bytes).into_owned())
}

#[tokio::test]
async fn answers_a_call_whose_checks_all_pass_with_json() {
    let router = router();
    let (status, kind, text) = send(&router, call(&body(7, "add", json!({})), |_| {})).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert_eq!(kind, "application/json");
    let answer: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(answer["id"], 7, "{answer}");
    assert_eq!(
        answer["result"]["structuredContent"],
        json!({"sum": 5, "twice": 10}),
        "{answer}"
    );
}

#[tokio::test]
async fn an_unknown_tool_is_the_handlers_error_with_rmcps_status() {
    let router = router();
    let (status, _, text) = send(&router, call(&body(1, "nope", json!({})), |_| {})).await;
    let answer: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(answer["id"], 1, "{answer}");
    assert!(answer["error"]["code"].is_i64(), "{answer}");
    assert_eq!(
        status,
        status_of(&serde_json::from_value(answer.clone()).expect("a server message")),
        "{answer}"
    );
}

#[tokio::test]
async fn streams_progress_then_the_answer_when_the_client_asks_for_progress() {
    let router = router();
    let request = call(&body(3, "add", json!({"progressToken": "p-1"})), |_| {});
    let (status, kind, text) = send(&router, request).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert_eq!(kind, "text/event-stream", "{text}");
    let messages: Vec<Value> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).expect("each event is JSON"))
        .collect();
    let (answer, progress) = messages.split_last().expect("events");
    assert_eq!(answer["id"], 3, "{text}");
    assert_eq!(answer["result"]["structuredContent"]["twice"], 10, "{text}");
    assert!(!progress.is_empty(), "progress before the answer: {text}");
    for p in progress {
        assert_eq!(p["method"], "notifications/progress", "{text}");
        assert_eq!(p["params"]["progressToken"], "p-1", "{text}");
    }
}

#[tokio::test]
async fn passes_on_every_request_it_would_have_to_judge() {
    let router = router();
    type Change = fn(&mut axum::http::HeaderMap);
    let header_cases: [(&str, Change); 10] = [
        ("a session this table does not hold", |h| {
            h.insert("mcp-session-id", "abc".parse().expect("value"));
            h.insert("mcp-protocol-version", "2025-11-25".parse().expect("value"));
        }),
        ("another protocol", |h| {
            h.insert("mcp-protocol-version", "2025-11-25".parse().expect("value"));
        }),
        ("no protocol header", |h| {
            h.remove("mcp-protocol-version");
        }),
        ("no Mcp-Method", |h| {
            h.remove("mcp-method");
        }),
        ("another Mcp-Method", |h| {
            h.insert("mcp-method", "tools/list".parse().expect("value"));
        }),
        ("a Base64 Mcp-Name", |h| {
            h.insert("mcp-name", "=?base64?YWRk?=".parse().expect("value"));
        }),
        ("another Mcp-Name", |h| {
            h.insert("mcp-name", "sub".parse().expect("value"));
        }),
        ("a weighed Accept", |h| {
            h.insert(
                "accept",
                "application/json;q=1, text/event-stream"
                    .parse()
                    .expect("value"),
            );
        }),
        ("no SSE in Accept", |h| {
            h.insert("accept", "application/json".parse().expect("value"));
        }),
        ("an Mcp-Param header", |h| {
            h.insert("mcp-param-region", "eu".parse().expect("value"));
        }),
    ];
    for (case, change) in header_cases {
        let (status, _, text) = send(&router, call(&body(1, "add", json!({})), change)).await;
        assert_eq!(status, PASSED, "{case}: {text}");
    }
    let mut no_capabilities = body(1, "add", json!({}));
    if let Some(meta) = no_capabilities["params"]["_meta"].as_object_mut() {
        meta.remove("io.modelcontextprotocol/clientCapabilities");
    }
    let mut listing = body(1, "add", json!({}));
    listing["method"] = json!("tools/list");
    let body_cases = [
        ("a tool that names a header", body(1, "routed", json!({}))),
        ("no client capabilities in _meta", no_capabilities),
        ("another method", listing),
    ];
    for (case, body) in body_cases {
        let (status, _, text) = send(&router, call(&body, |_| {})).await;
        assert_eq!(status, PASSED, "{case}: {text}");
    }
}

#[test]
fn a_reply_keeps_the_answer_last_and_bounds_what_waits() {
    let reply = Reply::default();
    let note = |n: u32| {
        rmcp::model::ProgressNotification::new(rmcp::model::ProgressNotificationParam::new(
            rmcp::model::ProgressToken(rmcp::model::NumberOrString::Number(1)),
            f64::from(n),
        ))
        .into()
    };
    use mcpflow_gateway::notify::Replies;
    for n in 0..(reply::MAX_QUEUED as u32 + 10) {
        assert!(reply.notify(note(n)), "queued");
    }
    reply.finish(Some(ServerJsonRpcMessage::error(
        rmcp::model::ErrorData::internal_error("done", None),
        Some(rmcp::model::RequestId::Number(1)),
    )));
    assert!(!reply.notify(note(0)), "nothing after the answer");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let read = runtime.block_on(async {
        let mut read = Vec::new();
        while let Some(m) = reply.next().await {
            read.push(m);
        }
        read
    });
    assert_eq!(
        read.len(),
        reply::MAX_QUEUED + 1,
        "the oldest dropped, the answer kept"
    );
    assert!(matches!(read.last(), Some(ServerJsonRpcMessage::Error(_))));
    let ServerJsonRpcMessage::Notification(first) = &read[0] else {
        panic!("a notification first");
    };
    let value = serde_json::to_value(first).expect("serialises");
    assert_eq!(
        value["params"]["progress"], 10.0,
        "the first ten were dropped"
    );
}

#[test]
fn a_closed_reply_refuses_notifications() {
    use mcpflow_gateway::notify::Replies;
    let reply = Reply::default();
    reply.close();
    let note = rmcp::model::ProgressNotification::new(rmcp::model::ProgressNotificationParam::new(
        rmcp::model::ProgressToken(rmcp::model::NumberOrString::Number(1)),
        1.0,
    ));
    assert!(!reply.notify(note.into()));
}

#[test]
fn finds_header_annotations_anywhere_in_a_schema() {
    let schema = |v: Value| v.as_object().cloned().expect("an object");
    assert!(!names_param_headers(&schema(
        json!({"type": "object", "properties": {"a": {"type": "string"}}})
    )));
    assert!(names_param_headers(&schema(json!({"properties": {"a": {
        "type": "object", "properties": {"b": {"type": "string", "x-mcp-header": "B"}}}}}))));
    assert!(names_param_headers(&schema(
        json!({"anyOf": [{"properties": {"a": {"x-mcp-header": "A"}}}]})
    )));
}
