//! `/metrics` end to end: after a known sequence of calls (graph tools that succeed and fail,
//! proxied calls a hook lets through or rejects, a script that throws, an unknown tool), the
//! exposition is read by a real Prometheus parser (Python `prometheus_client`, its strict
//! OpenMetrics parser and its classic text parser, installed by `scripts/conformance-clients`)
//! and every value is what the sequence must give. A stdio server's own metrics listener
//! (`telemetry.metrics.address`) is scraped the same way.
mod http_common;

use std::process::Command;

use http_common::repo_root;
use serde_json::{Value, json};

const CONFIG: &str = r#"
version: "1.0"
server: { name: metered, version: "1.0.0" }
mcpServers:
  fx: { command: "{fixture}" }
proxy:
  upstreams:
    fx: { include: ["echo"] }
hooks:
  - id: guard
    method: tools/call
    phase: pre
    upstream: "fx"
    script: |
      (ctx) => ctx.request.params.arguments.block ? {reject: "blocked"} : ctx
tools:
  - name: add1
    inputSchema: { type: object, properties: { a: { type: number } }, required: [a] }
    nodes:
      - { id: entry, type: entry, next: add }
      - { id: add, type: mcp, server: fx, tool: add, args: { a: { expr: "entry.a" }, b: 1 }, next: exit }
      - { id: exit, type: exit }
  - name: throws
    inputSchema: { type: object }
    nodes:
      - { id: entry, type: entry, next: s }
      - { id: s, type: script, source: "() => { throw new Error('no') }", next: exit }
      - { id: exit, type: exit }
"#;

/// [`CONFIG`] and `more`, with the fixture's path, written in `dir`.
fn write(dir: &std::path::Path, more: &str) -> std::path::PathBuf {
    let fixture = http_common::fixture().display().to_string();
    let yaml = format!("{}{more}", CONFIG.replace("{fixture}", &fixture));
    http_common::write_config(dir, &yaml)
}

