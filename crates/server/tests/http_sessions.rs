//! Sessions closed to make room under `maxSessions` are freed at once, served in process so
//! the runtime's task count shows what each session leaves behind.

mod support;

use std::time::Duration;

use mcpflow_server::{HttpListener, HttpOptions};
use serde_json::json;

const MINIMAL: &str = r#"
version: "1.0"
server: {name: churn, version: "1.0.0"}
tools:
  - name: nothing
    description: "does nothing"
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: exit}
      - {id: exit, type: exit}
"#;

fn alive_tasks() -> usize {
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}

/// Opens a session (initialize only, as a client that walks away does).
async fn initialize(http: &reqwest::Client, url: &str) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "churn", "version": "0"}}});
    let response = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_string())
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), reqwest::StatusCode::OK);
    assert!(response.headers().contains_key("mcp-session-id"));
    let _ = response.text().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_closed_by_the_cap_are_freed_before_their_idle_expiry() {
    let (_dir, server) = support::server(MINIMAL).await;
    let mut options = HttpOptions::default();
    options.limits.max_sessions = 5;
    // Far beyond the test: whatever is freed, the cap freed.
    options.limits.session_idle_timeout = Duration::from_secs(3600);
    let listener = HttpListener::bind("127.0.0.1:0".parse().expect("address"))
        .await
        .expect("binds");
    let url = format!("http://{}/mcp", listener.local_addr().expect("address"));
    tokio::spawn(listener.serve(server, options, std::future::pending()));
    let http = reqwest::Client::new();
    for _ in 0..20 {
        initialize(&http, &url).await;
    }
    let settled = settle().await;
    for _ in 0..400 {
        initialize(&http, &url).await;
    }
    let after = settle().await;
    // 400 sessions opened, all but 5 closed by the cap: what is alive is what 5 sessions and
    // the listener need, give or take, not 400 sessions' worth.
    assert!(
        after < settled + 40,
        "{settled} tasks alive after 20 sessions, {after} after 420 (cap 5): closed sessions \
         are still alive"
    );
}

/// The task count once it stops falling (closed sessions wind down in the background).
async fn settle() -> usize {
    let mut last = alive_tasks();
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let now = alive_tasks();
        if now >= last {
            return now;
        }
        last = now;
    }
    last
}
