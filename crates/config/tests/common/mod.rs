//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use mcpflow_config::{ConfigErrors, Loaded, Loader};

/// `shared/compat/mcpgraph`, next to the repository.
pub fn mcpgraph() -> PathBuf {
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared");
    assert!(
        shared.is_dir(),
        "the shared folder is missing: expected it at {} (beside the repository)",
        shared.display()
    );
    shared.join("compat/mcpgraph")
}

/// An environment with no variables, so tests never depend on the machine's.
pub fn no_env(_: &str) -> Option<String> {
    None
}

pub fn ok(text: &str) -> Loaded {
    match Loader::new().env(no_env).load_str(text, "test.yaml") {
        Ok(l) => l,
        Err(e) => panic!("expected the config to load, got:\n{e}"),
    }
}

pub fn err(text: &str) -> ConfigErrors {
    match Loader::new().env(no_env).load_str(text, "test.yaml") {
        Ok(l) => panic!("expected errors, the config loaded: {:?}", l.config),
        Err(e) => e,
    }
}

/// The one error of a config that has exactly one.
pub fn one_err(text: &str) -> mcpflow_config::ConfigError {
    let e = err(text);
    assert_eq!(e.errors.len(), 1, "expected one error, got:\n{e}");
    e.errors.into_iter().next().expect("one error")
}

/// A config made of a header and the given tool nodes (YAML indented for `nodes:`).
pub fn with_nodes(nodes: &str) -> String {
    format!(
        "version: \"1.0\"\n\
         server:\n  name: t\n  version: \"1\"\n\
         mcpServers:\n  fs:\n    command: echo\n\
         tools:\n  - name: tool\n    nodes:\n{nodes}"
    )
}
