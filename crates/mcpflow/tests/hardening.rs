//! Issue #21, from the outside: a PostgreSQL that accepts connections and never answers, and
//! files that never end, each fail with a clear message within a bound instead of hanging the
//! command or eating the machine's memory.

mod common;

use std::net::TcpListener;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{call, connect, mcpflow, text};
use serde_json::json;

/// Waits for `child` at most `limit`; kills it and fails the test past that.
fn finish_within(mut child: Child, limit: Duration, what: &str) -> Output {
    let start = Instant::now();
    loop {
        if child.try_wait().expect("wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!(
                "{what} still ran after {limit:?}; stderr: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Accepts every connection and never says a word (keeps them open while the test runs).
fn silent_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in listener.incoming().flatten() {
            held.push(conn);
        }
    });
    port
}

/// It used to hang for at least 90 s with no output; the store gives up after 10 s.
#[test]
fn runs_list_against_a_silent_postgres_fails_within_a_bound_and_says_why() {
    let port = silent_server();
    let url = format!("postgres://mcpflow:pw@127.0.0.1:{port}/x");
    let child = Command::new(mcpflow())
        .args(["runs", "list", "--store", &url])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mcpflow runs");
    let out = finish_within(child, Duration::from_secs(40), "runs list");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("127.0.0.1:{port}")), "{err}");
    assert!(err.contains("no answer within 10 s"), "{err}");
    assert!(!err.contains("pw@"), "{err}");
}

/// `serve` with the same store: it must exit with the message, not hang before serving.
#[test]
fn serve_with_a_silent_postgres_fails_within_a_bound() {
    let port = silent_server();
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("graph.yaml");
    std::fs::write(
        &config,
        "version: \"1.0\"\nserver: { name: s, version: \"1\" }\ntools: []\n",
    )
    .expect("write config");
    let url = format!("postgres://127.0.0.1:{port}/x");
    let child = Command::new(mcpflow())
        .arg("serve")
        .arg(&config)
        .args(["--store", &url])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mcpflow serve");
    let out = finish_within(child, Duration::from_secs(40), "serve");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no answer within 10 s"), "{err}");
}

/// Runs `mcpflow ARGS` with its address space capped (the old code read `/dev/zero` until
/// memory ran out; the cap keeps a regression from taking the machine with it).
fn capped(args: &str) -> Output {
    capped_at("4000000", args)
}

/// The same with the cap in KiB.
fn capped_at(kib: &str, args: &str) -> Output {
    let child = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v {kib}; exec '{}' {args}",
            mcpflow().display()
        ))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sh runs");
    finish_within(child, Duration::from_secs(30), args)
}

#[test]
fn validate_of_an_endless_file_names_it_and_the_limit() {
    let out = capped("validate /dev/zero");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/dev/zero"), "{err}");
    assert!(err.contains("limit of 4194304 bytes"), "{err}");
}

#[test]
fn migrate_of_an_endless_file_names_it_and_the_limit() {
    let out = capped("migrate /dev/zero");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/dev/zero"), "{err}");
    assert!(err.contains("limit of 4194304 bytes"), "{err}");
}

/// `$count([1..$n].[1..$n])` with `n = 10000` took a process from 33 MB to 2.2 GB: under a
/// 2 GB address space it used to die; now it stops at its memory budget and says so.
#[test]
fn eval_of_a_product_of_ranges_stops_at_the_memory_budget() {
    let out = capped_at(
        "2000000",
        r#"eval '$count([1..$n].[1..$n])' --bindings '{"n": 10000}'"#,
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("M1001"), "{err}");
    assert!(err.contains("MiB of memory"), "{err}");
}

const HEAVY: &str = r#"
version: "1.0"
server: { name: heavy, version: "1.0.0" }
tools:
  - name: spin
    inputSchema: { type: object }
    nodes:
      - { id: start, type: entry, next: spin }
      - { id: spin, type: transform, transform: { expr: "( $f := function() { $f() }; $f() )" }, next: end }
      - { id: end, type: exit }
  - name: ranges
    inputSchema: { type: object }
    nodes:
      - { id: start, type: entry, next: count }
      - { id: count, type: transform, transform: { expr: "( $n := $.start.n; $count([1..$n].[1..$n]) )" }, next: end }
      - { id: end, type: exit }
  - name: cheap
    inputSchema: { type: object }
    nodes:
      - { id: start, type: entry, next: add }
      - { id: add, type: transform, transform: { expr: "1 + 1" }, next: end }
      - { id: end, type: exit }
"#;

/// JSONata runs on the async runtime, and `serve` over stdio has one thread: an expression
/// that ran its 5 s made every other call wait. Now it runs off the request path.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_heavy_expression_does_not_hold_other_calls_over_stdio() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("graph.yaml");
    std::fs::write(&config, HEAVY).expect("write config");
    let client =
        std::sync::Arc::new(connect(&["serve", config.to_str().expect("utf-8")], None).await);
    let spinning = tokio::spawn({
        let client = client.clone();
        async move { call(&client, "spin", json!({})).await }
    });
    // Let the spin start evaluating (it runs until its 5 s time limit).
    tokio::time::sleep(Duration::from_millis(500)).await;
    let cheap = call(&client, "cheap", json!({})).await;
    assert_eq!(text(&cheap), "2");
    assert!(
        !spinning.is_finished(),
        "the cheap call was answered only after the heavy one"
    );
    let spun = spinning.await.expect("the spin call");
    assert_eq!(spun.is_error, Some(true));
    assert!(text(&spun).contains("D1012"), "{}", text(&spun));

    // The product of ranges stops at the memory budget, and the server goes on.
    let ranges = call(&client, "ranges", json!({"n": 10000})).await;
    assert_eq!(ranges.is_error, Some(true));
    assert!(text(&ranges).contains("M1001"), "{}", text(&ranges));
    assert_eq!(text(&call(&client, "cheap", json!({})).await), "2");
}
