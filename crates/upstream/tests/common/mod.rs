//! Shared by the integration tests: the fixture server binary, pools over it, process checks.
//!
//! The fixture is another package's binary, which Cargo does not hand to this package's tests.
//! It is looked up next to the test executable (`target/<profile>/mcpflow-fixture`), where
//! `cargo test --workspace` and `cargo build -p mcpflow-fixture` put it; when it is missing or
//! older than the fixture's sources, it is built once with `cargo build -p mcpflow-fixture`.

#![allow(
    dead_code,
    reason = "each test file uses a different part of this module"
)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use indexmap::IndexMap;
use mcpflow_model::McpServer;
use mcpflow_upstream::{PoolOptions, UpstreamPool};
use serde_json::{Map, Value, json};

/// Short enough that a test of a failure does not wait long, long enough for a loaded CI box.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);

pub fn fixture_path() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let exe = std::env::current_exe().expect("the test's own path");
        // target/<profile>/deps/<test> → target/<profile>
        let profile_dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("the test runs from target/<profile>/deps");
        let binary = profile_dir.join(format!("mcpflow-fixture{}", std::env::consts::EXE_SUFFIX));
        if !is_fresh(&binary) {
            build_fixture(profile_dir);
        }
        assert!(
            binary.is_file(),
            "the fixture binary is missing at {}; run `cargo build -p mcpflow-fixture`",
            binary.display()
        );
        binary
    })
}

fn is_fresh(binary: &Path) -> bool {
    let Ok(built) = binary.metadata().and_then(|m| m.modified()) else {
        return false;
    };
    let sources = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixture");
    newest_mtime(&sources) <= built
}

fn newest_mtime(dir: &Path) -> SystemTime {
    let mut newest = SystemTime::UNIX_EPOCH;
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        let modified = if path.is_dir() {
            newest_mtime(&path)
        } else {
            entry
                .metadata()
                .and_then(|m| m.modified())
                .unwrap_or(SystemTime::UNIX_EPOCH)
        };
        newest = newest.max(modified);
    }
    newest
}

fn build_fixture(profile_dir: &Path) {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = std::process::Command::new(cargo);
    command
        .args(["build", "-p", "mcpflow-fixture"])
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    if profile_dir
        .file_name()
        .is_some_and(|name| name == "release")
    {
        command.arg("--release");
    }
    let status = command.status().expect("cargo runs");
    assert!(status.success(), "`cargo build -p mcpflow-fixture` failed");
}

/// An upstream config from JSON, as a config file would spell it.
pub fn server(config: Value) -> McpServer {
    serde_json::from_value(config).expect("a valid mcpServers entry")
}

/// The fixture as a stdio upstream, with extra command-line `args` and config keys.
pub fn fixture(args: &[&str], extra: Value) -> McpServer {
    let mut config = json!({
        "command": fixture_path().to_str().expect("a UTF-8 path"),
        "args": args,
    });
    if let (Some(config), Value::Object(extra)) = (config.as_object_mut(), extra) {
        config.extend(extra);
    }
    server(config)
}

pub fn pool(servers: Vec<(&str, McpServer)>) -> UpstreamPool {
    pool_in(servers, std::env::temp_dir(), CONNECT_TIMEOUT)
}

pub fn pool_in(
    servers: Vec<(&str, McpServer)>,
    base_dir: PathBuf,
    connect_timeout: Duration,
) -> UpstreamPool {
    let servers: IndexMap<String, McpServer> = servers
        .into_iter()
        .map(|(name, server)| (name.to_string(), server))
        .collect();
    let options = PoolOptions {
        connect_timeout,
        ..PoolOptions::default()
    };
    UpstreamPool::with_options(servers, base_dir, options)
}

pub fn args(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("arguments must be an object, got {other}"),
    }
}

/// Whether `pid` is a live process (a zombie waiting to be reaped counts as dead).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name, which may itself contain spaces.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

/// Polls `condition` until it holds; panics with `what` after a generous bound.
pub async fn eventually(what: &str, mut condition: impl AsyncFnMut() -> bool) {
    for _ in 0..400 {
        if condition().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("timed out waiting until {what}");
}

/// The `structuredContent` of a successful call.
pub async fn structured(pool: &UpstreamPool, server: &str, tool: &str, arguments: Value) -> Value {
    let result = pool
        .call_tool(server, tool, args(arguments))
        .await
        .unwrap_or_else(|e| panic!("{tool} failed: {e}"));
    assert!(!result.is_error, "{tool} returned an error: {result:?}");
    result
        .structured_content
        .unwrap_or_else(|| panic!("{tool} returned no structuredContent"))
}

pub async fn count(pool: &UpstreamPool, server: &str) -> u64 {
    structured(pool, server, "count", json!({})).await["count"]
        .as_u64()
        .expect("count is a number")
}

pub async fn fixture_pid(pool: &UpstreamPool, server: &str) -> u32 {
    let pid = structured(pool, server, "pid", json!({})).await["pid"]
        .as_u64()
        .expect("pid is a number");
    u32::try_from(pid).expect("pid fits u32")
}
