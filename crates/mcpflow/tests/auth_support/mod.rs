//! What the access-control tests share (`auth.rs`, `identity.rs`): keys minted by `mcpflow
//! keys new`, a config with them and a static JWT key, `mcpflow serve --http` with its stderr
//! kept, and one JSON-RPC request over Streamable HTTP.

#![allow(dead_code)]

#[path = "../../../auth/tests/support/mint.rs"]
pub mod mint;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

use mint::SigningKey;
use serde_json::{Value, json};

use crate::http_common::{self, mcpflow};

pub const ISSUER: &str = "https://issuer.test";
pub const AUDIENCE: &str = "mcpflow-auth-test";
pub const SCOPES: [&str; 8] = [
    "tools:list",
    "tools:call",
    "sessions",
    "runs:read",
    "debug",
    "authoring",
    "metrics",
    "admin",
];

/// `mcpflow keys new --name NAME …`: (the key, the config entry it printed).
pub fn mint_key(name: &str, flags: &[&str]) -> (String, String) {
    let out = Command::new(mcpflow())
        .args(["keys", "new", "--name", name])
        .args(flags)
        .output()
        .expect("mcpflow keys new runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    let key = text.lines().next().expect("the key first").to_owned();
    assert!(key.starts_with("mcpf_"), "{text}");
    let entry_start = text.find("  - name:").expect("an auth.keys entry");
    (key, text[entry_start..].to_owned())
}

/// A running server whose stderr is kept (the log test greps it).
pub struct Served {
    child: Child,
    pub base: String,
    pub log: Arc<Mutex<String>>,
}

impl Served {
    /// The server's process id (to signal it).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn serve(config: &std::path::Path, env: &[(&str, &str)]) -> Served {
    serve_with(config, env, &[])
}

/// [`serve`] with more arguments of `mcpflow serve`.
pub fn serve_with(config: &std::path::Path, env: &[(&str, &str)], extra: &[&str]) -> Served {
    let mut child = Command::new(mcpflow())
        .args([
            "serve",
            config.to_str().expect("UTF-8"),
            "--http",
            "127.0.0.1:0",
        ])
        .arg("--authoring")
        .args(extra)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mcpflow starts");
    let mut lines = BufReader::new(child.stderr.take().expect("piped")).lines();
    let log = Arc::new(Mutex::new(String::new()));
    let url = loop {
        let line = lines.next().expect("an address before exit").expect("text");
        log.lock().expect("lock").push_str(&format!("{line}\n"));
        if let Some(rest) = line.strip_prefix("mcpflow: listening on ") {
            break rest.trim().to_owned();
        }
    };
    let kept = log.clone();
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            kept.lock().expect("lock").push_str(&format!("{line}\n"));
        }
    });
    Served {
        child,
        base: url.trim_end_matches("/mcp").to_owned(),
        log,
    }
}

pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub config: std::path::PathBuf,
    /// Scope name (or `globs`) → key.
    pub keys: Vec<(String, String)>,
    pub signer: SigningKey,
}

impl Fixture {
    pub fn key(&self, name: &str) -> &str {
        &self.keys.iter().find(|(n, _)| n == name).expect("minted").1
    }
}

/// The config of the scope tests: `echo`, and `secret_report`, which only some keys see.
pub const TOOLS: &str = r#"tools:
  - name: echo
    description: says back what it got
    inputSchema: { type: object, properties: { text: { type: string } } }
    nodes:
      - { id: entry, type: entry, next: said }
      - { id: said, type: transform, transform: { expr: 'entry' }, next: exit }
      - { id: exit, type: exit }
  - name: secret_report
    description: only some keys may see this
    inputSchema: { type: object }
    nodes:
      - { id: entry, type: entry, next: exit }
      - { id: exit, type: exit }
"#;

/// A key per scope (named by its scope), `globs` (`echo*` only), and the scope tests' tools.
pub fn fixture() -> Fixture {
    fixture_with(&[], TOOLS)
}

