//! Real MCP clients against `mcpflow serve`: the MCP Inspector CLI over Streamable HTTP,
//! legacy SSE and stdio, and the Python SDK (`mcp` on PyPI) over Streamable HTTP in both spec
//! eras and over legacy SSE. `scripts/conformance-clients` installs them (pinned) outside the
//! repo; scripts/test runs its `install` first.
mod http_common;

use std::process::Command;

use http_common::{config, mcpflow, repo_root, start};
use serde_json::{Value, json};

/// Runs `scripts/conformance-clients ARGS…` and returns its stdout; fails with stderr.
fn clients(args: &[&str]) -> String {
    let script = repo_root().join("scripts/conformance-clients");
    let out = Command::new("bash")
        .arg(&script)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{} {args:?} failed ({}):\nstdout: {stdout}\nstderr: {}",
        script.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn json_of(stdout: &str) -> Value {
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("client output is not one JSON value ({e}): {stdout}"))
}

fn tool_names(list: &Value) -> Vec<&str> {
    list["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools array: {list}"))
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect()
}

#[test]
fn the_inspector_cli_lists_and_calls_over_http_sse_and_stdio() {
    let conf = config("http_conformance.yaml");
    let server = start(&conf, &[]);
    let sse = format!("{}/sse", server.base());
    for target in [server.url.as_str(), sse.as_str()] {
        let list = json_of(&clients(&["inspector", target, "--method", "tools/list"]));
        assert!(tool_names(&list).contains(&"add"), "{target}: {list}");
        let call = json_of(&clients(&[
            "inspector",
            target,
            "--method",
            "tools/call",
            "--tool-name",
            "add",
            "--tool-arg",
            "a=19",
            "b=23",
        ]));
        assert_eq!(
            call["structuredContent"],
            json!({"sum": 42}),
            "{target}: {call}"
        );
    }
    // stdio: the Inspector starts `mcpflow serve CONFIG` itself.
    let bin = mcpflow();
    let stdio = [
        "inspector",
        bin.to_str().expect("utf-8"),
        "serve",
        conf.to_str().expect("utf-8"),
    ];
    let list = json_of(&clients(
        &[&stdio[..], &["--method", "tools/list"]].concat(),
    ));
    assert!(tool_names(&list).contains(&"test_simple_text"), "{list}");
    let call = json_of(&clients(
        &[
            &stdio[..],
            &[
                "--method",
                "tools/call",
                "--tool-name",
                "add",
                "--tool-arg",
                "a=1",
                "b=2",
            ],
        ]
        .concat(),
    ));
    assert_eq!(call["structuredContent"], json!({"sum": 3}), "{call}");
}

#[test]
fn the_python_sdk_calls_over_both_eras_and_legacy_sse() {
    let server = start(&config("http_conformance.yaml"), &[]);
    let sse = format!("{}/sse", server.base());
    // auto: probes server/discover (2026-07-28); legacy: the initialize handshake; sse: 2024-11-05.
    for (mode, url) in [
        ("auto", server.url.as_str()),
        ("2026-07-28", server.url.as_str()),
        ("legacy", server.url.as_str()),
        ("sse", sse.as_str()),
    ] {
        let out = json_of(&clients(&[
            "python",
            mode,
            url,
            "add",
            r#"{"a": 40, "b": 2}"#,
        ]));
        let names: Vec<&str> = out["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(names.contains(&"json_schema_2020_12_tool"), "{mode}: {out}");
        assert_eq!(
            out["result"]["structuredContent"],
            json!({"sum": 42}),
            "{mode}: {out}"
        );
        assert_eq!(out["result"]["isError"], json!(false), "{mode}: {out}");
    }
}
