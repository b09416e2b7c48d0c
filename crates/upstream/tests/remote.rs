//! Remote upstreams over real sockets: `@modelcontextprotocol/server-everything` in
//! `streamableHttp` and `sse` mode, the fixture's Streamable HTTP mode (an rmcp server, which
//! answers a forgotten session with 404), and bare TCP listeners for what no server does on
//! purpose (slow handshakes, checking the headers that arrive).

mod common;
#[path = "support/everything.rs"]
mod everything;

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{args, eventually, fixture_path, pool, server};
use everything::{Everything, Mode, free_port};
use mcpflow_upstream::{UpstreamError, UpstreamPool};
use serde_json::{Value, json};

const S: &str = "remote";

fn remote_pool(kind: &str, url: &str, extra: Value) -> UpstreamPool {
    let mut entry = json!({"type": kind, "url": url, "timeoutMs": 30000});
    if let (Some(entry), Value::Object(extra)) = (entry.as_object_mut(), extra) {
        entry.extend(extra);
    }
    pool(vec![(S, server(entry))])
}

fn everything_pool(server: &Everything) -> UpstreamPool {
    remote_pool(server.kind(), &server.url(), json!({}))
}

/// The text of a call's first content block.
async fn call_text(
    pool: &UpstreamPool,
    tool: &str,
    arguments: Value,
) -> Result<String, UpstreamError> {
    let result = pool.call_tool(S, tool, args(arguments)).await?;
    assert!(!result.is_error, "{tool} reported an error: {result:?}");
    Ok(result.content[0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{tool} returned no text: {result:?}"))
        .to_string())
}

async fn lists_and_calls(mode: Mode) {
    let server = Everything::start(mode);
    let pool = everything_pool(&server);
    let info = pool.server_info(S).await.expect("connects");
    assert_eq!(info.protocol_version, "2025-11-25", "{info:?}");
    let tools = pool.list_tools(S).await.expect("lists tools");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert!(
        names.contains(&"echo") && names.contains(&"get-sum"),
        "{names:?}"
    );

    let echo = call_text(&pool, "echo", json!({"message": "hello remote"})).await;
    assert_eq!(echo.expect("echo answers"), "Echo: hello remote");
    let sum = call_text(&pool, "get-sum", json!({"a": 2, "b": 40})).await;
    assert!(sum.expect("get-sum answers").contains("42"));

    // Concurrent calls share the one session.
    let calls = (0..8).map(|i| call_text(&pool, "echo", json!({"message": format!("m{i}")})));
    for (i, answer) in futures::future::join_all(calls)
        .await
        .into_iter()
        .enumerate()
    {
        assert_eq!(answer.expect("echo answers"), format!("Echo: m{i}"));
    }
    // A tool the server does not have is a refusal from the server, not a broken connection.
    match pool.call_tool(S, "no-such-tool", args(json!({}))).await {
        Ok(result) => assert!(result.is_error, "{result:?}"),
        Err(error) => assert!(matches!(error, UpstreamError::Rejected { .. }), "{error}"),
    }
    pool.shutdown().await;
}

#[tokio::test]
async fn streamable_http_upstream_lists_and_calls_tools() {
    lists_and_calls(Mode::StreamableHttp).await;
}

#[tokio::test]
async fn legacy_sse_upstream_lists_and_calls_tools() {
    lists_and_calls(Mode::Sse).await;
}

/// The server dies between calls and while it is down, then comes back on the same port:
/// calls fail with a clear error meanwhile and work again once it is back, without a new pool.
async fn goes_away_and_comes_back(mode: Mode) {
    let mut server = Everything::start(mode);
    let port = server.port;
    let pool = everything_pool(&server);
    let first = call_text(&pool, "echo", json!({"message": "before"})).await;
    assert_eq!(first.expect("first call"), "Echo: before");

    server.stop();
    let error = call_text(&pool, "echo", json!({"message": "down"}))
        .await
        .expect_err("the server is down");
    assert!(
        matches!(
            error,
            UpstreamError::Disconnected { .. } | UpstreamError::Unreachable { .. }
        ),
        "{error}"
    );
    assert!(
        error.to_string().contains(&format!("127.0.0.1:{port}")),
        "{error}"
    );

    let server = Everything::start_on(mode, port);
    // The pool pauses between reconnects after repeated failures, so allow a few tries.
    let mut answer = None;
    for _ in 0..40 {
        match call_text(&pool, "echo", json!({"message": "after"})).await {
            Ok(text) => {
                answer = Some(text);
                break;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(250)).await,
        }
    }
    assert_eq!(
        answer.as_deref(),
        Some("Echo: after"),
        "{}",
        server.output()
    );
    pool.shutdown().await;
}

#[tokio::test]
async fn streamable_http_upstream_that_goes_away_and_comes_back() {
    goes_away_and_comes_back(Mode::StreamableHttp).await;
}

#[tokio::test]
async fn legacy_sse_upstream_that_goes_away_and_comes_back() {
    goes_away_and_comes_back(Mode::Sse).await;
}

/// server-everything answers a session it does not know with HTTP 400 and an error that names
/// no request: the client takes a new session instead of waiting for an answer that never comes.
#[tokio::test]
async fn a_restarted_server_that_answers_400_for_the_old_session_gets_a_new_one() {
    let mut server = Everything::start(Mode::StreamableHttp);
    let port = server.port;
    // Short, so that a request left hanging fails as a timeout, which this test rejects.
    let pool = remote_pool(server.kind(), &server.url(), json!({"timeoutMs": 10000}));
    assert_eq!(
        call_text(&pool, "echo", json!({"message": "one"}))
            .await
            .expect("first call"),
        "Echo: one"
    );
    server.stop();
    let _server = Everything::start_on(Mode::StreamableHttp, port);
    // A keep-alive connection that died with the old process may fail one request as
    // "connection closed before message completed"; that request may have been delivered, so
    // it is not retried. Every other way must end in a new session.
    let mut answers = Vec::new();
    for message in ["two", "three"] {
        match call_text(&pool, "echo", json!({"message": message})).await {
            Ok(text) => answers.push(text),
            Err(error) => assert!(
                matches!(error, UpstreamError::Disconnected { .. }) && answers.is_empty(),
                "{error}"
            ),
        }
    }
    assert_eq!(answers.last().map(String::as_str), Some("Echo: three"));
    pool.shutdown().await;
}

/// The fixture serving Streamable HTTP on `port` (an rmcp server).
fn fixture_http(port: u16) -> Child {
    Command::new(fixture_path())
        .args(["--http", &format!("127.0.0.1:{port}")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the fixture starts")
}

async fn wait_listening(port: u16) {
    eventually("the fixture listens", async || {
        tokio::net::TcpStream::connect((Ipv4Addr::LOCALHOST, port))
            .await
            .is_ok()
    })
    .await;
}

/// An rmcp server answers a forgotten `Mcp-Session-Id` with 404, as the spec says: the client
/// re-initializes and the call goes through on the new session.
#[tokio::test]
async fn a_session_the_server_forgot_404_is_reinitialized() {
    let port = free_port();
    let mut first = fixture_http(port);
    wait_listening(port).await;
    let pool = remote_pool(
        "streamableHttp",
        &format!("http://127.0.0.1:{port}/mcp"),
        json!({}),
    );
    let count = |pool: UpstreamPool| async move {
        let result = pool.call_tool(S, "count", args(json!({}))).await?;
        Ok::<_, UpstreamError>(result.structured_content.unwrap_or_default()["count"].clone())
    };
    assert_eq!(count(pool.clone()).await.expect("first call"), json!(1));
    assert_eq!(count(pool.clone()).await.expect("second call"), json!(2));

    let _ = first.kill();
    let _ = first.wait();
    let mut second = fixture_http(port);
    wait_listening(port).await;
    // A new process counts from 1: the call reached it on a new session.
    assert_eq!(
        count(pool.clone()).await.expect("call after the restart"),
        json!(1)
    );
    pool.shutdown().await;
    let _ = second.kill();
    let _ = second.wait();
}

/// Accepts one connection, records the request head, answers with `response`.
fn one_shot_http(response: &'static str) -> (u16, std::thread::JoinHandle<String>) {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let handle = std::thread::spawn(move || {
        let Ok((mut stream, _)) = listener.accept() else {
            return String::new();
        };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
        let mut head = Vec::new();
        let mut buf = [0u8; 4096];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            match stream.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
        }
        let _ = stream.write_all(response.as_bytes());
        String::from_utf8_lossy(&head).to_string()
    });
    (port, handle)
}

