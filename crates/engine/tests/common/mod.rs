#![allow(dead_code)]
use std::path::PathBuf;

use mcpflow_config::Loaded;
use mcpflow_engine::Engine;
use mcpflow_upstream::UpstreamPool;

/// `../shared/` beside the repo root; the tests read the mcpGraph examples from it.
pub fn shared() -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared");
    assert!(
        p.join("compat/mcpgraph").is_dir(),
        "these tests need ../shared/ beside the repo root (looked at {})",
        p.display()
    );
    p
}

pub fn example(name: &str) -> PathBuf {
    shared().join("compat/mcpgraph/examples").join(name)
}

pub fn load_path(path: &std::path::Path) -> (Loaded, Engine) {
    let loaded = mcpflow_config::load(path, None).unwrap_or_else(|e| panic!("{e}"));
    engine_for(loaded)
}

pub fn load_str(yaml: &str) -> (Loaded, Engine) {
    let loaded = mcpflow_config::load_str(yaml, "test.yaml").unwrap_or_else(|e| panic!("{e}"));
    engine_for(loaded)
}

fn engine_for(loaded: Loaded) -> (Loaded, Engine) {
    let pool = UpstreamPool::new(loaded.config.mcp_servers.clone(), loaded.base_dir.clone());
    let engine = Engine::new(&loaded.config, pool).expect("compiles");
    (loaded, engine)
}

/// The fixture MCP server binary, built by `cargo build --workspace --bins` beside the tests.
pub fn fixture_bin() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let dir = exe.parent().and_then(|d| d.parent()).expect("target dir");
    let bin = dir.join("mcpflow-fixture");
    assert!(
        bin.exists(),
        "{} is missing: run `cargo build --workspace --bins` first (scripts/test does)",
        bin.display()
    );
    bin
}
