//! Malformed and hostile HTTP input: each gets its proper status and JSON-RPC error, and the
//! server keeps serving with bounded memory afterwards.
mod http_common;

use http_common::{Server, start, write_config};
use reqwest::StatusCode;
use serde_json::{Value, json};

/// A config with `limits` as its `http:` section; `nap` sleeps in the fixture upstream.
fn config(limits: &str) -> String {
    format!(
        r#"
version: "1.0"
server: {{ name: "bad-input", version: "1.0.0" }}
http: {limits}
mcpServers:
  fixture: {{ command: "{fixture}" }}
tools:
  - name: "add"
    description: "Adds two numbers"
    inputSchema: {{ type: object, properties: {{ a: {{ type: number }}, b: {{ type: number }} }}, required: [a, b] }}
    nodes:
      - {{ id: entry, type: entry, next: sum }}
      - {{ id: sum, type: transform, transform: {{ expr: '{{"sum": entry.a + entry.b}}' }}, next: exit }}
      - {{ id: exit, type: exit }}
  - name: "nap"
    description: "Sleeps ms milliseconds in the fixture"
    inputSchema: {{ type: object, properties: {{ ms: {{ type: integer }} }}, required: [ms] }}
    nodes:
      - {{ id: entry, type: entry, next: sleep }}
      - {{ id: sleep, type: mcp, server: fixture, tool: sleep, args: {{ ms: {{ expr: "entry.ms" }} }}, next: exit }}
      - {{ id: exit, type: exit }}
  - name: "meet"
    description: "Returns once n calls of the fixture's rendezvous are in progress together"
    inputSchema: {{ type: object, properties: {{ n: {{ type: integer }} }}, required: [n] }}
    nodes:
      - {{ id: entry, type: entry, next: wait }}
      - {{ id: wait, type: mcp, server: fixture, tool: rendezvous, args: {{ n: {{ expr: "entry.n" }} }}, next: exit }}
      - {{ id: exit, type: exit }}
"#,
        fixture = http_common::fixture().display()
    )
}

fn server_with(limits: &str) -> (tempfile::TempDir, Server) {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = write_config(dir.path(), &config(limits));
    let server = start(&config, &[]);
    (dir, server)
}

fn server() -> (tempfile::TempDir, Server) {
    server_with("{ maxBodyBytes: 65536, maxSessions: 1000 }")
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .pool_max_idle_per_host(64)
        .build()
        .expect("HTTP client")
}

fn initialize_body() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "bad-input-test", "version": "0"}}})
}

/// POSTs to /mcp with the usual headers plus `extra`; (status, headers, body).
async fn post(
    http: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    extra: &[(&str, &str)],
    body: impl Into<reqwest::Body>,
) -> (StatusCode, reqwest::header::HeaderMap, String) {
    let mut request = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    if !extra.iter().any(|(k, _)| *k == "mcp-protocol-version") {
        request = request.header("mcp-protocol-version", "2025-11-25");
    }
    if let Some(id) = session {
        request = request.header("mcp-session-id", id);
    }
    for (k, v) in extra {
        request = request.header(*k, *v);
    }
    let response = request.body(body).send().await.expect("request sent");
    let status = response.status();
    let headers = response.headers().clone();
    let text = response.text().await.unwrap_or_default();
    (status, headers, text)
}

/// The JSON-RPC message of a JSON or SSE body.
fn rpc(body: &str) -> Value {
    http_common::message(body)
}

/// Opens a 2025-11-25 session (initialize + initialized) and returns its id.
async fn open_session(http: &reqwest::Client, url: &str) -> String {
    let (id, initialized) = open_session_under_cap(http, url).await;
    assert_eq!(initialized, StatusCode::ACCEPTED);
    id
}

/// [`open_session`] where other sessions are being opened past the cap: the new session may
/// already be evicted when its `notifications/initialized` arrives (404), which is the cap
/// at work, not a failure. The id, and the notification's status.
async fn open_session_under_cap(http: &reqwest::Client, url: &str) -> (String, StatusCode) {
    let (status, headers, body) = post(http, url, None, &[], initialize_body().to_string()).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let id = headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .expect("a session id")
        .to_owned();
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (status, _, _) = post(http, url, Some(&id), &[], note.to_string()).await;
    assert!(
        status == StatusCode::ACCEPTED || status == StatusCode::NOT_FOUND,
        "notifications/initialized: {status}"
    );
    (id, status)
}

