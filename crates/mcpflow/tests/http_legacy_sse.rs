//! Legacy HTTP+SSE (2024-11-05) at `/sse` + `/message`, spoken by hand over a real socket:
//! the endpoint event, answers on the stream, errors for bad posts, and the session ending with
//! its stream.
mod http_common;

use futures::StreamExt;
use http_common::{config, start};
use reqwest::StatusCode;
use serde_json::{Value, json};

/// Reads SSE events (`event`, `data`) off a response body.
struct Events {
    body: futures::stream::BoxStream<'static, reqwest::Result<Vec<u8>>>,
    buffer: String,
}

impl Events {
    fn new(response: reqwest::Response) -> Self {
        Events {
            body: response
                .bytes_stream()
                .map(|chunk| chunk.map(|b| b.to_vec()))
                .boxed(),
            buffer: String::new(),
        }
    }

    /// The next event that is not a keep-alive comment.
    async fn next(&mut self) -> (String, String) {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut event = String::from("message");
                let mut data = String::new();
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("event:") {
                        event = v.trim().to_owned();
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push_str(v.trim());
                    }
                }
                if !data.is_empty() {
                    return (event, data);
                }
                continue;
            }
            let chunk = tokio::time::timeout(std::time::Duration::from_secs(20), self.body.next())
                .await
                .expect("an event within 20 s")
                .expect("the stream is open")
                .expect("stream bytes");
            self.buffer.push_str(&String::from_utf8_lossy(&chunk));
        }
    }

    async fn message(&mut self) -> Value {
        let (event, data) = self.next().await;
        assert_eq!(event, "message", "{data}");
        serde_json::from_str(&data).expect("a JSON-RPC message")
    }
}

async fn post(http: &reqwest::Client, url: &str, body: &str) -> (StatusCode, String) {
    let response = http
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_owned())
        .send()
        .await
        .expect("sent");
    let status = response.status();
    (status, response.text().await.unwrap_or_default())
}

#[tokio::test]
async fn a_graph_tool_answers_over_legacy_sse() {
    let server = start(&config("http_conformance.yaml"), &[]);
    let http = reqwest::Client::new();
    let stream = http
        .get(format!("{}/sse", server.base()))
        .header("accept", "text/event-stream")
        .send()
        .await
        .expect("GET /sse");
    assert_eq!(stream.status(), StatusCode::OK);
    assert_eq!(
        stream.headers()["content-type"].to_str().expect("ascii"),
        "text/event-stream"
    );
    let mut events = Events::new(stream);
    let (event, endpoint) = events.next().await;
    assert_eq!(event, "endpoint");
    assert!(endpoint.starts_with("/message?sessionId="), "{endpoint}");
    let post_url = format!("{}{endpoint}", server.base());

    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2024-11-05", "capabilities": {},
        "clientInfo": {"name": "legacy-sse-test", "version": "0"}}});
    let (status, _) = post(&http, &post_url, &init.to_string()).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let reply = events.message().await;
    assert_eq!(reply["id"], 1);
    assert_eq!(reply["result"]["protocolVersion"], "2024-11-05");
    assert_eq!(reply["result"]["serverInfo"]["name"], "mcpflow-conformance");
    let (status, _) = post(
        &http,
        &post_url,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED);

    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "add", "arguments": {"a": 20, "b": 22}}});
    let (status, _) = post(&http, &post_url, &call.to_string()).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let reply = events.message().await;
    assert_eq!(reply["id"], 2);
    assert_eq!(reply["result"]["structuredContent"], json!({"sum": 42}));

    // Bad posts: garbage (400, parse error), no session (400), unknown session (404).
    let (status, body) = post(&http, &post_url, "{oops").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        serde_json::from_str::<Value>(&body).expect("JSON error")["error"]["code"],
        -32700
    );
    let (status, _) = post(&http, &format!("{}/message", server.base()), "{}").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = post(
        &http,
        &format!("{}/message?sessionId=feedface", server.base()),
        &call.to_string(),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // The session lives as long as its stream: closing it ends the session.
    drop(events);
    let mut gone = StatusCode::ACCEPTED;
    for _ in 0..50 {
        gone = post(&http, &post_url, &call.to_string()).await.0;
        if gone == StatusCode::NOT_FOUND {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(
        gone,
        StatusCode::NOT_FOUND,
        "the session outlived its stream"
    );
}

#[tokio::test]
async fn legacy_sse_refuses_a_foreign_host() {
    let server = start(&config("http_conformance.yaml"), &[]);
    let response = reqwest::Client::new()
        .get(format!("{}/sse", server.base()))
        .header("host", "evil.example.com")
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
}
