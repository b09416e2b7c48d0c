#![allow(dead_code)]
//! Helpers of the HTTP tests: `mcpflow serve --http` as a real process on a real port.
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

pub struct Server {
    pub child: Child,
    /// `http://127.0.0.1:PORT/mcp`, as the server printed it.
    pub url: String,
}

impl Server {
    /// `http://127.0.0.1:PORT`.
    pub fn base(&self) -> String {
        self.url.trim_end_matches("/mcp").to_owned()
    }

    /// Resident memory of the server process, in KiB (VmRSS of /proc/PID/status).
    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("/proc/PID/status is readable");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS in /proc/PID/status")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn mcpflow() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_mcpflow"))
}

/// The fixture MCP server, built beside mcpflow by `cargo build --workspace --bins`.
pub fn fixture() -> PathBuf {
    let bin = mcpflow().with_file_name("mcpflow-fixture");
    assert!(
        bin.exists(),
        "{} is missing: run `cargo build --workspace --bins` first (scripts/test does)",
        bin.display()
    );
    bin
}

/// A config of this directory (`tests/NAME`).
pub fn config(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(name)
}

/// The repository root (for `scripts/`).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repo root resolves")
}

/// Starts `mcpflow serve CONFIG --http 127.0.0.1:0 EXTRA…` and reads the address it prints.
pub fn start(config: &Path, extra: &[&str]) -> Server {
    start_with_env(config, extra, &[])
}

/// [`start`] with environment variables for the server (e.g. paths a config interpolates).
pub fn start_with_env(config: &Path, extra: &[&str], env: &[(&str, &str)]) -> Server {
    let mut child = Command::new(mcpflow())
        .envs(env.iter().copied())
        .args([
            "serve",
            config.to_str().expect("utf-8 path"),
            "--http",
            "127.0.0.1:0",
        ])
        .args(extra)
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
    assert!(
        !url.ends_with(":0/mcp"),
        "port 0 must be replaced by the real port: {url}"
    );
    // Keep draining stderr so the server never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    Server { child, url }
}

/// A config file in a temp dir.
pub fn write_config(dir: &Path, yaml: &str) -> PathBuf {
    let path = dir.join("graph.yaml");
    std::fs::write(&path, yaml).expect("config written");
    path
}

/// curl with the response head (`-D -`): (head, body).
pub fn curl(args: &[&str]) -> (String, String) {
    let out = Command::new("curl")
        .args(["-sS", "-D", "-", "--max-time", "20"])
        .args(args)
        .output()
        .expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (head.to_owned(), body.to_owned())
}

/// The status code of a response head.
pub fn status(head: &str) -> u16 {
    head.split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {head:?}"))
}

pub fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

/// The (last) JSON-RPC message of a JSON or SSE response body.
pub fn message(body: &str) -> serde_json::Value {
    let json = body
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .rfind(|d| !d.is_empty())
        .unwrap_or(body.trim());
    serde_json::from_str(json).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}

/// A `tools/call` of the 2026-07-28 era (no `initialize`, the client's context in `_meta`) as
/// raw JSON-RPC over HTTP, with `meta` and `headers` added; returns the JSON-RPC message.
pub async fn stateless_call(
    http: &reqwest::Client,
    url: &str,
    id: u64,
    (name, arguments): (&str, serde_json::Value),
    meta: serde_json::Value,
    headers: &[(&str, &str)],
) -> serde_json::Value {
    let mut context = serde_json::json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "mcpflow-test", "version": "0.0.0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    if let (Some(context), Some(meta)) = (context.as_object_mut(), meta.as_object()) {
        context.extend(meta.clone());
    }
    let body = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": name, "arguments": arguments, "_meta": context}});
    let mut request = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", name);
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let response = request
        .body(body.to_string())
        .send()
        .await
        .expect("tools/call sent");
    message(&response.text().await.expect("response body"))
}
