//! No command panics when its reader has gone (`mcpflow runs show ID | head`): each command
//! runs with a stdout pipe whose read end is already closed, so its first write fails with
//! EPIPE, and must end quietly with the exit code its own work earned.

mod common;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::{cli, mcpflow, repo_example, stderr, stdout_json};

/// A tool that waits, so `run --state` leaves a run and a session in the store.
const APPROVE: &str = r#"
version: "1.0"
server: {name: pipes, version: "1.0.0"}
tools:
  - name: approve
    description: One wait, then done.
    inputSchema: {type: object, properties: {n: {type: integer}}, required: [n]}
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

/// `mcpflow ARGS` writing into a pipe nobody reads any more.
fn closed(args: &[&str], cwd: &Path) -> Output {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    Command::new(mcpflow())
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .spawn()
        .expect("mcpflow starts")
        .wait_with_output()
        .expect("mcpflow ends")
}

fn quiet(args: &[&str], cwd: &Path, code: i32) {
    let out = closed(args, cwd);
    let err = stderr(&out);
    assert!(
        !err.contains("panicked"),
        "mcpflow {args:?} panicked: {err}"
    );
    assert_eq!(out.status.code(), Some(code), "mcpflow {args:?}: {err}");
    assert!(err.is_empty(), "mcpflow {args:?} said something: {err}");
}

#[test]
fn every_printing_command_ends_quietly_on_a_closed_pipe() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let sum = repo_example("sum.yaml");
    let sum = sum.to_str().expect("utf-8");
    let approve = d.join("approve.yaml");
    std::fs::write(&approve, APPROVE).expect("write config");
    let approve = approve.to_str().expect("utf-8");
    let state = d.join("state.db");
    let state = state.to_str().expect("utf-8");

    quiet(&["schema"], d, 0);
    quiet(&["validate", sum], d, 0);
    quiet(&["eval", "[1..100]"], d, 0);
    quiet(&["run", sum, "sum_to_n", "--args", r#"{"n":50}"#], d, 0);
    quiet(
        &["run", sum, "sum_to_n", "--args", r#"{"n":50}"#, "--history"],
        d,
        0,
    );

    // A run that waits leaves a run and a session to show.
    let started = cli(
        &[
            "run",
            approve,
            "approve",
            "--args",
            r#"{"n":1}"#,
            "--state",
            state,
        ],
        Some(d),
    );
    assert!(started.status.success(), "{}", stderr(&started));
    let handle = stdout_json(&started);
    let session = handle["sessionId"]
        .as_str()
        .expect("a session id")
        .to_owned();
    let listed = stdout_json(&cli(&["runs", "list", "--json", "--state", state], Some(d)));
    let run = listed[0]["id"].as_str().expect("a run id").to_owned();

    for json in [false, true] {
        let flag: &[&str] = if json { &["--json"] } else { &[] };
        for args in [
            &["runs", "list"][..],
            &["runs", "show", &run],
            &["runs", "stats"],
            &["sessions", "list"],
            &["sessions", "show", &session],
        ] {
            quiet(&[args, flag, &["--state", state]].concat(), d, 0);
        }
    }
    quiet(&["sessions", "cancel", &session, "--state", state], d, 0);
}