async fn add(http: &reqwest::Client, url: &str, session: &str, a: i64, b: i64) -> Value {
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "add", "arguments": {"a": a, "b": b}}});
    let (status, _, body) = post(http, url, Some(session), &[], call.to_string()).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    rpc(&body)["result"]["structuredContent"]["sum"].clone()
}

#[tokio::test]
async fn malformed_requests_get_statuses_and_json_rpc_errors() {
    let (_dir, server) = server();
    let http = client();
    let url = &server.url;
    let session = open_session(&http, url).await;

    // Garbage JSON: 400 and a parse error; JSON that is no JSON-RPC message: invalid request.
    let (status, _, body) = post(&http, url, Some(&session), &[], "{not json").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(rpc(&body)["error"]["code"], -32700, "{body}");
    let (status, _, body) = post(&http, url, Some(&session), &[], r#"{"hello": 1}"#).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(rpc(&body)["error"]["code"], -32600, "{body}");

    // A body past maxBodyBytes (64 KiB): 413, on both transports. Only just past it, so that the
    // whole body fits the socket buffers before the server answers and closes.
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"add","arguments":{{"a":1,"b":2,"pad":"{}"}}}}}}"#,
        "x".repeat(70_000)
    );
    let (status, _, _) = post(&http, url, Some(&session), &[], big.clone()).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    let message = format!("{}/message?sessionId=whatever", server.base());
    let response = http.post(&message).body(big).send().await.expect("sent");
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);

    // Wrong Accept: 406.
    let list = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}).to_string();
    let response = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "text/plain")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .body(list.clone())
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), StatusCode::NOT_ACCEPTABLE);

    // Wrong Content-Type: 415.
    let response = http
        .post(url)
        .header("content-type", "text/plain")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &session)
        .body(list.clone())
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);

    // A session the server never issued: 404.
    let (status, _, _) = post(&http, url, Some("0123456789abcdef"), &[], list.clone()).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // An unknown protocol version: 400.
    let (status, _, _) = post(
        &http,
        url,
        Some(&session),
        &[("mcp-protocol-version", "1999-01-01")],
        list.clone(),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    // 2026-07-28: the Mcp-Method header must match the body's method (HeaderMismatch, -32020).
    let stateless = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}}});
    let response = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .body(stateless.to_string())
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let body = response.text().await.expect("body");
    assert_eq!(rpc(&body)["error"]["code"], -32020, "{body}");

    // A foreign Origin (a browser page elsewhere): 403.
    let (status, _, body) = post(
        &http,
        url,
        Some(&session),
        &[("origin", "https://evil.example.com")],
        list.clone(),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");

    // Through all of it the session still works.
    assert_eq!(add(&http, url, &session, 2, 3).await, json!(5));
}

#[tokio::test]
async fn ten_thousand_abandoned_sessions_leave_memory_bounded() {
    let (_dir, server) = server();
    let http = client();
    let url = server.url.clone();
    let first = open_session(&http, &url).await;
    assert_eq!(add(&http, &url, &first, 1, 1).await, json!(2));
    // Warm up (allocator arenas, connection pool), then measure.
    open_many(&http, &url, 500).await;
    let before = server.rss_kib();
    open_many(&http, &url, 10_000).await;
    let after = server.rss_kib();
    let grown_mib = after.saturating_sub(before) / 1024;
    // maxSessions is 1000: the oldest idle sessions were closed to make room, so memory is that
    // of about 1000 sessions whatever the number opened. Generous: a few hundred KiB each.
    assert!(
        grown_mib < 200,
        "RSS grew by {grown_mib} MiB ({before} KiB → {after} KiB) after 10,000 abandoned sessions"
    );
    // The very first session was idle the longest: it is gone (404), and a client learns so.
    let list = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}).to_string();
    let (status, _, _) = post(&http, &url, Some(&first), &[], list).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // And the server still serves new clients.
    let fresh = open_session(&http, &url).await;
    assert_eq!(add(&http, &url, &fresh, 20, 22).await, json!(42));
    eprintln!("RSS {before} KiB → {after} KiB after 10,000 abandoned sessions");
}