/// The samples of `url` as the Python parser read them.
fn scrape(url: &str) -> Vec<Value> {
    let out = Command::new(repo_root().join("scripts/conformance-clients"))
        .args(["prometheus", url])
        .output()
        .expect("scripts/conformance-clients runs");
    assert!(
        out.status.success(),
        "the Prometheus parser refused /metrics: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice::<Vec<Value>>(&out.stdout).expect("samples as JSON")
}

/// The value of the sample `name` whose labels include `labels`; 0 when there is none.
fn value(samples: &[Value], name: &str, labels: Value) -> f64 {
    let wanted = labels.as_object().expect("labels object");
    let found: Vec<f64> = samples
        .iter()
        .filter(|s| s["name"] == name)
        .filter(|s| wanted.iter().all(|(k, v)| s["labels"][k] == *v))
        .map(|s| s["value"].as_f64().expect("a number"))
        .collect();
    assert!(
        found.len() <= 1,
        "{name} {labels}: more than one sample: {found:?}"
    );
    found.first().copied().unwrap_or(0.0)
}

async fn call(http: &reqwest::Client, url: &str, id: u64, name: &str, arguments: Value) -> Value {
    http_common::stateless_call(http, url, id, (name, arguments), json!({}), &[]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_after_a_known_sequence() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write(dir.path(), "");
    let server = http_common::start(&config, &[]);
    let http = reqwest::Client::new();
    let url = server.url.as_str();

    for (i, a) in [1, 2, 3].into_iter().enumerate() {
        let r = call(&http, url, i as u64, "add1", json!({"a": a})).await;
        assert_eq!(r["result"]["structuredContent"]["sum"], a + 1, "{r}");
    }
    let r = call(&http, url, 10, "throws", json!({})).await;
    assert_eq!(r["result"]["isError"], true, "{r}");
    for i in 0..2 {
        let r = call(&http, url, 20 + i, "fx__echo", json!({"n": i})).await;
        assert_eq!(r["result"]["structuredContent"]["n"], i, "{r}");
    }
    let r = call(&http, url, 30, "fx__echo", json!({"block": true})).await;
    assert_eq!(
        r["result"]["isError"], true,
        "a rejection is a tool error: {r}"
    );
    let r = call(&http, url, 40, "no_such_tool", json!({})).await;
    assert!(
        r.get("error").is_some() || r["result"]["isError"] == true,
        "{r}"
    );

    // One legacy SSE session held open while scraping.
    let sse = http
        .get(format!("{}/sse", server.base()))
        .send()
        .await
        .expect("GET /sse");
    assert!(sse.status().is_success());

    // And one Streamable HTTP session of the 2025-11-25 era (the calls above were stateless).
    let init = json!({"jsonrpc": "2.0", "id": 99, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "metrics-test", "version": "0.0.0"}}});
    let opened = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(init.to_string())
        .send()
        .await
        .expect("initialize");
    assert!(
        opened.headers().contains_key("mcp-session-id"),
        "{opened:?}"
    );

    let s = scrape(&format!("{}/metrics", server.base()));
    assert_eq!(
        value(
            &s,
            "mcpflow_http_sessions_open",
            json!({"transport": "sse"})
        ),
        1.0
    );
    assert_eq!(
        value(
            &s,
            "mcpflow_http_sessions_open",
            json!({"transport": "streamable"})
        ),
        1.0
    );
    drop(sse);
    let tool = |tool: &str, kind: &str, outcome: &str| {
        value(
            &s,
            "mcpflow_tool_call_duration_seconds_count",
            json!({"tool": tool, "kind": kind, "outcome": outcome}),
        )
    };
    assert_eq!(tool("add1", "graph", "ok"), 3.0);
    assert_eq!(tool("throws", "graph", "tool_error"), 1.0);
    assert_eq!(tool("fx__echo", "proxied", "ok"), 2.0);
    assert_eq!(tool("fx__echo", "proxied", "tool_error"), 1.0);
    let calls_ok = value(
        &s,
        "mcpflow_requests_total",
        json!({"method": "tools/call", "outcome": "ok"}),
    );
    assert_eq!(calls_ok, 5.0, "3 add1 + 2 echo");
    let calls_failed = value(
        &s,
        "mcpflow_requests_total",
        json!({"method": "tools/call", "outcome": "tool_error"}),
    ) + value(
        &s,
        "mcpflow_requests_total",
        json!({"method": "tools/call", "outcome": "error"}),
    );
    assert_eq!(
        calls_failed, 3.0,
        "throws, the rejected echo, the unknown tool"
    );
    // Upstream calls: 3 adds of the graph, 2 echoes that passed the hook (the rejected one
    // never left).
    assert_eq!(
        value(
            &s,
            "mcpflow_upstream_request_duration_seconds_count",
            json!({"upstream": "fx", "method": "tools/call", "outcome": "ok"})
        ),
        5.0
    );
    assert_eq!(
        value(&s, "mcpflow_upstream_up", json!({"upstream": "fx"})),
        1.0
    );
    assert_eq!(
        value(
            &s,
            "mcpflow_upstream_restarts_total",
            json!({"upstream": "fx"})
        ),
        0.0
    );
    assert_eq!(
        value(
            &s,
            "mcpflow_runs_total",
            json!({"tool": "add1", "status": "succeeded"})
        ),
        3.0
    );
    assert_eq!(
        value(
            &s,
            "mcpflow_runs_total",
            json!({"tool": "throws", "status": "failed"})
        ),
        1.0
    );
    let hook = |outcome: &str| {
        value(
            &s,
            "mcpflow_hook_runs_total",
            json!({"hook": "guard", "stage": "pre", "outcome": outcome}),
        )
    };
    assert_eq!(
        hook("passed"),
        2.0,
        "the guard returns the context unchanged"
    );
    assert_eq!(hook("rewrote"), 0.0);
    assert_eq!(hook("rejected"), 1.0);
    assert_eq!(
        value(
            &s,
            "mcpflow_hook_duration_seconds_count",
            json!({"hook": "guard", "outcome": "rejected"})
        ),
        1.0
    );
    assert_eq!(
        value(
            &s,
            "mcpflow_sandbox_failures_total",
            json!({"kind": "exception"})
        ),
        1.0
    );
    assert_eq!(value(&s, "mcpflow_sessions_waiting", json!({})), 0.0);
    // A histogram's buckets are cumulative and end at +Inf with the count.
    let inf = value(
        &s,
        "mcpflow_tool_call_duration_seconds_bucket",
        json!({"tool": "add1", "kind": "graph", "outcome": "ok", "le": "+Inf"}),
    );
    assert_eq!(inf, 3.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_can_be_switched_off() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write(dir.path(), "telemetry: { metrics: { enabled: false } }\n");
    let server = http_common::start(&config, &[]);
    let response = reqwest::get(format!("{}/metrics", server.base()))
        .await
        .expect("GET");
    assert_eq!(response.status().as_u16(), 404);
    assert!(
        response
            .text()
            .await
            .expect("body")
            .contains("metrics are off")
    );
}

/// A stdio server is scraped on an address of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_server_has_its_own_metrics_listener() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write(
        dir.path(),
        "telemetry: { metrics: { address: \"127.0.0.1:0\" } }\n",
    );
    let mut child = tokio::process::Command::new(http_common::mcpflow())
        .args(["serve", config.to_str().expect("utf-8")])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("mcpflow starts");
    use tokio::io::AsyncBufReadExt;
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    let url = loop {
        let line = tokio::time::timeout(std::time::Duration::from_secs(30), lines.next_line())
            .await
            .expect("the metrics address within 30 s")
            .expect("stderr")
            .expect("a line before exit");
        if let Some(rest) = line.strip_prefix("mcpflow: metrics on ") {
            break rest.trim().to_owned();
        }
    };
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    let samples = scrape(&url);
    assert!(
        samples
            .iter()
            .any(|s| s["name"] == "mcpflow_sessions_waiting"),
        "{samples:?}"
    );
    child.kill().await.ok();
}
