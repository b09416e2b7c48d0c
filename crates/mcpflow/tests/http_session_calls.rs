//! `tools/call`s in a 2025-11-25 Streamable HTTP session, which the listener runs beside the
//! session's rmcp serve loop (`server/src/http/sessions/session.rs`, "skip the serve loop"):
//! what the call asks its client rides the call's own response stream (SEP-2260), and the
//! client's `notifications/cancelled` and the session's DELETE stop the call, down to its
//! upstream request. The fixture records every message it receives (`--record`).

mod http_common;

use std::path::Path;
use std::time::Duration;

use futures::StreamExt;
use http_common::{Server, fixture, start, write_config};
use serde_json::{Value, json};

const ASK: &str = r#"
version: "1.0"
server: {name: ask, version: "1.0.0"}
tools:
  - name: approve
    inputSchema: {type: object, properties: {n: {type: integer}}, required: [n]}
    nodes:
      - {id: start, type: entry, next: ask}
      - id: ask
        type: await
        mode: elicit
        message: {expr: "'Approve order ' & $string($.start.n) & '?'"}
        inputSchema: {type: object, properties: {ok: {type: boolean}}, required: [ok]}
        next: done
      - {id: done, type: transform, transform: {expr: "{'n': $.start.n, 'ok': $.ask.ok}"}, next: finish}
      - {id: finish, type: exit}
"#;

const SLOW: &str = r#"
version: "1.0"
server: {name: slow, version: "1.0.0"}
mcpServers:
  fx: {command: "FIXTURE", args: ["--record", "RECORD"]}
tools:
  - name: nap
    nodes:
      - {id: start, type: entry, next: nap}
      - {id: nap, type: mcp, server: fx, tool: sleep, args: {ms: 600000}, next: finish}
      - {id: finish, type: exit}
"#;

/// A session of `server` past `initialize` and `notifications/initialized`: its id.
async fn open(http: &reqwest::Client, server: &Server, capabilities: Value) -> String {
    let response = post(
        http,
        server,
        None,
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": capabilities,
            "clientInfo": {"name": "mcpflow-test", "version": "0.0.0"}}}),
    )
    .await;
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .expect("a session id")
        .to_owned();
    response.text().await.expect("the initialize answer");
    let done = post(
        http,
        server,
        Some(&session),
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    assert_eq!(done.status().as_u16(), 202);
    session
}

async fn post(
    http: &reqwest::Client,
    server: &Server,
    session: Option<&str>,
    body: &Value,
) -> reqwest::Response {
    let mut request = http
        .post(&server.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25");
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    request
        .body(body.to_string())
        .send()
        .await
        .expect("the request is sent")
}

/// The JSON-RPC messages of an SSE response, as they come; `None` when the stream ends.
struct Events {
    /// The body's chunks; `None` for a broken one.
    body: futures::stream::BoxStream<'static, Option<Vec<u8>>>,
    buffer: String,
}

impl Events {
    fn of(response: reqwest::Response) -> Events {
        Events {
            body: response
                .bytes_stream()
                .map(|chunk| chunk.ok().map(|bytes| bytes.to_vec()))
                .boxed(),
            buffer: String::new(),
        }
    }

    async fn next(&mut self) -> Option<Value> {
        let within = tokio::time::timeout(Duration::from_secs(20), async {
            loop {
                while let Some(end) = self.buffer.find("\n\n") {
                    let event: String = self.buffer.drain(..end + 2).collect();
                    let data: String = event
                        .lines()
                        .filter_map(|l| l.strip_prefix("data:"))
                        .map(str::trim)
                        .collect();
                    if !data.is_empty() {
                        return Some(serde_json::from_str(&data).expect("an event's data is JSON"));
                    }
                }
                match self.body.next().await {
                    Some(Some(chunk)) => self.buffer.push_str(&String::from_utf8_lossy(&chunk)),
                    Some(None) | None => return None,
                }
            }
        });
        within.await.expect("the stream moves within 20 s")
    }
}

/// Waits until the fixture's record holds `needle` (20 s at most); the record's text.
async fn recorded(record: &Path, needle: &str) -> String {
    for _ in 0..200 {
        let text = std::fs::read_to_string(record).unwrap_or_default();
        if text.contains(needle) {
            return text;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!(
        "the fixture never received {needle}; it received:\n{}",
        std::fs::read_to_string(record).unwrap_or_default()
    );
}

#[tokio::test]
async fn a_session_call_asks_its_client_on_its_own_stream_and_answers_there() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start(&write_config(dir.path(), ASK), &[]);
    let http = reqwest::Client::new();
    let session = open(&http, &server, json!({"elicitation": {"form": {}}})).await;
    let call = post(
        &http,
        &server,
        Some(&session),
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "approve", "arguments": {"n": 7}}}),
    )
    .await;
    assert_eq!(call.status().as_u16(), 200);
    let mut events = Events::of(call);
    let asked = events
        .next()
        .await
        .expect("the question, on the call's stream");
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    assert_eq!(asked["params"]["message"], "Approve order 7?");
    let reply = post(
        &http,
        &server,
        Some(&session),
        &json!({"jsonrpc": "2.0", "id": asked["id"].clone(),
                "result": {"action": "accept", "content": {"ok": true}}}),
    )
    .await;
    assert_eq!(reply.status().as_u16(), 202);
    let answer = events.next().await.expect("the answer, on the same stream");
    assert_eq!(answer["id"], 1, "{answer}");
    assert_eq!(
        answer["result"]["structuredContent"],
        json!({"n": 7, "ok": true})
    );
    assert!(
        events.next().await.is_none(),
        "the stream ends after the answer"
    );
}

/// The slow tool started in a fresh session; the call's stream, once the fixture got the sleep.
async fn napping(http: &reqwest::Client, server: &Server, record: &Path) -> (String, Events) {
    let session = open(http, server, json!({})).await;
    let call = post(
        http,
        server,
        Some(&session),
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "nap", "arguments": {}}}),
    )
    .await;
    assert_eq!(call.status().as_u16(), 200);
    recorded(record, "600000").await;
    (session, Events::of(call))
}

fn slow_server(dir: &Path) -> (Server, std::path::PathBuf) {
    let record = dir.join("received.jsonl");
    let yaml = SLOW
        .replace("FIXTURE", fixture().to_str().expect("a UTF-8 path"))
        .replace("RECORD", record.to_str().expect("a UTF-8 path"));
    (start(&write_config(dir, &yaml), &[]), record)
}

#[tokio::test]
async fn a_cancelled_session_call_stops_and_cancels_its_upstream_request() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (server, record) = slow_server(dir.path());
    let http = reqwest::Client::new();
    let (session, mut events) = napping(&http, &server, &record).await;
    let cancel = post(
        &http,
        &server,
        Some(&session),
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": 2, "reason": "changed my mind"}}),
    )
    .await;
    assert_eq!(cancel.status().as_u16(), 202);
    assert!(
        events.next().await.is_none(),
        "a cancelled call's stream ends without an answer"
    );
    recorded(&record, "notifications/cancelled").await;
}

#[tokio::test]
async fn closing_a_session_stops_its_calls_down_to_their_upstream_requests() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (server, record) = slow_server(dir.path());
    let http = reqwest::Client::new();
    let (session, mut events) = napping(&http, &server, &record).await;
    let closed = http
        .delete(&server.url)
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .expect("DELETE sent");
    assert!(closed.status().is_success(), "{}", closed.status());
    assert!(events.next().await.is_none(), "the call's stream ends");
    recorded(&record, "notifications/cancelled").await;
}
