//! Shared by the integration tests: the fixture upstream binary, a served config (loaded and
//! compiled by the real loader and engine, its upstream the real fixture over a pipe), and
//! calls of the built-in tools.

#![allow(
    dead_code,
    reason = "each test file uses a different part of this module"
)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::SystemTime;

use mcpflow_authoring::{Authoring, AuthoringConfig, Served};
use mcpflow_engine::Engine;
use mcpflow_upstream::UpstreamPool;
use rmcp::model::CallToolResult;
use serde_json::{Map, Value};

/// The fixture server binary next to the test executable, built once when missing or older
/// than its sources.
pub fn fixture_path() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let exe = std::env::current_exe().expect("the test's own path");
        let profile_dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("the test runs from target/<profile>/deps");
        let binary = profile_dir.join(format!("mcpflow-fixture{}", std::env::consts::EXE_SUFFIX));
        if !is_fresh(&binary) {
            let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
            let status = std::process::Command::new(cargo)
                .args(["build", "-p", "mcpflow-fixture"])
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .status()
                .expect("cargo runs");
            assert!(status.success(), "`cargo build -p mcpflow-fixture` failed");
        }
        assert!(
            binary.is_file(),
            "the fixture binary is missing at {}",
            binary.display()
        );
        binary
    })
}

fn is_fresh(binary: &Path) -> bool {
    let Ok(built) = binary.metadata().and_then(|m| m.modified()) else {
        return false;
    };
    newest(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixture")) <= built
}

fn newest(dir: &Path) -> SystemTime {
    let mut newest_seen = SystemTime::UNIX_EPOCH;
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        let modified = if path.is_dir() {
            newest(&path)
        } else {
            entry
                .metadata()
                .and_then(|m| m.modified())
                .unwrap_or(SystemTime::UNIX_EPOCH)
        };
        newest_seen = newest_seen.max(modified);
    }
    newest_seen
}

/// A config with the fixture as upstream `demo`, the given tools (YAML list items, indented
/// by two spaces) and `extra` top-level YAML.
pub fn config_yaml(tools: &[&str], extra: &str) -> String {
    let mut yaml = format!(
        "version: \"1.0\"\nserver: {{name: authoring-test, version: \"1\"}}\nmcpServers:\n  demo:\n    command: \"{}\"\n{extra}tools:\n",
        fixture_path().display()
    );
    if tools.is_empty() {
        yaml = yaml.replace("tools:\n", "tools: []\n");
    }
    for t in tools {
        yaml.push_str(&item(t));
    }
    yaml
}

/// A tool's YAML as an item of the `tools:` list.
pub fn item(tool: &str) -> String {
    let mut out = String::new();
    for (i, line) in tool.lines().enumerate() {
        out.push_str(if i == 0 { "  - " } else { "    " });
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Loads and compiles `yaml` as `mcpflow serve` does (the loader, then the engine).
pub fn load(yaml: &str, dir: &Path) -> (mcpflow_config::Loaded, Engine) {
    let path = dir.join("config.yaml");
    std::fs::write(&path, yaml).expect("config written");
    mcpflow_config::Loader::new()
        .read(&path)
        .and_then(|draft| {
            draft.compile(
                |config, base_dir| {
                    let pool = UpstreamPool::new(config.mcp_servers.clone(), base_dir.into());
                    Engine::new(config, pool)
                },
                mcpflow_engine::check,
            )
        })
        .unwrap_or_else(|e| panic!("the test config does not load:\n{e}\n{yaml}"))
}

/// The authoring tools over a config, with these flags.
pub struct Setup {
    pub authoring: Authoring,
    pub engine: Engine,
    _dir: tempfile::TempDir,
}

pub fn setup(tools: &[&str], settings: AuthoringConfig) -> Setup {
    let dir = tempfile::tempdir().expect("temp dir");
    let (loaded, engine) = load(&config_yaml(tools, ""), dir.path());
    let served = Served {
        engine: engine.clone(),
        config: Arc::new(loaded.config.clone()),
        base_dir: loaded.base_dir.clone(),
    };
    Setup {
        authoring: Authoring::new(settings, served),
        engine,
        _dir: dir,
    }
}

/// Every flag on.
pub fn all_on() -> AuthoringConfig {
    AuthoringConfig {
        save: Some(false),
        run_inline: Some(true),
        call_upstreams: Some(true),
        search: Some(true),
        hooks_file: None,
    }
}

pub fn map(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        other => panic!("arguments must be an object, got {other}"),
    }
}

/// A call's structured answer; panics on a tool-level error.
pub async fn ok(a: &Authoring, tool: &str, args: Value) -> Value {
    let r = a.call(tool, map(args.clone())).await;
    assert_eq!(
        r.is_error,
        Some(false),
        "{tool} {args} failed: {}",
        text(&r)
    );
    r.structured_content
        .unwrap_or_else(|| panic!("{tool}: no structured content"))
}

/// A call that must be a tool-level error: its text.
pub async fn refused(a: &Authoring, tool: &str, args: Value) -> String {
    let r = a.call(tool, map(args.clone())).await;
    assert_eq!(
        r.is_error,
        Some(true),
        "{tool} {args} should fail: {}",
        text(&r)
    );
    text(&r)
}

pub fn text(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}