/// Sessions opened by many clients at once, with the default 300 s idle timeout: past
/// `maxSessions` the ones idle longest are closed, every one of them. Each session ever opened
/// is asked (`ping`): no more than the cap still answer. (Concurrent initializes once made the
/// cap lose track of some sessions, which then answered, and were held in memory, until their
/// idle timeout: RSS grew without plateau under churn.)
#[tokio::test]
async fn sessions_opened_concurrently_past_the_cap_are_closed_not_kept() {
    use futures::StreamExt;
    const MAX: usize = 100;
    let (_dir, server) = server_with("{ maxSessions: 100 }");
    let http = client();
    let url = server.url.clone();
    let ids: Vec<String> = futures::stream::iter(0..3_000)
        .map(|_| async { open_session_under_cap(&http, &url).await.0 })
        .buffer_unordered(32)
        .collect()
        .await;
    let ping = json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}).to_string();
    let statuses: Vec<StatusCode> = futures::stream::iter(&ids)
        .map(|id| {
            let (http, url, ping) = (&http, &url, ping.clone());
            async move { post(http, url, Some(id), &[], ping).await.0 }
        })
        .buffer_unordered(8)
        .collect()
        .await;
    let answering = statuses.iter().filter(|s| **s == StatusCode::OK).count();
    let gone = statuses
        .iter()
        .filter(|s| **s == StatusCode::NOT_FOUND)
        .count();
    assert_eq!(
        answering + gone,
        ids.len(),
        "a ping got neither 200 nor 404: {statuses:?}"
    );
    assert!(
        answering <= MAX,
        "{answering} of {} sessions still open with maxSessions {MAX}",
        ids.len()
    );
    // The newest sessions are the ones kept: the cap is full, not emptied.
    assert!(answering >= MAX / 2, "only {answering} sessions answer");
}

/// A session whose call is still running is not idle, however long ago the call started: new
/// sessions past the cap evict idle ones, never it. (The cap once ordered sessions by their
/// last request's start, so a slow call's session was the first evicted and its client got a
/// response stream that ended without an answer.)
#[tokio::test]
async fn a_session_with_a_call_in_flight_is_not_evicted() {
    use futures::StreamExt;
    let (_dir, server) = server_with("{ maxSessions: 20 }");
    let http = client();
    let url = server.url.clone();
    let meet = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "meet", "arguments": {"n": 2}}})
    .to_string();
    let call = |session: String| {
        let (http, url, meet) = (http.clone(), url.clone(), meet.clone());
        tokio::spawn(async move { post(&http, &url, Some(&session), &[], meet).await })
    };
    let first = call(open_session(&http, &url).await);
    // Until the first call is running (the run API lists it), then 60 new sessions, three times
    // the cap: the first session's last request is the oldest of all.
    let running = format!("{}/api/runs?tool=meet&status=running", server.base());
    loop {
        let listed: Value = http
            .get(&running)
            .send()
            .await
            .expect("run API answers")
            .json()
            .await
            .expect("run API JSON");
        if listed["runs"].as_array().is_some_and(|r| !r.is_empty()) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    futures::stream::iter(0..60)
        .map(|_| open_session_under_cap(&http, &url))
        .buffer_unordered(8)
        .collect::<Vec<_>>()
        .await;
    // The second participant of the rendezvous: both calls end together.
    let second = call(open_session(&http, &url).await);
    for (which, call) in [("first", first), ("second", second)] {
        let (status, _, body) = call.await.expect("call task");
        assert_eq!(status, StatusCode::OK, "{which}: {body}");
        let answer = rpc(&body);
        assert_eq!(
            answer["result"]["structuredContent"]["arrived"],
            json!(2),
            "{which} call's answer: {body}"
        );
    }
}

/// Opens `n` sessions (initialize only, never used again), 32 at a time.
async fn open_many(http: &reqwest::Client, url: &str, n: usize) {
    use futures::StreamExt;
    futures::stream::iter(0..n)
        .for_each_concurrent(32, |_| async move {
            let (status, headers, body) =
                post(http, url, None, &[], initialize_body().to_string()).await;
            assert_eq!(status, StatusCode::OK, "{body}");
            assert!(headers.contains_key("mcp-session-id"));
        })
        .await;
}

/// Starts a `nap` of `ms` in `session` without waiting for it.
fn nap(
    http: &reqwest::Client,
    url: &str,
    session: &str,
    ms: u64,
) -> tokio::task::JoinHandle<StatusCode> {
    // Ids must be unique among a session's requests in flight.
    static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1000);
    let id = NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "nap", "arguments": {"ms": ms}}});
    let request = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", "2025-11-25")
        .body(call.to_string());
    tokio::spawn(async move {
        let response = request.send().await.expect("sent");
        let status = response.status();
        let _ = response.text().await;
        status
    })
}

