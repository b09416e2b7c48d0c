//! The official MCP conformance suite (`scripts/conformance`, pinned releases on Node 22)
//! against `mcpflow serve --http` with the graph tools of `http_conformance.yaml`.
//!
//! The first two tests run graph tools only, and so leave out the scenarios that need what a
//! graph tool cannot be or have: server-stateless's diagnostic tools `test_missing_capability`,
//! `test_streaming_elicitation` and `test_logging_tool` (one requires a client capability, one
//! elicits, one logs), resources-*, prompts-*, completion-complete, logging-set-level,
//! tools-call-{image,audio,embedded-resource,mixed-content,with-logging,sampling,elicitation},
//! elicitation-*, caching, http-custom-header-server-validation and input-required-result-*
//! (resources, prompts, binary blocks, server-initiated requests). The third runs every
//! 2026-07-28 scenario with the same graph tools plus, for the rest, the fixture server
//! (crates/fixture) proxied: mcpflow still does the protocol work for all of them. tasks-*
//! and sep-2640-* are extensions.
mod conformance_suite;
mod http_common;

use std::process::Command;

use http_common::{config, fixture, repo_root, start, write_config};

/// Runs `scripts/conformance ARGS…` and fails with its summary unless every scenario passed.
fn conformance(args: &[&str]) {
    let runner = repo_root().join("scripts/conformance");
    let out = Command::new("bash")
        .arg(&runner)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", runner.display()));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "conformance scenarios failed ({}):\n{stderr}",
        out.status
    );
    // A run that passed must have run every scenario it was given.
    let scenarios = args
        .iter()
        .filter(|a| !a.starts_with('-') && !a.contains("://"))
        .count();
    assert!(
        stderr.contains(" 0 failed"),
        "unexpected summary:\n{stderr}"
    );
    assert!(scenarios > 0);
}

#[test]
fn the_2025_11_25_server_scenarios_pass() {
    let server = start(&config("http_conformance.yaml"), &[]);
    conformance(&[
        "-r",
        "2025-11-25",
        "server",
        &server.url,
        "server-initialize",
        "ping",
        "tools-list",
        "tools-call-simple-text",
        "tools-call-error",
        "tools-call-with-progress",
        "json-schema-2020-12",
        "server-sse-polling",
        "server-sse-multiple-streams",
        "dns-rebinding-protection",
    ]);
}

#[test]
fn the_2026_07_28_server_scenarios_pass() {
    let server = start(&config("http_conformance.yaml"), &[]);
    conformance(&[
        "-r",
        "2026-07-28",
        "server",
        &server.url,
        "tools-list@2026-07-28",
        "tools-call-simple-text@2026-07-28",
        "tools-call-error@2026-07-28",
        "tools-call-with-progress@2026-07-28",
        "json-schema-2020-12@2026-07-28",
        "server-sse-multiple-streams@2026-07-28",
        "dns-rebinding-protection@2026-07-28",
        "http-header-validation",
        // The older era once more, through the newer suite: one endpoint serves both.
        "server-initialize@2025-11-25",
        "server-session-lifecycle@2025-11-25",
        "tools-call-simple-text@2025-11-25",
        "server-sse-multiple-streams@2025-11-25",
    ]);
}

/// The graph tools of `http_conformance.yaml`, and the fixture's tools that no graph can be
/// (nor its resources, prompts and completions) passed through beside them.
fn graph_tools_and_the_fixture() -> String {
    let graph = std::fs::read_to_string(config("http_conformance.yaml"))
        .expect("http_conformance.yaml is readable");
    format!(
        r#"{graph}
mcpServers:
  fixture:
    command: "{}"
proxy:
  upstreams:
    fixture:
      naming: none
      # The graph tools answer these.
      exclude:
        - test_simple_text
        - test_error_handling
        - test_tool_with_progress
        - test_reconnection
        - json_schema_2020_12_tool
        - add
"#,
        fixture().display()
    )
}

#[test]
fn every_required_2026_07_28_server_scenario_passes_with_graph_tools_and_the_fixture() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write_config(dir.path(), &graph_tools_and_the_fixture());
    let server = start(&path, &[]);
    conformance_suite::run(&server.url, &conformance_suite::required_server_scenarios());
}
