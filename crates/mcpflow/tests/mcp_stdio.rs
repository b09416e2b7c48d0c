//! mcpflow as an MCP server over a real stdio pipe, driven by an rmcp client.
mod common;

use common::{call, connect, example, text};
use serde_json::json;

#[tokio::test]
async fn initialize_carries_title_and_instructions() {
    let path = example("loop_example.yaml");
    let client = connect(&["serve", path.to_str().expect("utf-8")], None).await;
    let info = client.peer_info().expect("server info");
    assert_eq!(
        info.server_info.as_ref().expect("serverInfo").name,
        "loopExample"
    );
    assert_eq!(
        info.server_info
            .as_ref()
            .expect("serverInfo")
            .title
            .as_deref(),
        Some("Loop Example")
    );
    assert!(
        info.instructions
            .as_deref()
            .unwrap_or_default()
            .contains("loops")
    );
    client.cancel().await.expect("closes");
}

#[tokio::test]
async fn title_defaults_to_the_name() {
    let path = example("test_minimal.yaml");
    let client = connect(&["-g", path.to_str().expect("utf-8")], None).await;
    let info = client.peer_info().expect("server info");
    assert_eq!(
        info.server_info
            .as_ref()
            .expect("serverInfo")
            .title
            .as_deref(),
        Some("testMinimal")
    );
    assert_eq!(info.instructions, None);
    client.cancel().await.expect("closes");
}

#[tokio::test]
async fn tools_keep_their_full_schemas() {
    let path = example("file_utils.yaml");
    let client = connect(&["serve", path.to_str().expect("utf-8")], None).await;
    let tools = client.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| &*t.name).collect();
    assert_eq!(names, ["count_files", "sum_file_sizes"]);
    let count = &tools[0];
    assert_eq!(count.input_schema["required"], json!(["directory"]));
    assert_eq!(
        count.input_schema["properties"]["directory"]["description"],
        "The directory path to count files in"
    );
    let out = count.output_schema.as_ref().expect("outputSchema kept");
    assert_eq!(out["properties"]["count"]["type"], "number");
    client.cancel().await.expect("closes");
}

#[tokio::test]
async fn examples_give_their_results_over_mcp() {
    let path = example("loop_example.yaml");
    let client = connect(&["serve", path.to_str().expect("utf-8")], None).await;
    for (n, sum) in [(3, 6), (1, 1), (0, 1), (4, 10), (5, 15)] {
        let r = call(&client, "sum_to_n", json!({"n": n})).await;
        assert_eq!(r.is_error, Some(false));
        assert_eq!(r.structured_content, Some(json!({"sum": sum})));
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&text(&r)).ok(),
            Some(json!({"sum": sum}))
        );
    }
    client.cancel().await.expect("closes");

    let path = example("switch_example.yaml");
    let client = connect(&["serve", path.to_str().expect("utf-8")], None).await;
    for (v, want) in [
        (json!(15), "high"),
        (json!(5), "low"),
        (json!(10), "low"),
        (json!(0), "zero_or_negative"),
        (json!(-5), "zero_or_negative"),
    ] {
        let r = call(&client, "test_switch", json!({"value": v})).await;
        assert_eq!(r.structured_content, Some(json!({"result": want})), "{v}");
    }
    client.cancel().await.expect("closes");
}

#[tokio::test]
async fn wrong_arguments_are_reported_and_the_server_keeps_serving() {
    let path = example("switch_example.yaml");
    let client = connect(&["serve", path.to_str().expect("utf-8")], None).await;
    // "15" is a string: the schema says number.
    let r = call(&client, "test_switch", json!({"value": "15"})).await;
    assert_eq!(r.is_error, Some(true));
    assert!(text(&r).contains("at /value"), "{}", text(&r));
    let r = call(&client, "test_switch", json!({})).await;
    assert_eq!(r.is_error, Some(true));
    assert!(
        text(&r).contains("value"),
        "names the missing property: {}",
        text(&r)
    );
    let r = call(&client, "test_switch", json!({"value": 11})).await;
    assert_eq!(r.structured_content, Some(json!({"result": "high"})));
    // An unknown tool is a protocol error, and the connection stays up.
    let params = rmcp::model::CallToolRequestParams::new("nope");
    let err = client.call_tool(params).await.expect_err("unknown tool");
    assert!(err.to_string().contains("test_switch"), "{err}");
    let r = call(&client, "test_switch", json!({"value": 1})).await;
    assert_eq!(r.structured_content, Some(json!({"result": "low"})));
    client.cancel().await.expect("closes");
}

#[tokio::test]
async fn concurrent_calls_on_one_connection() {
    let path = example("loop_example.yaml");
    let client =
        std::sync::Arc::new(connect(&["serve", path.to_str().expect("utf-8")], None).await);
    let mut tasks = Vec::new();
    for n in 1..=20u64 {
        let client = client.clone();
        tasks.push(tokio::spawn(async move {
            (n, call(&client, "sum_to_n", json!({"n": n})).await)
        }));
    }
    for t in tasks {
        let (n, r) = t.await.expect("joins");
        assert_eq!(r.structured_content, Some(json!({"sum": n * (n + 1) / 2})));
    }
}

/// `mcpflow serve CONFIG EXTRA…` on raw pipes, driven line by line (no SDK client: these
/// tests send what an SDK never would).
struct Raw {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    stderr: std::sync::mpsc::Receiver<String>,
}

