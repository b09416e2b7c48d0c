//! `mcpflow serve --http`: Streamable HTTP over a real socket, spoken to with curl.
mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `mcpflow serve CONFIG --http 127.0.0.1:0` and reads the address it prints.
fn start(config: &std::path::Path) -> Server {
    let mut child = Command::new(common::mcpflow())
        .args([
            "serve",
            config.to_str().expect("utf-8"),
            "--http",
            "127.0.0.1:0",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mcpflow starts");
    let stderr = child.stderr.take().expect("stderr piped");
    let mut lines = BufReader::new(stderr).lines();
    let url = loop {
        let line = lines
            .next()
            .expect("mcpflow prints its address before exiting")
            .expect("stderr is text");
        if let Some(rest) = line.strip_prefix("mcpflow: listening on ") {
            break rest.trim().to_owned();
        }
    };
    // Keep draining stderr so the server never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    Server { child, url }
}

fn curl(args: &[&str]) -> (String, String) {
    let out = Command::new("curl")
        .args(["-sS", "-D", "-", "--max-time", "10"])
        .args(args)
        .output()
        .expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (head.to_owned(), body.to_owned())
}

fn post(url: &str, session: Option<&str>, body: &Value) -> (String, String) {
    let mut args = vec![
        "-X".to_owned(),
        "POST".to_owned(),
        url.to_owned(),
        "-H".to_owned(),
        "Content-Type: application/json".to_owned(),
        "-H".to_owned(),
        "Accept: application/json, text/event-stream".to_owned(),
        "-H".to_owned(),
        "MCP-Protocol-Version: 2025-11-25".to_owned(),
        "--data".to_owned(),
        body.to_string(),
    ];
    if let Some(id) = session {
        args.push("-H".to_owned());
        args.push(format!("Mcp-Session-Id: {id}"));
    }
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    curl(&refs)
}

/// The JSON-RPC message of a JSON or SSE response body.
fn message(body: &str) -> Value {
    let json = body
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .rfind(|d| !d.is_empty())
        .unwrap_or(body.trim());
    serde_json::from_str(json).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

#[test]
fn a_graph_tool_answers_over_streamable_http() {
    let server = start(&common::example("loop_example.yaml"));
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "curl-test", "version": "0"}}});
    let (head, body) = post(&server.url, None, &init);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}\n{body}");
    let reply = message(&body);
    assert_eq!(reply["result"]["serverInfo"]["name"], "loopExample");
    let session = header(&head, "mcp-session-id")
        .expect("a session id")
        .to_owned();

    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (head, _) = post(&server.url, Some(&session), &initialized);
    assert!(head.starts_with("HTTP/1.1 202"), "{head}");

    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "sum_to_n", "arguments": {"n": 4}}});
    let (head, body) = post(&server.url, Some(&session), &call);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}\n{body}");
    assert_eq!(
        message(&body)["result"]["structuredContent"],
        json!({"sum": 10})
    );
}

#[test]
fn health_readiness_and_dns_rebinding() {
    let server = start(&common::example("test_minimal.yaml"));
    let base = server.url.trim_end_matches("/mcp").to_owned();
    let (head, body) = curl(&[&format!("{base}/healthz")]);
    assert!(
        head.starts_with("HTTP/1.1 200") && body.starts_with("ok"),
        "{head}{body}"
    );
    let (head, _) = curl(&[&format!("{base}/readyz")]);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    // A foreign Host (a DNS-rebinding page) is refused.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "curl-test", "version": "0"}}});
    let (head, _) = curl(&[
        "-X",
        "POST",
        &server.url,
        "-H",
        "Host: evil.example",
        "-H",
        "Content-Type: application/json",
        "-H",
        "Accept: application/json, text/event-stream",
        "--data",
        &init.to_string(),
    ]);
    assert!(head.starts_with("HTTP/1.1 403"), "{head}");
}

#[test]
fn sigterm_stops_the_server_cleanly() {
    let mut server = start(&common::example("test_minimal.yaml"));
    let pid = server.child.id().to_string();
    let status = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill runs");
    assert!(status.success());
    let code = server.child.wait().expect("exits");
    assert!(code.success(), "exit status after SIGTERM: {code}");
}