#[tokio::test]
async fn calls_past_the_session_and_global_limits_get_429_and_503() {
    let (_dir, server) =
        server_with("{ maxConcurrentRequests: 4, maxConcurrentRequestsPerSession: 2 }");
    let http = client();
    let url = server.url.clone();
    let (a, b, c) = (
        open_session(&http, &url).await,
        open_session(&http, &url).await,
        open_session(&http, &url).await,
    );
    // The upstream starts before the clock does: a first call pays for the spawn.
    let warm = nap(&http, &url, &a, 1);
    assert_eq!(warm.await.expect("joined"), StatusCode::OK);
    // A GET stream is a listener, not a request in flight: it takes no slot.
    let _listener = http
        .get(&url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &a)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .expect("GET stream opens");
    // Session a fills its 2 slots with naps of 3 s; a third request of a is refused at once.
    let naps_a = [nap(&http, &url, &a, 3000), nap(&http, &url, &a, 3000)];
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let list = json!({"jsonrpc": "2.0", "id": 200, "method": "tools/list"}).to_string();
    let (status, headers, body) = post(&http, &url, Some(&a), &[], list.clone()).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    assert_eq!(rpc(&body)["error"]["code"], -32000, "{body}");
    assert!(headers.contains_key("retry-after"));
    // Session b takes the other 2 of the 4 global slots; then even session c is refused.
    let naps_b = [nap(&http, &url, &b, 3000), nap(&http, &url, &b, 3000)];
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let (status, _, body) = post(&http, &url, Some(&c), &[], list.clone()).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    // The naps themselves all finish fine, and then everyone is admitted again.
    for handle in naps_a.into_iter().chain(naps_b) {
        assert_eq!(handle.await.expect("joined"), StatusCode::OK);
    }
    assert_eq!(add(&http, &url, &a, 1, 2).await, json!(3));
    assert_eq!(add(&http, &url, &c, 2, 2).await, json!(4));
}

/// A client whose connection drops mid-call reconnects with `Last-Event-ID` and gets the
/// answer it missed (2025-11-25 resumability; the server keeps the stream's events).
#[tokio::test]
async fn a_dropped_stream_resumes_with_last_event_id() {
    use futures::StreamExt;
    let (_dir, server) = server();
    let http = client();
    let url = server.url.clone();
    let session = open_session(&http, &url).await;
    let call = json!({"jsonrpc": "2.0", "id": 77, "method": "tools/call",
        "params": {"name": "nap", "arguments": {"ms": 1500}}});
    let response = http
        .post(&url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .body(call.to_string())
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), StatusCode::OK);
    // Read up to the priming event (an id, no data yet), then drop the connection.
    let mut body = response.bytes_stream();
    let mut seen = String::new();
    let last_id = loop {
        let chunk = body
            .next()
            .await
            .expect("the stream stays open until the priming event")
            .expect("bytes");
        seen.push_str(&String::from_utf8_lossy(&chunk));
        if let Some(id) = seen
            .lines()
            .find_map(|l| l.strip_prefix("id:").map(|v| v.trim().to_owned()))
        {
            break id;
        }
    };
    assert!(
        !seen.contains("\"result\""),
        "answered before the drop: {seen}"
    );
    drop(body);
    // Reconnect: the answer arrives on the resumed stream.
    let resumed = http
        .get(&url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .header("last-event-id", &last_id)
        .send()
        .await
        .expect("GET with Last-Event-ID");
    assert_eq!(resumed.status(), StatusCode::OK);
    let mut stream = resumed.bytes_stream();
    let mut text = String::new();
    let answer = loop {
        let chunk = tokio::time::timeout(std::time::Duration::from_secs(20), stream.next())
            .await
            .expect("the answer within 20 s")
            .expect("the resumed stream stays open")
            .expect("bytes");
        text.push_str(&String::from_utf8_lossy(&chunk));
        if let Some(data) = text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim)
            .find(|d| d.contains("\"id\":77"))
        {
            break serde_json::from_str::<Value>(data).expect("JSON-RPC");
        }
    };
    assert_eq!(
        answer["result"]["structuredContent"],
        json!({"slept": 1500})
    );
}