impl Raw {
    fn start(extra: &[&str]) -> Raw {
        use std::io::BufRead;
        use std::process::{Command, Stdio};
        let path = example("loop_example.yaml");
        let mut child = Command::new(common::mcpflow())
            .args(["serve", path.to_str().expect("utf-8")])
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("mcpflow starts");
        let (tx, stderr) = std::sync::mpsc::channel();
        let err = child.stderr.take().expect("stderr piped");
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(err).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let stdin = child.stdin.take();
        Raw {
            child,
            stdin,
            stderr,
        }
    }

    /// stdout, one line at a time, on a channel (read on a thread of its own).
    fn lines(&mut self) -> std::sync::mpsc::Receiver<String> {
        use std::io::BufRead;
        let out = self.child.stdout.take().expect("stdout piped");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        rx
    }

    fn send(&mut self, line: &str) {
        use std::io::Write;
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line.as_bytes()).expect("written");
        stdin.write_all(b"\n").expect("written");
        stdin.flush().expect("flushed");
    }

    fn initialize(&mut self) {
        self.send(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"}}})
            .to_string(),
        );
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string());
    }

    fn rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The next JSON-RPC message on stdout (within 20 s).
fn next_message(lines: &std::sync::mpsc::Receiver<String>) -> serde_json::Value {
    let line = lines
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("an answer within 20 s");
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
}

/// A message over the 16 MiB line limit, or nested deeper than serde_json reads, is answered
/// with a JSON-RPC error carrying its id (null when it has none), and the server goes on.
#[test]
fn too_large_or_too_deep_requests_are_answered_and_serving_goes_on() {
    let mut server = Raw::start(&[]);
    let lines = server.lines();
    server.initialize();
    assert_eq!(next_message(&lines)["id"], 0);

    let pad = "x".repeat(17 * 1024 * 1024);
    let large = format!(
        r#"{{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{{"name":"sum_to_n","arguments":{{"n":1,"pad":"{pad}"}}}}}}"#
    );
    server.send(&large);
    let answer = next_message(&lines);
    assert_eq!(answer["id"], 5, "{answer}");
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("larger than")),
        "{answer}"
    );

    // The id after the padding, and one that is a string.
    let large = format!(
        r#"{{"jsonrpc":"2.0","method":"tools/list","params":{{"pad":"{pad}"}},"id":"late"}}"#
    );
    server.send(&large);
    assert_eq!(next_message(&lines)["id"], "late");

    // No id to be found: null, as JSON-RPC says.
    server.send(&format!(
        r#"{{"jsonrpc":"2.0","method":"tools/list","params":{{"pad":"{pad}"}}}}"#
    ));
    let answer = next_message(&lines);
    assert!(answer["id"].is_null(), "{answer}");
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    drop(pad);

    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{{"name":"sum_to_n","arguments":{{"n":1,"deep":{}1{}}}}}}}"#,
        "[".repeat(200),
        "]".repeat(200)
    );
    server.send(&deep);
    let answer = next_message(&lines);
    assert_eq!(answer["id"], 6, "{answer}");
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("nested deeper")),
        "{answer}"
    );

    // Still serving.
    server.send(
        &json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "sum_to_n", "arguments": {"n": 4}}})
        .to_string(),
    );
    let answer = next_message(&lines);
    assert_eq!(answer["id"], 7, "{answer}");
    assert_eq!(
        answer["result"]["structuredContent"],
        json!({"sum": 10}),
        "{answer}"
    );
}

/// A client that keeps sending but never reads its answers: mcpflow stops reading stdin once
/// its outgoing queue is full (memory stays bounded), and after `--stdio-write-timeout` without
/// a message taken it closes the connection and says why.
#[test]
fn a_client_that_stops_reading_is_held_back_then_closed() {
    let mut server = Raw::start(&["--stdio-write-timeout", "3"]);
    // stdout is kept open and never read.
    let _stdout = server.child.stdout.take();
    server.initialize();
    let mut stdin = server.stdin.take().expect("stdin");
    let flood = std::thread::spawn(move || {
        use std::io::Write;
        let mut sent = 0u64;
        loop {
            let line =
                json!({"jsonrpc": "2.0", "id": sent + 1, "method": "tools/list"}).to_string();
            if stdin.write_all(line.as_bytes()).is_err() || stdin.write_all(b"\n").is_err() {
                return sent;
            }
            sent += 1;
        }
    });
    let start = std::time::Instant::now();
    let mut peak = 0;
    let status = loop {
        if let Some(status) = server.child.try_wait().expect("waits") {
            break status;
        }
        if let Some(rss) = server.rss_kib() {
            peak = peak.max(rss);
        }
        assert!(
            peak < 150 * 1024,
            "RSS {peak} KiB: the answers nobody reads pile up in memory"
        );
        assert!(
            start.elapsed() < std::time::Duration::from_secs(40),
            "still serving a client that reads nothing after 40 s (RSS {peak} KiB)"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let sent = flood.join().expect("the writer ends when mcpflow does");
    let mut said = String::new();
    while let Ok(line) = server
        .stderr
        .recv_timeout(std::time::Duration::from_secs(5))
    {
        said.push_str(&line);
        said.push('\n');
    }
    assert!(!status.success(), "exit {status}: {said}");
    assert!(said.contains("the stdio client stopped reading"), "{said}");
    assert!(said.contains("--stdio-write-timeout"), "{said}");
    eprintln!(
        "{sent} requests written, peak RSS {peak} KiB, closed after {:?}",
        start.elapsed()
    );
}