#[tokio::test]
async fn configured_headers_are_sent_and_never_printed() {
    for kind in ["streamableHttp", "sse"] {
        let (port, head) = one_shot_http(
            "HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
        );
        // (User info in the URL would replace the Authorization header with Basic auth.)
        let url = format!("http://127.0.0.1:{port}/mcp?token=query-secret");
        let pool = remote_pool(
            kind,
            &url,
            json!({"headers": {"X-Api-Key": "header-secret", "Authorization": "Bearer bearer-secret"}}),
        );
        let error = pool
            .list_tools(S)
            .await
            .expect_err("the server answers 503");
        let head = head
            .join()
            .expect("the listener thread")
            .to_ascii_lowercase();
        assert!(head.contains("x-api-key: header-secret"), "{kind}: {head}");
        assert!(
            head.contains("authorization: bearer bearer-secret"),
            "{kind}: {head}"
        );
        let message = error.to_string();
        assert!(
            matches!(error, UpstreamError::Unreachable { .. }),
            "{kind}: {message}"
        );
        assert!(
            message.contains(&format!("127.0.0.1:{port}/mcp")),
            "{kind}: {message}"
        );
        for secret in ["header-secret", "bearer-secret", "query-secret"] {
            assert!(!message.contains(secret), "{kind}: {message}");
        }
    }
}

#[tokio::test]
async fn a_refused_connection_is_unreachable_and_a_silent_server_times_out() {
    let port = free_port();
    let pool = remote_pool(
        "streamableHttp",
        &format!("http://127.0.0.1:{port}/mcp"),
        json!({}),
    );
    let error = pool.list_tools(S).await.expect_err("nothing listens");
    assert!(
        matches!(error, UpstreamError::Unreachable { .. }),
        "{error}"
    );

    // Accepts the connection and never answers.
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind");
    let port = listener.local_addr().expect("addr").port();
    for kind in ["streamableHttp", "sse"] {
        let pool = remote_pool(
            kind,
            &format!("http://127.0.0.1:{port}/mcp"),
            json!({"connectTimeoutMs": 300}),
        );
        let error = pool.list_tools(S).await.expect_err("no answer");
        assert!(
            matches!(
                error,
                UpstreamError::HandshakeTimeout {
                    timeout_ms: 300,
                    ..
                }
            ),
            "{kind}: {error}"
        );
    }
    drop(listener);
}

#[tokio::test]
async fn a_streamable_http_url_given_as_sse_says_what_is_wrong() {
    let server = Everything::start(Mode::StreamableHttp);
    let pool = remote_pool("sse", &server.url(), json!({"connectTimeoutMs": 10000}));
    let error = pool.list_tools(S).await.expect_err("not an SSE endpoint");
    assert!(
        matches!(error, UpstreamError::Unreachable { .. }),
        "{error}"
    );
}
