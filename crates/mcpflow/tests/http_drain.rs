//! Stopping behind a load balancer (issue #19, graceful rollout): on SIGTERM `/readyz` turns
//! unready while everything is still served for `drainDelayMs`, then the listener closes and
//! calls in flight are answered, within `shutdownTimeoutMs`.
mod http_common;

use std::process::Command;
use std::time::{Duration, Instant};

use http_common::{Server, start, stateless_call, write_config};
use serde_json::json;

fn server(http: &str) -> (tempfile::TempDir, Server) {
    let yaml = format!(
        r#"
version: "1.0"
server: {{ name: "drain", version: "1.0.0" }}
http: {http}
mcpServers:
  fixture: {{ command: "{fixture}" }}
tools:
  - name: "add"
    inputSchema: {{ type: object }}
    nodes:
      - {{ id: entry, type: entry, next: sum }}
      - {{ id: sum, type: transform, transform: {{ expr: "1 + 1" }}, next: exit }}
      - {{ id: exit, type: exit }}
  - name: "nap"
    inputSchema: {{ type: object, properties: {{ ms: {{ type: integer }} }}, required: [ms] }}
    nodes:
      - {{ id: entry, type: entry, next: sleep }}
      - {{ id: sleep, type: mcp, server: fixture, tool: sleep, args: {{ ms: {{ expr: "entry.ms" }} }}, next: exit }}
      - {{ id: exit, type: exit }}
"#,
        fixture = http_common::fixture().display()
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let config = write_config(dir.path(), &yaml);
    let server = start(&config, &[]);
    (dir, server)
}

fn sigterm(server: &Server) {
    let status = Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
}

/// A fresh connection each time, as a balancer's health check or a new client opens.
fn fresh() -> reqwest::Client {
    reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .timeout(Duration::from_secs(20))
        .build()
        .expect("client")
}

async fn readyz(base: &str) -> Result<(u16, String), reqwest::Error> {
    let response = fresh().get(format!("{base}/readyz")).send().await?;
    let status = response.status().as_u16();
    Ok((status, response.text().await.unwrap_or_default()))
}

/// Waits for the process to exit, polling, for at most `limit`.
fn exits_within(server: &mut Server, limit: Duration) -> Option<std::process::ExitStatus> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if let Some(status) = server.child.try_wait().expect("try_wait") {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_turns_unready_first_serves_through_the_drain_and_finishes_calls_in_flight() {
    let (_dir, mut server) = server("{ drainDelayMs: 3000, shutdownTimeoutMs: 20000 }");
    let (url, base) = (server.url.clone(), server.base());
    assert_eq!(readyz(&base).await.expect("readyz").0, 200);

    // A call in flight across the whole stop: 4 s in the fixture.
    let in_flight = tokio::spawn({
        let url = url.clone();
        async move {
            stateless_call(
                &fresh(),
                &url,
                1,
                ("nap", json!({"ms": 4000})),
                json!({}),
                &[],
            )
            .await
        }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    sigterm(&server);
    tokio::time::sleep(Duration::from_millis(200)).await;

    // Draining: unready, yet a new connection is still accepted and served.
    let (status, body) = readyz(&base).await.expect("readyz while draining");
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("shutting down"), "{body}");
    let call = stateless_call(&fresh(), &url, 2, ("add", json!({})), json!({}), &[]).await;
    assert_eq!(call["result"]["content"][0]["text"], "2", "{call}");

    // After the drain the listener is closed: new connections are refused.
    let mut refused = false;
    for _ in 0..100 {
        if readyz(&base).await.is_err() {
            refused = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(refused, "the listener still accepts after the drain delay");

    // The call that was in flight when the signal came is answered, then the process exits.
    let answer = in_flight.await.expect("the call in flight");
    assert_eq!(answer["result"]["isError"], json!(false), "{answer}");
    let status = exits_within(&mut server, Duration::from_secs(20)).expect("exits");
    assert!(status.success(), "exit status after SIGTERM: {status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_past_the_shutdown_timeout_does_not_hold_the_process() {
    let (_dir, mut server) = server("{ shutdownTimeoutMs: 500 }");
    let url = server.url.clone();
    // 60 s in the fixture: without the timeout the server would wait for it.
    let stuck = tokio::spawn(async move {
        stateless_call(
            &fresh(),
            &url,
            1,
            ("nap", json!({"ms": 60000})),
            json!({}),
            &[],
        )
        .await
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    sigterm(&server);
    let status = exits_within(&mut server, Duration::from_secs(30))
        .expect("the process exits once the shutdown timeout has passed, not after the call");
    assert!(status.success(), "exit status after SIGTERM: {status}");
    stuck.abort();
}
