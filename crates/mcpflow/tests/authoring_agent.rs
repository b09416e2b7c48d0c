//! The "Must show" of issue #15: `scripts/authoring-agent.py`, a scripted agent on the official
//! Python MCP SDK, starts from a config holding only upstreams (npm `server-filesystem` and
//! `server-memory`, pinned) and, through the authoring tools alone, writes a tool that counts a
//! directory's files by extension, repairs a broken first draft from the problems reported, runs
//! it inline and saves it; a fresh client then lists and calls it, and `mcpflow validate` passes
//! on the saved config. Over stdio and over Streamable HTTP.

mod common;

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

const CONFIG: &str = r#"
version: "1.0"
server: {name: agent-built, version: "1.0.0"}
# Only upstreams: every graph tool is written by the agent into tools/.
include: ["tools/*.yaml"]
authoring: {save: true}
mcpServers:
  filesystem:
    command: npx
    args: ["-y", "@modelcontextprotocol/server-filesystem@2026.8.31", "{data}"]
  memory:
    command: npx
    args: ["-y", "@modelcontextprotocol/server-memory@2026.8.31"]
tools: []
"#;

/// A directory of three .txt, two .md and one .json file (and a subdirectory, not counted).
fn data(dir: &Path) {
    for (name, body) in [
        ("a.txt", "one"),
        ("b.txt", "two"),
        ("c.txt", "three"),
        ("notes.md", "# notes"),
        ("readme.md", "# readme"),
        ("package.json", "{}"),
    ] {
        std::fs::write(dir.join(name), body).expect("write data file");
    }
    std::fs::create_dir(dir.join("sub.d")).expect("create subdirectory");
}

/// Runs the agent over `transport` in a fresh temp dir; returns its summary and the dir.
fn run_agent(transport: &str) -> (Value, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let data_dir = dir.path().join("data");
    std::fs::create_dir(&data_dir).expect("create data dir");
    data(&data_dir);
    let data_dir = data_dir.canonicalize().expect("data dir resolves");
    let data_str = data_dir.to_str().expect("utf-8 path");
    let config = dir.path().join("config.yaml");
    std::fs::write(&config, CONFIG.replace("{data}", data_str)).expect("write config");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/conformance-clients");
    let out = Command::new("bash")
        .arg(&script)
        .args(["agent", transport])
        .arg(common::mcpflow())
        .arg(&config)
        .arg(data_str)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "the agent failed over {transport} ({}):\nstdout: {stdout}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let summary = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("the agent's output is not one JSON value ({e}): {stdout}"));
    (summary, dir)
}

fn check(transport: &str) {
    let (summary, dir) = run_agent(transport);
    let counts = json!({"txt": 3, "md": 2, "json": 1});
    // It read the format and found the upstream tool it built on.
    for topic in ["graph", "nodes", "jsonata"] {
        assert!(
            summary["syntaxTopics"]
                .as_array()
                .is_some_and(|t| t.contains(&json!(topic))),
            "{summary}"
        );
    }
    // Both mistakes were reported at their paths, and repaired from what was reported.
    let problems = summary["problems"].as_array().expect("problems");
    let paths: Vec<&str> = problems.iter().filter_map(|p| p["path"].as_str()).collect();
    assert_eq!(
        paths,
        ["/nodes/2/type", "/nodes/2/transform/expr"],
        "{summary}"
    );
    assert!(
        problems[0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("transfrom")),
        "{summary}"
    );
    // Each carries what a program applies: the type meant, where the expression broke.
    assert_eq!(problems[0]["suggestion"], json!("transform"), "{summary}");
    assert_eq!(problems[1]["code"], json!("S0202"), "{summary}");
    assert!(problems[1]["position"].is_u64(), "{summary}");
    assert_eq!(
        summary["repairs"][0],
        json!({"path": "/nodes/2/type", "from": "transfrom", "to": "transform", "how": "suggestion"}),
        "{summary}"
    );
    assert_eq!(summary["repairs"][1]["inserted"], json!("}"), "{summary}");
    assert_eq!(summary["repairs"][1]["code"], json!("S0202"), "{summary}");
    assert_eq!(summary["repairs"][1]["how"], json!("position"), "{summary}");
    // Inline, then saved, listed to the authoring session (which was told) and to a fresh client.
    assert_eq!(summary["inline"], counts, "{summary}");
    assert_eq!(
        summary["inlineNodes"],
        json!(["entry", "list", "count", "exit"]),
        "{summary}"
    );
    assert_eq!(summary["listedAfterSave"], json!(true), "{summary}");
    assert!(
        summary["notified"]
            .as_array()
            .is_some_and(|n| n.contains(&json!("notifications/tools/list_changed"))),
        "{summary}"
    );
    assert_eq!(summary["freshClientListed"], json!(true), "{summary}");
    assert_eq!(summary["counts"], counts, "{summary}");
    assert_eq!(summary["validate"]["exit"], json!(0), "{summary}");
    // The saved tool is a file of its own; the hand-written config is untouched.
    let saved = dir.path().join("tools/count_by_extension.yaml");
    assert!(saved.is_file(), "{summary}");
    let config = std::fs::read_to_string(dir.path().join("config.yaml")).expect("read config");
    assert!(config.contains("tools: []"), "{config}");
    // `mcpflow validate` agrees from the outside, counting the saved tool.
    let out = common::cli(
        &[
            "validate",
            dir.path().join("config.yaml").to_str().expect("utf-8"),
        ],
        None,
    );
    assert!(out.status.success(), "{}", common::stderr(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("1 tool(s)"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn an_agent_builds_a_tool_over_stdio() {
    check("stdio");
}

#[test]
fn an_agent_builds_a_tool_over_streamable_http() {
    check("http");
}
