//! Graphs whose mcp nodes call a real remote upstream, `@modelcontextprotocol/server-everything`
//! started in `streamableHttp` and in `sse` mode, through `mcpflow run`; and the
//! `mcpflow upstream` commands against the same servers.
mod common;
#[path = "../../upstream/tests/support/everything.rs"]
mod everything;

use std::process::{Command, Stdio};

use common::{mcpflow, write_config};
use everything::{Everything, Mode};
use serde_json::{Value, json};

const CONFIG: &str = r#"
version: "1.0"
server: { name: "remote", version: "1.0.0" }
mcpServers:
  everything:
    type: "{kind}"
    url: "{url}"
    headers: { X-Mcpflow-Test: "${MCPFLOW_TEST_TOKEN}" }
    timeoutMs: 30000
    connectTimeoutMs: 30000
tools:
  - name: "greet"
    description: "echo through server-everything, add two numbers there, reshape"
    inputSchema: { type: object, properties: { message: { type: string } }, required: [message] }
    nodes:
      - { id: entry, type: entry, next: echo }
      - id: echo
        type: mcp
        server: everything
        tool: echo
        args: { message: { expr: "entry.message" } }
        next: sum
      - { id: sum, type: mcp, server: everything, tool: get-sum, args: { a: 2, b: 40 }, next: shape }
      - { id: shape, type: transform, transform: { expr: '{ "echo": echo, "sum": sum }' }, next: exit }
      - { id: exit, type: exit }
"#;

fn run_graph(server: &Everything) -> Value {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = CONFIG
        .replace("{kind}", server.kind())
        .replace("{url}", &server.url());
    let path = write_config(dir.path(), &config);
    let out = Command::new(mcpflow())
        .args(["run", path.to_str().expect("utf-8"), "greet"])
        .args(["--args", r#"{"message": "hi from a graph"}"#])
        .env("MCPFLOW_TEST_TOKEN", "not-printed")
        .stdin(Stdio::null())
        .output()
        .expect("mcpflow runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "mcpflow run failed: {stderr}\nserver output:\n{}",
        server.output()
    );
    assert!(!stderr.contains("not-printed"), "{stderr}");
    serde_json::from_slice(&out.stdout).expect("a JSON result")
}

#[test]
fn a_graph_calls_server_everything_over_streamable_http() {
    let server = Everything::start(Mode::StreamableHttp);
    assert_eq!(
        run_graph(&server),
        json!({"echo": "Echo: hi from a graph", "sum": "The sum of 2 and 40 is 42."})
    );
}

#[test]
fn a_graph_calls_server_everything_over_legacy_sse() {
    let server = Everything::start(Mode::Sse);
    assert_eq!(
        run_graph(&server),
        json!({"echo": "Echo: hi from a graph", "sum": "The sum of 2 and 40 is 42."})
    );
}

fn upstream_cmd(args: &[&str]) -> (bool, Value, String) {
    let out = Command::new(mcpflow())
        .arg("upstream")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("mcpflow runs");
    let stdout = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (
        out.status.success(),
        stdout,
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

#[test]
fn mcpflow_upstream_lists_and_calls_over_both_transports() {
    for mode in [Mode::StreamableHttp, Mode::Sse] {
        let server = Everything::start(mode);
        let url = server.url();
        let mut list = vec!["list", url.as_str(), "-H", "X-Mcpflow-Test: yes"];
        let mut call = vec![
            "call",
            url.as_str(),
            "echo",
            "--args",
            r#"{"message": "cli"}"#,
        ];
        if mode == Mode::Sse {
            list.push("--sse");
            call.push("--sse");
        }
        let (ok, out, stderr) = upstream_cmd(&list);
        assert!(ok, "{mode:?}: {stderr}");
        assert_eq!(
            out["server"]["protocolVersion"], "2025-11-25",
            "{mode:?}: {out}"
        );
        let names: Vec<&str> = out["tools"]
            .as_array()
            .map(|tools| tools.iter().filter_map(|t| t["name"].as_str()).collect())
            .unwrap_or_default();
        assert!(names.contains(&"echo"), "{mode:?}: {out}");

        let (ok, out, stderr) = upstream_cmd(&call);
        assert!(ok, "{mode:?}: {stderr}");
        assert_eq!(out["content"][0]["text"], "Echo: cli", "{mode:?}: {out}");
        assert_eq!(out["isError"], false, "{mode:?}: {out}");
    }
}

#[test]
fn mcpflow_upstream_reports_a_bad_target_with_exit_codes() {
    // Nothing listens on port 9 of the loopback (discard, never served here).
    let (ok, _, stderr) = upstream_cmd(&["list", "http://127.0.0.1:9/mcp"]);
    assert!(!ok);
    assert!(stderr.contains("could not be connected"), "{stderr}");
    let out = Command::new(mcpflow())
        .args([
            "upstream",
            "call",
            "http://127.0.0.1:9/mcp",
            "t",
            "--args",
            "[1]",
        ])
        .stdin(Stdio::null())
        .output()
        .expect("mcpflow runs");
    assert_eq!(out.status.code(), Some(2));
    let out = Command::new(mcpflow())
        .args([
            "upstream",
            "list",
            "http://127.0.0.1:9/mcp",
            "-H",
            "no-colon",
        ])
        .stdin(Stdio::null())
        .output()
        .expect("mcpflow runs");
    assert_eq!(out.status.code(), Some(2));
}
