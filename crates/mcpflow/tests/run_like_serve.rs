//! `mcpflow run` judges a run as `serve` does: a result that breaks the tool's `outputSchema`
//! is a failure, `--state` keeps runs of tools that cannot wait too, and a session `run`
//! started is continued with `mcpflow sessions continue ID --input JSON`.

mod common;

use common::{cli, repo_example, stderr, stdout_json};
use serde_json::json;

const TOOLS: &str = r#"
version: "1.0"
server: {name: agree, version: "1.0.0"}
tools:
  - name: shaped
    description: Answers what it is given, under a declared outputSchema.
    inputSchema: {type: object, properties: {n: {}}, required: [n]}
    outputSchema: {type: object, properties: {n: {type: integer}}, required: [n]}
    nodes:
      - {id: start, type: entry, next: shape}
      - {id: shape, type: transform, transform: {expr: "{'n': $.start.n}"}, next: finish}
      - {id: finish, type: exit}
  - name: approve
    description: One wait, then done.
    inputSchema: {type: object, properties: {n: {type: integer}}, required: [n]}
    outputSchema: {type: object, properties: {n: {type: integer}, ok: {type: boolean}}, required: [n, ok]}
    nodes:
      - {id: start, type: entry, next: ask}
      - id: ask
        type: await
        message: "Approve?"
        inputSchema: {type: object, properties: {ok: {type: boolean}}, required: [ok]}
        next: done
      - id: done
        type: transform
        transform: {expr: "{'n': $.start.n, 'ok': $.ask.ok}"}
        next: finish
      - {id: finish, type: exit}
"#;

fn setup() -> (tempfile::TempDir, String, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("agree.yaml");
    std::fs::write(&config, TOOLS).expect("write config");
    let state = dir.path().join("state.db");
    let config = config.to_str().expect("utf-8").to_owned();
    let state = state.to_str().expect("utf-8").to_owned();
    (dir, config, state)
}

#[test]
fn a_result_that_breaks_the_output_schema_fails_the_run() {
    let (_dir, config, _) = setup();
    let ok = cli(&["run", &config, "shaped", "--args", r#"{"n": 3}"#], None);
    assert!(ok.status.success(), "{}", stderr(&ok));
    assert_eq!(stdout_json(&ok), json!({"n": 3}));

    let bad = cli(
        &["run", &config, "shaped", "--args", r#"{"n": "three"}"#],
        None,
    );
    assert_eq!(bad.status.code(), Some(1), "{}", stderr(&bad));
    let err = stderr(&bad);
    assert!(
        err.contains("does not match its outputSchema") && err.contains("/n"),
        "{err}"
    );
    assert!(bad.stdout.is_empty(), "no result is printed as the answer");

    let with_history = cli(
        &[
            "run",
            &config,
            "shaped",
            "--args",
            r#"{"n": "three"}"#,
            "--history",
        ],
        None,
    );
    assert_eq!(with_history.status.code(), Some(1));
    let v = stdout_json(&with_history);
    assert_eq!(v["result"], json!({"n": "three"}));
    assert!(
        v["error"]
            .as_str()
            .unwrap_or_default()
            .contains("outputSchema"),
        "{v}"
    );
}

#[test]
fn run_with_state_keeps_runs_of_tools_that_cannot_wait() {
    let (_dir, _, state) = setup();
    let sum = repo_example("sum.yaml");
    let sum = sum.to_str().expect("utf-8");
    // Several runs: each process must leave its record before it exits (the engine writes it
    // on a task of its own, which an exiting process used to drop).
    for n in 1..=5 {
        let args = json!({"n": n}).to_string();
        let out = cli(
            &["run", sum, "sum_to_n", "--args", &args, "--state", &state],
            None,
        );
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let listed = stdout_json(&cli(&["runs", "list", "--json", "--state", &state], None));
    let runs = listed.as_array().expect("a list");
    assert_eq!(runs.len(), 5, "{listed}");
    assert!(
        runs.iter()
            .all(|r| r["tool"] == "sum_to_n" && r["status"] == "succeeded"),
        "{listed}"
    );
    let mut sums: Vec<i64> = runs
        .iter()
        .map(|r| {
            let id = r["id"].as_str().expect("id");
            let shown = stdout_json(&cli(
                &["runs", "show", id, "--json", "--state", &state],
                None,
            ));
            assert!(
                !shown["history"].as_array().expect("records").is_empty(),
                "{shown}"
            );
            shown["run"]["result"]["sum"].as_i64().expect("a sum")
        })
        .collect();
    sums.sort_unstable();
    assert_eq!(sums, [1, 3, 6, 10, 15]);
}

#[test]
fn a_session_started_by_run_is_continued_from_the_command_line() {
    let (_dir, config, state) = setup();
    let started = cli(
        &[
            "run",
            &config,
            "approve",
            "--args",
            r#"{"n": 7}"#,
            "--state",
            &state,
        ],
        None,
    );
    assert!(started.status.success(), "{}", stderr(&started));
    let handle = stdout_json(&started);
    assert_eq!(handle["status"], "waiting", "{handle}");
    let session = handle["sessionId"].as_str().expect("sessionId").to_owned();

    // The input is checked against the await node's schema; the session keeps waiting.
    let wrong = cli(
        &[
            "sessions",
            "continue",
            &session,
            "--input",
            r#"{"ok": "yes"}"#,
            "--config",
            &config,
            "--state",
            &state,
        ],
        None,
    );
    assert_eq!(wrong.status.code(), Some(1), "{}", stderr(&wrong));
    assert!(stderr(&wrong).contains("inputSchema"), "{}", stderr(&wrong));

    let done = cli(
        &[
            "sessions",
            "continue",
            &session,
            "--input",
            r#"{"ok": true}"#,
            "--config",
            &config,
            "--state",
            &state,
        ],
        None,
    );
    assert!(done.status.success(), "{}", stderr(&done));
    assert_eq!(stdout_json(&done), json!({"n": 7, "ok": true}));

    let shown = stdout_json(&cli(
        &["sessions", "show", &session, "--json", "--state", &state],
        None,
    ));
    assert_eq!(shown["status"], "completed", "{shown}");
    let again = cli(
        &[
            "sessions",
            "continue",
            &session,
            "--input",
            r#"{"ok": true}"#,
            "--config",
            &config,
            "--state",
            &state,
        ],
        None,
    );
    assert_eq!(again.status.code(), Some(1));
    assert!(stderr(&again).contains("ended"), "{}", stderr(&again));

    let no_config = cli(
        &[
            "sessions", "continue", &session, "--input", "{}", "--state", &state,
        ],
        None,
    );
    assert_eq!(no_config.status.code(), Some(2));
    assert!(
        stderr(&no_config).contains("--config"),
        "{}",
        stderr(&no_config)
    );
}
