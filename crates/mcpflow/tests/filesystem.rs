//! mcpGraph's `file_utils.yaml`, unchanged, against the real `@modelcontextprotocol/server-filesystem`
//! from npm: 7 files and 1387 bytes in `tests/counting`.
//!
//! The example starts the server with the allowed directory `../mcpGraph/tests/counting`,
//! relative to the working directory, so the test lays out `<tmp>/mcpGraph` → the mcpGraph folder
//! of `../shared/` and runs from `<tmp>/work`.
mod common;

use std::path::PathBuf;

use common::{call, cli, connect, example, stderr, stdout_json, text};
use serde_json::json;

struct Layout {
    _dir: tempfile::TempDir,
    work: PathBuf,
    counting: String,
}

fn layout() -> Layout {
    let dir = tempfile::tempdir().expect("tempdir");
    let work = dir.path().join("work");
    std::fs::create_dir(&work).expect("mkdir");
    let mcpgraph = common::shared().join("compat/mcpgraph");
    std::os::unix::fs::symlink(&mcpgraph, dir.path().join("mcpGraph")).expect("symlink");
    let counting = mcpgraph.join("tests/counting").display().to_string();
    Layout {
        _dir: dir,
        work,
        counting,
    }
}

fn npx_present() -> bool {
    std::process::Command::new("npx")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

#[test]
fn file_utils_through_run() {
    assert!(
        npx_present(),
        "this test needs node and npx (server-filesystem comes from npm)"
    );
    let l = layout();
    let file = example("file_utils.yaml");
    let args = json!({"directory": l.counting}).to_string();
    let out = cli(
        &[
            "run",
            file.to_str().expect("utf-8"),
            "count_files",
            "--args",
            &args,
        ],
        Some(&l.work),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout_json(&out), json!({"count": 7}));
    let out = cli(
        &[
            "run",
            file.to_str().expect("utf-8"),
            "sum_file_sizes",
            "--args",
            &args,
        ],
        Some(&l.work),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout_json(&out), json!({"totalSize": 1387}));
}

/// The README's first example with an upstream: server-filesystem asks for `roots/list` as it
/// starts; mcpflow answers it, so a clean run says nothing on stderr (it used to warn that
/// the request was not relayed).
#[test]
fn the_files_example_runs_without_a_word_on_stderr() {
    assert!(
        npx_present(),
        "this test needs node and npx (server-filesystem comes from npm)"
    );
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("sub")).expect("mkdir");
    std::fs::write(dir.path().join("a.txt"), "a").expect("write");
    let files = common::repo_example("files.yaml");
    let out = cli(
        &[
            "run",
            files.to_str().expect("utf-8"),
            "count_files",
            "--args",
            r#"{"directory": "."}"#,
        ],
        Some(dir.path()),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout_json(&out), json!({"files": 1, "directories": 1}));
    assert_eq!(stderr(&out), "", "a clean run prints nothing on stderr");
}

#[tokio::test]
async fn file_utils_over_mcp() {
    assert!(
        npx_present(),
        "this test needs node and npx (server-filesystem comes from npm)"
    );
    let l = layout();
    let file = example("file_utils.yaml");
    let client = connect(&["serve", file.to_str().expect("utf-8")], Some(&l.work)).await;
    let r = call(&client, "count_files", json!({"directory": l.counting})).await;
    assert_eq!(
        r.structured_content,
        Some(json!({"count": 7})),
        "{}",
        text(&r)
    );
    let r = call(&client, "sum_file_sizes", json!({"directory": l.counting})).await;
    assert_eq!(
        r.structured_content,
        Some(json!({"totalSize": 1387})),
        "{}",
        text(&r)
    );
    // A directory outside the allowed one is the upstream's error, reported as the call's.
    let r = call(&client, "count_files", json!({"directory": "/etc"})).await;
    assert_eq!(r.is_error, Some(true), "{}", text(&r));
    client.cancel().await.expect("closes");
}
