//! `mcpflow upstream list|call` against a stdio server, named in a config (`--config`) or
//! given as a command line, so a user sees its tools and answers before writing a graph.

mod common;

use common::{cli, fixture, stderr, stdout_json, write_config};
use serde_json::json;

const CONFIG: &str = r#"
version: "1.0"
server: {name: s, version: "1.0.0"}
mcpServers:
  fx: {command: "{fixture}", args: []}
  other: {command: "{fixture}", args: []}
"#;

fn tool_names(listing: &serde_json::Value) -> Vec<String> {
    listing["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("tools in {listing}"))
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn a_server_of_a_config_is_listed_and_called_by_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(dir.path(), CONFIG);
    let config = config.to_str().expect("utf-8");

    let out = cli(&["upstream", "list", "fx", "--config", config], None);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(tool_names(&stdout_json(&out)).contains(&"echo".to_owned()));

    let out = cli(
        &[
            "upstream",
            "call",
            "fx",
            "echo",
            "--args",
            r#"{"x": 1}"#,
            "--config",
            config,
        ],
        None,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout_json(&out)["structuredContent"], json!({"x": 1}));

    let out = cli(&["upstream", "list", "nope", "--config", config], None);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("no server `nope`") && err.contains("fx, other"),
        "{err}"
    );
}

#[test]
fn a_command_line_is_started_as_a_stdio_server() {
    let fixture = fixture();
    let command = format!("'{}'", fixture.display());
    let out = cli(&["upstream", "list", &command], None);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(tool_names(&stdout_json(&out)).contains(&"echo".to_owned()));

    let out = cli(
        &[
            "upstream",
            "call",
            &command,
            "echo",
            "--args",
            r#"{"said": "hi"}"#,
        ],
        None,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout_json(&out)["structuredContent"],
        json!({"said": "hi"})
    );

    // A command that is not there says so, naming it.
    let out = cli(
        &["upstream", "list", "mcp-server-that-is-not-there --flag"],
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("mcp-server-that-is-not-there"),
        "{}",
        stderr(&out)
    );

    // HTTP options with a command are a usage error.
    let out = cli(&["upstream", "list", &command, "--sse"], None);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn validate_check_upstreams_names_a_tool_the_upstream_does_not_have() {
    let dir = tempfile::tempdir().expect("tempdir");
    let yaml = format!(
        "{CONFIG}tools:
  - name: t
    description: calls a tool the fixture does not have
    inputSchema: {{type: object}}
    nodes:
      - {{id: entry, type: entry, next: call}}
      - {{id: call, type: mcp, server: fx, tool: ech, args: {{}}, next: exit}}
      - {{id: exit, type: exit}}
"
    );
    let config = write_config(dir.path(), &yaml);
    let config = config.to_str().expect("utf-8");

    // Without connecting, the config is sound.
    let out = cli(&["validate", config], None);
    assert!(out.status.success(), "{}", stderr(&out));

    let out = cli(&["validate", config, "--check-upstreams"], None);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("graph.yaml:13:") && err.contains("upstream `fx` has no tool `ech`"),
        "{err}"
    );
    assert!(err.contains("it has: ") && err.contains("echo"), "{err}");
}
