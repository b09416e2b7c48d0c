#![allow(dead_code)]
use std::path::PathBuf;

use mcpflow_config::{ConfigErrors, Draft, Loaded, Loader};
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
    compile(Loader::new().read(path)).unwrap_or_else(|e| panic!("{e}"))
}

pub fn load_str(yaml: &str) -> (Loaded, Engine) {
    compile(Loader::new().read_str(yaml, "test.yaml")).unwrap_or_else(|e| panic!("{e}"))
}

/// Every problem of a config file that does not load or compile, as `mcpflow validate` shows it.
pub fn rejected_path(path: &std::path::Path) -> ConfigErrors {
    rejected(compile(Loader::new().read(path)))
}

/// [`rejected_path`] for a config given as text, named `name` in messages.
pub fn rejected_str(yaml: &str, name: &str) -> ConfigErrors {
    rejected(compile(Loader::new().read_str(yaml, name)))
}

fn rejected(result: Result<(Loaded, Engine), ConfigErrors>) -> ConfigErrors {
    match result {
        Ok((loaded, _)) => panic!("expected errors, the config compiled: {:?}", loaded.config),
        Err(e) => e,
    }
}

/// The loader's checks and the engine's compilation, with every problem placed in the file:
/// the same pipeline as the binary's.
pub fn compile(draft: Result<Draft, ConfigErrors>) -> Result<(Loaded, Engine), ConfigErrors> {
    draft?.compile(
        |config, base_dir| {
            let pool = UpstreamPool::new(config.mcp_servers.clone(), base_dir.into());
            Engine::new(config, pool)
        },
        mcpflow_engine::check,
    )
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
