//! The command line: the mcpGraph examples through `mcpflow run`, `validate`, `eval`, `schema`.
mod common;

use common::{cli, example, stderr, stdout_json};
use serde_json::json;

fn run_example(file: &str, tool: &str, args: serde_json::Value) -> serde_json::Value {
    let path = example(file);
    let out = cli(
        &[
            "run",
            path.to_str().expect("utf-8 path"),
            tool,
            "--args",
            &args.to_string(),
        ],
        None,
    );
    assert!(
        out.status.success(),
        "{file} {tool} {args}: {}",
        stderr(&out)
    );
    stdout_json(&out)
}

#[test]
fn run_gives_the_mcpgraph_results() {
    assert_eq!(
        run_example("loop_example.yaml", "sum_to_n", json!({"n": 3})),
        json!({"sum": 6})
    );
    assert_eq!(
        run_example("loop_example.yaml", "sum_to_n", json!({"n": 5})),
        json!({"sum": 15})
    );
    assert_eq!(
        run_example("switch_example.yaml", "test_switch", json!({"value": 15})),
        json!({"result": "high"})
    );
    assert_eq!(
        run_example("switch_example.yaml", "test_switch", json!({"value": 10})),
        json!({"result": "low"})
    );
    assert_eq!(
        run_example("switch_example.yaml", "test_switch", json!({"value": -5})),
        json!({"result": "zero_or_negative"})
    );
    assert_eq!(
        run_example("test_minimal.yaml", "test_tool", json!({})),
        json!({})
    );
}

