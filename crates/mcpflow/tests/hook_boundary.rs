//! The hook boundary through the real gateway: what a guard hook approved is exactly what the
//! upstream receives, and a client cannot switch a guard off by shaping its request. The
//! fixture upstream's `echo` returns the arguments it received.
mod common;

use common::{call, text};
use serde_json::{Value, json};

const GUARDED: &str = r#"
version: "1.0"
server: {name: gw, version: "1.0.0"}
mcpServers:
  fx:
    command: "{fixture}"
proxy:
  upstreams:
    fx:
      include: ["echo"]
hooks:
  - id: guard
    method: tools/call
    phase: pre
    upstream: "fx"
    ON_ERROR
    script: |
      (ctx) => ctx.request.params.arguments.path?.includes("..")
        ? {reject: "no parent paths"}
        : ctx
"#;

fn guarded(on_error: &str) -> String {
    GUARDED.replace("ON_ERROR", on_error)
}

/// The README's guard in front of `echo`. Before the fix, the hook's result came back with
/// keys cut at the NUL and merged: the guard saw `path: "notes.txt"` and the upstream received
/// `{"path": "../../etc/shadow"}`.
#[tokio::test]
async fn a_nul_in_a_key_does_not_walk_past_a_guard() {
    let (_dir, client) = common::serve_yaml(&guarded("onHookError: closed")).await;
    let sent = json!({"path": "notes.txt", "path\u{0}": "../../etc/shadow"});
    let r = call(&client, "fx__echo", sent.clone()).await;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    // Exactly what the client sent: both keys, each with its own value.
    assert_eq!(r.structured_content, Some(sent));
    let r = call(&client, "fx__echo", json!({"path": "../../etc/shadow"})).await;
    assert_eq!(r.is_error, Some(true));
    assert_eq!(text(&r), "no parent paths");
    client.cancel().await.expect("closes");
}

/// Before the fix, a request padded past the hook's memory made the hook fail, and
/// `onHookError: open` let the request through with its `..` path.
///
/// A request nested too deep for the hook is refused by the sandbox the same way
/// (crates/sandbox/tests/attacks.rs, `a_deeply_nested_input_is_refused_before_it_is_copied`); through the gateway it cannot be shown yet, because a
/// request nested about 125 levels deep is dropped unanswered by the JSON-RPC decoder before any
/// hook sees it (the hardening issue's "no answer past ~125 levels").
///
/// Driven through raw pipes (JSON lines in, JSON lines out), so each answer is waited for with a
/// bound of its own.
#[test]
fn a_request_too_large_for_an_open_guard_is_rejected_not_let_through() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = common::write_config(dir.path(), &guarded("onHookError: open"));
    let pad: Vec<Value> = (0..1_000_000).map(|_| json!({})).collect();
    let calls = [
        json!({"path": "../../etc/shadow", "pad": pad}),
        // And so is an integer JavaScript would change on the way through the hook.
        json!({"id": 9_007_199_254_740_993u64}),
        // A request within the limits passes the guard as before.
        json!({"path": "notes.txt"}),
    ];
    let answers = raw_stdio_calls(&path, "fx__echo", &calls);
    let padded = &answers[0];
    assert_eq!(
        padded["isError"],
        json!(true),
        "the padded request went through"
    );
    let message = padded["content"][0]["text"].as_str().unwrap_or_default();
    assert!(message.contains("hook `guard` failed"), "{message}");
    assert!(!message.contains("etc/shadow"), "{message}");
    assert_eq!(
        answers[1]["isError"],
        json!(true),
        "the integer was changed: {}",
        answers[1]
    );
    assert_eq!(
        answers[2]["structuredContent"],
        json!({"path": "notes.txt"})
    );
}