/// A refusal's status, that it is `application/json`, and its JSON-RPC error code (id null:
/// the request was never read).
async fn refusal(response: reqwest::Response) -> (StatusCode, i64, String) {
    let status = response.status();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let body = response.text().await.expect("body");
    assert!(
        content_type.starts_with("application/json"),
        "{status}: Content-Type {content_type:?}, body {body}"
    );
    let v: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{status}: {e}: {body}"));
    assert_eq!(v["jsonrpc"], "2.0", "{body}");
    assert_eq!(v["id"], Value::Null, "{body}");
    assert!(
        !v["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .is_empty(),
        "{body}"
    );
    let code = v["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("{body}"));
    (status, code, body)
}

/// 406, 415 and 404 (README "Over HTTP") are JSON-RPC error objects, on POST and GET, not
/// rmcp's plain text.
#[tokio::test]
async fn refusals_are_json_rpc_error_objects() {
    let (_dir, server) = server();
    let http = client();
    let url = &server.url;
    let session = open_session(&http, url).await;
    let list = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}).to_string();
    let with = |method: reqwest::Method, accept: &str, content_type: &str, id: &str| {
        http.request(method, url.as_str())
            .header("accept", accept)
            .header("content-type", content_type)
            .header("mcp-session-id", id)
            .header("mcp-protocol-version", "2025-11-25")
    };
    let both = "application/json, text/event-stream";
    let cases = [
        (
            "POST with a wrong Accept",
            with(
                reqwest::Method::POST,
                "text/plain",
                "application/json",
                &session,
            ),
            StatusCode::NOT_ACCEPTABLE,
            -32000,
        ),
        (
            "GET with a wrong Accept",
            with(
                reqwest::Method::GET,
                "application/json",
                "application/json",
                &session,
            ),
            StatusCode::NOT_ACCEPTABLE,
            -32000,
        ),
        (
            "POST with a wrong Content-Type",
            with(reqwest::Method::POST, both, "text/plain", &session),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            -32000,
        ),
        (
            "POST to an unknown session",
            with(
                reqwest::Method::POST,
                both,
                "application/json",
                "0123456789abcdef",
            ),
            StatusCode::NOT_FOUND,
            -32001,
        ),
        (
            "GET of an unknown session",
            with(
                reqwest::Method::GET,
                "text/event-stream",
                "application/json",
                "0123456789abcdef",
            ),
            StatusCode::NOT_FOUND,
            -32001,
        ),
    ];
    for (what, request, status, code) in cases {
        let response = request.body(list.clone()).send().await.expect("sent");
        let (got_status, got_code, body) = refusal(response).await;
        assert_eq!((got_status, got_code), (status, code), "{what}: {body}");
    }
    // An unknown protocol version: 400, a JSON-RPC error too.
    let (status, _, body) = post(
        &http,
        url,
        Some(&session),
        &[("mcp-protocol-version", "1999-01-01")],
        list.clone(),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(rpc(&body)["error"]["code"].is_i64(), "{body}");
    // The session still works.
    assert_eq!(add(&http, url, &session, 2, 3).await, json!(5));
}

/// Every route sits behind the Host/Origin guard, the probes included: a DNS-rebinding page
/// (a foreign `Host`, or a browser's foreign `Origin`) reads nothing, not even `/healthz`.
#[tokio::test]
async fn every_route_is_behind_the_host_and_origin_guard() {
    let (_dir, server) = server();
    let http = client();
    let base = server.base();
    for path in [
        "/healthz", "/readyz", "/mcp", "/sse", "/message", "/nowhere",
    ] {
        let url = format!("{base}{path}");
        for (header, value) in [("host", "evil.example"), ("origin", "http://evil.example")] {
            let response = http
                .get(&url)
                .header(header, value)
                .header("accept", "text/event-stream")
                .send()
                .await
                .expect("sent");
            assert_eq!(
                response.status(),
                StatusCode::FORBIDDEN,
                "GET {path} with {header}: {value}"
            );
        }
    }
    // With the server's own name, the probes answer.
    let response = http
        .get(format!("{base}/healthz"))
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), StatusCode::OK);
}