#[test]
fn run_with_history_prints_every_record() {
    let path = example("loop_example.yaml");
    let out = cli(
        &[
            "run",
            path.to_str().expect("utf-8"),
            "sum_to_n",
            "--args",
            r#"{"n": 3}"#,
            "--history",
        ],
        None,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let v = stdout_json(&out);
    assert_eq!(v["result"], json!({"sum": 6}));
    let history = v["history"].as_array().expect("history array");
    assert_eq!(history.len(), 9);
    assert_eq!(history[0]["nodeId"], "entry_sum");
    assert_eq!(history[0]["type"], "entry");
    assert_eq!(history[0]["output"], json!({"n": 3}));
    assert_eq!(history[2]["output"], "increment_node");
    for (i, r) in history.iter().enumerate() {
        assert_eq!(r["index"], i);
        assert!(r["endTime"].as_f64() >= r["startTime"].as_f64(), "{r}");
        assert!(r["durationMs"].is_number());
    }
}

#[test]
fn run_exit_codes_say_what_failed() {
    let path = example("loop_example.yaml");
    let p = path.to_str().expect("utf-8");
    // A run that fails (the node limit): 1, with the reason on stderr.
    let out = cli(&["run", p, "sum_to_n", "--args", r#"{"n": 100000}"#], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("maxNodeExecutions"),
        "{}",
        stderr(&out)
    );
    // Arguments that do not match the inputSchema: 1, naming the pointer.
    let out = cli(&["run", p, "sum_to_n", "--args", r#"{"n": "three"}"#], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("/n"), "{}", stderr(&out));
    // An invalid config: 2.
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, "version: '1.0'\nserver: {name: x}\n").expect("write");
    let out = cli(&["run", bad.to_str().expect("utf-8"), "t"], None);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    // Not JSON in --args: 2.
    let out = cli(&["run", p, "sum_to_n", "--args", "{n: 3"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--args is not valid JSON"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn validate_accepts_every_mcpgraph_file() {
    for file in [
        "file_utils.yaml",
        "loop_example.yaml",
        "switch_example.yaml",
        "test_minimal.yaml",
    ] {
        let path = example(file);
        let out = cli(&["validate", path.to_str().expect("utf-8")], None);
        assert!(out.status.success(), "{file}: {}", stderr(&out));
        assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 1);
    }
    let claude = common::shared().join("compat/mcpgraph/testClaude/graph.yaml");
    let out = cli(&["validate", claude.to_str().expect("utf-8")], None);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("0 tool(s)"));
}

#[test]
fn validate_reports_every_error_with_its_position() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("broken.yaml");
    let yaml = r#"version: "1.0"
server:
  name: "broken"
  version: "1.0.0"
tools:
  - name: "t"
    description: "d"
    nodes:
      - id: "entry"
        type: "entry"
        nxt: "a"
      - id: "a"
        type: "transform"
        transform:
          expr: "$sum("
        next: "nowhere"
      - id: "exit"
        type: "exit"
"#;
    std::fs::write(&path, yaml).expect("write");
    let out = cli(&["validate", path.to_str().expect("utf-8")], None);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("broken.yaml:11:"),
        "unknown key `nxt` at line 11: {err}"
    );
    assert!(err.contains("next"), "suggests `next`: {err}");
    // The engine's compile errors come with the loader's, in file order: `$sum(` ends at
    // column 23 of line 15 (just after the `(`), where the parser stops.
    assert!(
        err.contains("broken.yaml:15:23: invalid JSONata expression in node \"a\""),
        "the expression is compiled even though the config is broken elsewhere: {err}"
    );
    assert!(err.contains("broken.yaml:16:"), "dangling `nowhere`: {err}");
    assert!(err.trim_end().ends_with("3 errors"), "{err}");
}

#[test]
fn eval_jsonata_and_logic() {
    let out = cli(
        &[
            "eval",
            "$sum(items.price)",
            "--input",
            r#"{"items": [{"price": 2}, {"price": 3}]}"#,
        ],
        None,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout_json(&out), json!(5));
    let out = cli(&["eval", "$x * 2", "--bindings", r#"{"x": 21}"#], None);
    assert_eq!(stdout_json(&out), json!(42));
    let out = cli(&["eval", "$sum("], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("[S0"),
        "names the JSONata code: {}",
        stderr(&out)
    );
    let out = cli(
        &[
            "eval",
            "--logic",
            r#"{">": [{"var": "a"}, 10]}"#,
            "--input",
            r#"{"a": "15"}"#,
        ],
        None,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout_json(&out), json!(true));
    let out = cli(
        &[
            "eval",
            "--logic",
            "--classic",
            r#"{"var": ["a.b", 7]}"#,
            "--input",
            r#"{"a": {}}"#,
        ],
        None,
    );
    assert_eq!(stdout_json(&out), json!(7));
}

#[test]
fn schema_is_a_json_schema_of_the_config() {
    let out = cli(&["schema"], None);
    assert!(out.status.success());
    let schema = stdout_json(&out);
    assert!(
        schema["$schema"]
            .as_str()
            .unwrap_or_default()
            .contains("json-schema.org"),
        "{schema}"
    );
    assert!(schema["properties"]["tools"].is_object());
}

#[test]
fn readme_first_command_prints_the_sum() {
    let path = common::repo_example("sum.yaml");
    let out = cli(
        &[
            "run",
            path.to_str().expect("utf-8"),
            "sum_to_n",
            "--args",
            r#"{"n": 100}"#,
        ],
        None,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout_json(&out), json!({"sum": 5050, "steps": 100}));
}

/// `validate` loads as `serve` does: a hook script that does not compile (which `serve`
/// refuses at start) is an error at its place, not `ok`.
#[test]
fn validate_refuses_a_hook_script_serve_would_refuse() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = common::write_config(
        dir.path(),
        r#"version: "1.0"
server: {name: hooked, version: "1.0.0"}
mcpServers:
  fx: {command: "{fixture}"}
proxy:
  upstreams:
    fx: {include: [echo]}
tools:
  - name: t
    description: "d"
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: exit}
      - {id: exit, type: exit}
hooks:
  - id: broken
    method: tools/call
    phase: pre
    script: "(ctx) => { return ctx;"
"#,
    );
    let path = path.to_str().expect("utf-8");
    let out = cli(&["validate", path], None);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("hook \"broken\" does not compile"), "{err}");
    assert!(
        err.contains(&format!("{path}:19:")),
        "at the script's line: {err}"
    );
}