/// `mcpflow serve CONFIG` over plain pipes: initialize, then each call in turn; the `result` of
/// each call. Bounded: a server that does not answer within a minute fails the test.
fn raw_stdio_calls(config: &std::path::Path, tool: &str, calls: &[Value]) -> Vec<Value> {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command, Stdio};
    let mut child = Command::new(common::mcpflow())
        .args(["serve", config.to_str().expect("utf-8")])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("mcpflow starts");
    let mut stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut send = |v: Value| {
        let mut line = serde_json::to_vec(&v).expect("serializes");
        line.push(b'\n');
        stdin.write_all(&line).expect("writes");
        stdin.flush().expect("flushes");
    };
    let answer = |id: u64| -> Value {
        loop {
            let line = rx
                .recv_timeout(std::time::Duration::from_secs(60))
                .unwrap_or_else(|_| panic!("no answer to request {id}"));
            let v: Value = serde_json::from_str(&line).expect("a JSON-RPC line");
            if v["id"] == json!(id) {
                return v["result"].clone();
            }
        }
    };
    send(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "hook-boundary", "version": "0"}}}),
    );
    answer(0);
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let mut results = Vec::new();
    for (i, args) in calls.iter().enumerate() {
        let id = i as u64 + 1;
        send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": args}}));
        results.push(answer(id));
    }
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    results
}

/// `open` still forgives the hook's own faults: its bug, its own timeout.
#[tokio::test]
async fn an_open_hook_is_still_skipped_when_it_fails_by_itself() {
    let script = r#"(ctx) => ctx.request.params.arguments.path?.includes("..")
        ? {reject: "no parent paths"}
        : ctx"#;
    let buggy = r#"(ctx) => {
        const a = ctx.request.params.arguments;
        if (a.spin) for (;;) {}
        if (a.bug) return a.bug.missing.x;
        return a.path?.includes("..") ? {reject: "no parent paths"} : ctx;
      }"#;
    let yaml = GUARDED
        .replace("ON_ERROR", "onHookError: open\n    timeoutMs: 20")
        .replace(script, &buggy.replace('\n', "\n      "));
    assert!(yaml.contains("a.bug.missing"), "{yaml}");
    let (_dir, client) = common::serve_yaml(&yaml).await;
    let r = call(&client, "fx__echo", json!({"bug": 1})).await;
    assert_eq!(
        r.structured_content,
        Some(json!({"bug": 1})),
        "a thrown TypeError is forgiven"
    );
    let r = call(&client, "fx__echo", json!({"spin": true})).await;
    assert_eq!(
        r.structured_content,
        Some(json!({"spin": true})),
        "a timeout is forgiven"
    );
    client.cancel().await.expect("closes");
}

/// Before the fix, a newline in a hook's `console.log` started a log line of its own, at the
/// default level, that looked like mcpflow's. mcpflow's stderr goes to a file here.
#[tokio::test]
async fn a_hook_cannot_forge_a_log_line() {
    use rmcp::ServiceExt;
    use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProtocolVersion};
    use rmcp::transport::TokioChildProcess;

    let guard = r#"(ctx) => ctx.request.params.arguments.path?.includes("..")
        ? {reject: "no parent paths"}
        : ctx"#;
    let forger = r#"(ctx) => { console.log("looks fine\n2026-01-01T00:00:00Z  WARN FORGED: admin logged in\u001b[2J"); }"#;
    let yaml = GUARDED.replace("ON_ERROR", "").replace(guard, forger);
    assert!(yaml.contains("FORGED"), "{yaml}");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = common::write_config(dir.path(), &yaml);
    let log_path = dir.path().join("stderr.log");
    let log = std::fs::File::create(&log_path).expect("log file");
    let mut cmd = tokio::process::Command::new(common::mcpflow());
    cmd.args(["serve", path.to_str().expect("utf-8")]);
    let transport = TokioChildProcess::builder(cmd)
        .stderr(log)
        .spawn()
        .map(|(t, _)| t)
        .expect("mcpflow starts");
    let client = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("mcpflow-tests", "0.0.0"),
    )
    .with_protocol_version(ProtocolVersion::V_2025_11_25)
    .serve(transport)
    .await
    .expect("initialize succeeds");
    let r = call(&client, "fx__echo", json!({"path": "a"})).await;
    assert_eq!(r.structured_content, Some(json!({"path": "a"})));
    client.cancel().await.expect("closes");
    let logged = std::fs::read_to_string(&log_path).expect("log");
    assert!(
        logged.contains("looks fine"),
        "the hook's line is logged: {logged}"
    );
    for line in logged.lines() {
        assert!(
            !line.starts_with("2026-01-01"),
            "forged line: {line:?}\n{logged}"
        );
        assert!(!line.contains('\u{1b}'), "raw escape sequence: {line:?}");
    }
}