/// `mcpflow serve CONFIG --http 127.0.0.1:0` under `ulimit -n NOFILE` (when given), with its
/// stderr lines collected.
fn start_logged(
    config: &std::path::Path,
    nofile: Option<u32>,
) -> (Server, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use std::io::BufRead;
    use std::process::{Command, Stdio};
    let mut command = Command::new("sh");
    let limit = nofile.map_or(String::new(), |n| format!("ulimit -n {n} && "));
    command.args([
        "-c",
        &format!(r#"{limit}exec "$0" "$@""#),
        http_common::mcpflow().to_str().expect("utf-8"),
        "serve",
        config.to_str().expect("utf-8"),
        "--http",
        "127.0.0.1:0",
    ]);
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mcpflow starts");
    let mut lines = std::io::BufReader::new(child.stderr.take().expect("stderr")).lines();
    let url = loop {
        let line = lines
            .next()
            .expect("mcpflow prints its address before exiting")
            .expect("stderr is text");
        if let Some(rest) = line.strip_prefix("mcpflow: listening on ") {
            break rest.trim().to_owned();
        }
    };
    let said = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let keep = said.clone();
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            keep.lock().expect("not poisoned").push(line);
        }
    });
    (Server { child, url }, said)
}

fn address(server: &Server) -> std::net::SocketAddr {
    server
        .base()
        .trim_start_matches("http://")
        .parse()
        .expect("host:port")
}

/// Whether the server closed `tcp` (EOF or a reset) within `patience`.
fn closed_within(tcp: &mut std::net::TcpStream, patience: std::time::Duration) -> Vec<u8> {
    use std::io::Read;
    tcp.set_read_timeout(Some(patience)).expect("timeout set");
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tcp.read(&mut buf) {
            Ok(0) => return got,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut =>
            {
                panic!(
                    "the connection is still open after {patience:?}; got {:?}",
                    String::from_utf8_lossy(&got)
                )
            }
            Err(_) => return got,
        }
    }
}

/// A request whose headers never complete is closed after `headerReadTimeoutMs`; one whose
/// body never completes gets 408 after `bodyReadTimeoutMs`.
#[tokio::test]
async fn slow_headers_and_slow_bodies_are_cut_off() {
    use std::io::Write;
    let (_dir, server) = server_with("{ headerReadTimeoutMs: 1000, bodyReadTimeoutMs: 1000 }");
    let addr = address(&server);
    let patience = std::time::Duration::from_secs(15);

    let mut partial = std::net::TcpStream::connect(addr).expect("connects");
    partial
        .write_all(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: appl")
        .expect("written");
    let started = std::time::Instant::now();
    closed_within(&mut partial, patience);
    eprintln!("partial headers closed after {:?}", started.elapsed());

    // An idle connection that never sends anything is closed the same way.
    let mut idle = std::net::TcpStream::connect(addr).expect("connects");
    closed_within(&mut idle, patience);

    let mut slow = std::net::TcpStream::connect(addr).expect("connects");
    slow.write_all(
        b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
          Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"",
    )
    .expect("written");
    let answer = closed_within(&mut slow, patience);
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("bodyReadTimeoutMs"), "{answer}");

    // Meanwhile the server serves.
    let http = client();
    let session = open_session(&http, &server.url).await;
    assert_eq!(add(&http, &server.url, &session, 1, 2).await, json!(3));
}

/// The issue's attack: more half-sent requests than the server has descriptors for. The cap
/// (the open-file limit less the reserve) holds, the oldest idle connections are closed for new
/// ones, a warning says so, and a real client is answered at once.
#[tokio::test]
async fn idle_connections_past_the_descriptor_limit_do_not_starve_real_clients() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = write_config(dir.path(), &config("{ headerReadTimeoutMs: 600000 }"));
    // 300 descriptors: a cap of 44 connections; 400 half-sent requests would exhaust them.
    let (server, said) = start_logged(&config, Some(300));
    let addr = address(&server);
    let mut attackers = Vec::new();
    for _ in 0..400 {
        use std::io::Write;
        let Ok(mut tcp) =
            std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_secs(5))
        else {
            break;
        };
        let _ = tcp.write_all(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\n");
        attackers.push(tcp);
    }
    assert_eq!(attackers.len(), 400, "the kernel accepted every connection");
    let http = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(10))
        .build()
        .expect("HTTP client");
    let response = http
        .post(&server.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .body(initialize_body().to_string())
        .send()
        .await
        .expect("a real client is answered within 10 s while 400 idle connections wait");
    assert_eq!(response.status(), StatusCode::OK);
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .expect("a session id")
        .to_owned();
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (status, _, _) = post(&http, &server.url, Some(&session), &[], note.to_string()).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    assert_eq!(add(&http, &server.url, &session, 40, 2).await, json!(42));
    let log = said.lock().expect("not poisoned").join("\n");
    assert!(log.contains("HTTP connection cap reached"), "{log}");
    drop(attackers);
}
