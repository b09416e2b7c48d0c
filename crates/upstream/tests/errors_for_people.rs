//! An upstream's failure reads as one line a person can act on: which upstream, what happened
//! (refused, an HTTP status, exited with its stderr), what to check; never rmcp's wrapper
//! texts. Against a real closed port, a real HTTP server answering 404, and a real command
//! that exits.

mod common;

use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Checks the shape every upstream failure message must have.
fn one_line_for_people(message: &str, server: &str) {
    assert!(!message.contains('\n'), "one line: {message}");
    assert!(
        message.contains(&format!("upstream `{server}`")),
        "{message}"
    );
    assert!(message.contains("check"), "says what to check: {message}");
    for wrapper in [
        "rmcp::",
        "Transport [",
        "Send message error",
        "Client error",
    ] {
        assert!(!message.contains(wrapper), "{wrapper} in: {message}");
    }
}

#[tokio::test]
async fn a_refused_connection_says_so_in_one_line() {
    // A port that was free a moment ago: nothing listens there now.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("address").port()
    };
    let server = common::server(json!({
        "type": "streamableHttp",
        "url": format!("http://127.0.0.1:{port}/mcp?token=secret"),
    }));
    let pool = common::pool(vec![("remote", server)]);
    let error = pool
        .list_tools("remote")
        .await
        .expect_err("nothing listens");
    let message = error.to_string();
    one_line_for_people(&message, "remote");
    assert!(message.contains("connection refused"), "{message}");
    assert!(!message.contains("secret"), "{message}");
    pool.shutdown().await;
}

#[tokio::test]
async fn an_http_status_says_which_and_what_to_check() {
    // A real HTTP server that knows no MCP endpoint: every request is a 404.
    let (port, server_task) = plain_http_404().await;
    let server = common::server(json!({
        "type": "streamableHttp",
        "url": format!("http://127.0.0.1:{port}/wrong"),
    }));
    let pool = common::pool(vec![("remote", server)]);
    let error = pool.list_tools("remote").await.expect_err("a 404");
    let message = error.to_string();
    one_line_for_people(&message, "remote");
    assert!(message.contains("HTTP 404"), "{message}");
    assert!(message.contains("path"), "{message}");
    pool.shutdown().await;
    server_task.abort();
}

/// A real plain-HTTP listener that answers every request with a 404, and never closes.
async fn plain_http_404() -> (u16, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("address").port();
    let task = tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 16 * 1024];
                let _ = tokio::time::timeout(Duration::from_secs(5), socket.read(&mut buf)).await;
                let _ = socket
                    .write_all(
                        b"HTTP/1.1 404 Not Found\r\ncontent-type: text/plain\r\n\
                          content-length: 9\r\nconnection: close\r\n\r\nnot found",
                    )
                    .await;
            });
        }
    });
    (port, task)
}

#[tokio::test]
async fn https_to_a_plain_http_server_is_a_tls_failure() {
    let (port, task) = plain_http_404().await;
    let server = common::server(json!({
        "type": "streamableHttp",
        "url": format!("https://127.0.0.1:{port}/mcp"),
    }));
    let pool = common::pool(vec![("remote", server)]);
    let error = pool.list_tools("remote").await.expect_err("no TLS there");
    let message = error.to_string();
    one_line_for_people(&message, "remote");
    assert!(message.contains("TLS"), "{message}");
    pool.shutdown().await;
    task.abort();
}

#[tokio::test]
async fn a_server_that_never_answers_times_out_in_one_line() {
    // Accepts connections and reads, but never answers.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("address").port();
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let server = common::server(json!({
        "type": "streamableHttp",
        "url": format!("http://127.0.0.1:{port}/mcp"),
        "connectTimeoutMs": 300,
    }));
    let pool = common::pool(vec![("slow", server)]);
    let error = pool.list_tools("slow").await.expect_err("no answer");
    let message = error.to_string();
    one_line_for_people(&message, "slow");
    assert!(message.contains("300 ms"), "{message}");
    pool.shutdown().await;
    task.abort();
}

#[tokio::test]
async fn a_command_that_exits_gives_its_status_and_stderr_on_the_same_line() {
    let server = common::server(json!({
        "command": "sh",
        "args": ["-c", "echo 'starting' >&2; echo 'API_KEY is not set' >&2; exit 3"],
    }));
    let pool = common::pool(vec![("tool-server", server)]);
    let error = pool.list_tools("tool-server").await.expect_err("it exits");
    let message = error.to_string();
    one_line_for_people(&message, "tool-server");
    assert!(message.contains("code 3"), "{message}");
    assert!(
        message.contains("starting | API_KEY is not set"),
        "{message}"
    );
    // The whole tail is still there for whoever wants it.
    assert!(error.stderr_tail().is_some_and(|t| t.contains("API_KEY")));
    pool.shutdown().await;
}