/// [`fixture`]'s keys plus `extra` (name → scopes; named by its name), a JWT issuer whose
/// tokens' `email` claim is copied into the caller, and `rest` of the config after `auth:`
/// (its `tools:` and any other top-level keys).
pub fn fixture_with(extra: &[(&str, &[&str])], rest: &str) -> Fixture {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut entries = String::new();
    let mut keys = Vec::new();
    for scope in SCOPES {
        let (key, entry) = mint_key(&format!("only-{scope}"), &["--scope", scope]);
        entries.push_str(&entry);
        entries.push('\n');
        keys.push((scope.to_owned(), key));
    }
    for (name, scopes) in extra {
        let flags: Vec<&str> = scopes.iter().flat_map(|s| ["--scope", s]).collect();
        let (key, entry) = mint_key(name, &flags);
        entries.push_str(&entry);
        entries.push('\n');
        keys.push(((*name).to_owned(), key));
    }
    let (key, entry) = mint_key(
        "globs",
        &[
            "--scope",
            "tools:list",
            "--scope",
            "tools:call",
            "--tool",
            "echo*",
        ],
    );
    entries.push_str(&entry);
    keys.push(("globs".to_owned(), key));
    let signer = SigningKey::rsa("static");
    let pem: String = signer
        .public_pem
        .lines()
        .map(|l| format!("      {l}\n"))
        .collect();
    // `rest` may bring servers of its own.
    let servers = if rest.contains("mcpServers:") {
        ""
    } else {
        "mcpServers: {}\n"
    };
    let yaml = format!(
        r#"version: "1.0"
server: {{ name: auth-test, version: "1.0.0" }}
{servers}auth:
  keys:
{entries}
  jwt:
    issuer: {ISSUER}
    audience: {AUDIENCE}
    claims: [email]
    publicKey: |
{pem}
{rest}"#
    );
    let config = dir.path().join("auth.yaml");
    std::fs::write(&config, yaml).expect("config written");
    Fixture {
        dir,
        config,
        keys,
        signer,
    }
}

pub fn stateless_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "auth-test", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

pub async fn mcp(
    http: &reqwest::Client,
    base: &str,
    credential: Option<&str>,
    method: &str,
    params: Value,
) -> (u16, String, Value) {
    let (version, params) = if method == "initialize" {
        (
            "2025-11-25",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "auth-test", "version": "0"}}),
        )
    } else {
        let mut p = params;
        p["_meta"] = stateless_meta();
        ("2026-07-28", p)
    };
    let name = params["name"].as_str().map(str::to_owned);
    let mut request = http
        .post(format!("{base}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", version)
        .header("mcp-method", method)
        .body(json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string());
    if let Some(name) = name {
        request = request.header("mcp-name", name);
    }
    if let Some(c) = credential {
        request = request.bearer_auth(c);
    }
    let response = request.send().await.expect("sent");
    let status = response.status().as_u16();
    let challenge = challenge(&response);
    let text = response.text().await.expect("body");
    let message = http_common::message(&text);
    (status, challenge, message)
}

pub fn challenge(response: &reqwest::Response) -> String {
    response
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().expect("ASCII").to_owned())
        .unwrap_or_default()
}

/// The fixture upstream over Streamable HTTP on a free port: the process (killed when
/// dropped) and its URL.
pub struct HttpFixture {
    child: Child,
    pub url: String,
}

impl Drop for HttpFixture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn fixture_over_http() -> HttpFixture {
    let mut child = Command::new(http_common::fixture())
        .args(["--http", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the fixture starts");
    let mut lines = BufReader::new(child.stderr.take().expect("piped")).lines();
    let url = loop {
        let line = lines.next().expect("an address before exit").expect("text");
        if let Some(rest) = line.strip_prefix("fixture: listening on ") {
            break rest.trim().to_owned();
        }
    };
    std::thread::spawn(move || for _ in lines.map_while(Result::ok) {});
    HttpFixture { child, url }
}

/// `mcpflow serve CONFIG` over stdio with `MCPFLOW_TOKEN`, initialized: requests written one
/// line each, answers read back by id. Killed when dropped.
pub struct StdioClient {
    child: Child,
    stdin: std::process::ChildStdin,
    answers: Box<dyn Iterator<Item = Value> + Send>,
}

impl StdioClient {
    pub fn start(config: &std::path::Path, token: &str) -> StdioClient {
        let mut child = Command::new(mcpflow())
            .args(["serve", config.to_str().expect("UTF-8")])
            .env("MCPFLOW_TOKEN", token)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("mcpflow starts");
        let stdin = child.stdin.take().expect("piped");
        let answers = BufReader::new(child.stdout.take().expect("piped"))
            .lines()
            .map_while(Result::ok)
            .filter_map(|l| serde_json::from_str::<Value>(&l).ok());
        let mut client = StdioClient {
            child,
            stdin,
            answers: Box::new(answers),
        };
        client.send(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "auth-test", "version": "0"}}}),
        );
        client.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        client
    }

    pub fn send(&mut self, message: Value) {
        use std::io::Write;
        writeln!(self.stdin, "{message}").expect("written");
    }

    /// Sends `tools/call` of `tool` as request `id`.
    pub fn call(&mut self, id: u64, tool: &str, arguments: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                         "params": {"name": tool, "arguments": arguments}}));
    }

    /// The answer to request `id` (answers to other ids before it are skipped).
    pub fn answer(&mut self, id: u64) -> Value {
        self.answers
            .find(|m| m["id"] == id)
            .unwrap_or_else(|| panic!("no answer to request {id}"))
    }
}

impl Drop for StdioClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
