//! The repo's mcpGraph 0.1.23 files (`bench/configs/*_mcpgraph.yaml`, in the format `npx mcpgraph`
//! installs) run on that mcpGraph, from npm, and give what mcpflow gives for the same file, and
//! for the file after `mcpflow migrate`. 0.1.23 is the only mcpGraph the npm registry has; the
//! current format's meaning (0.1.32) is held by `../shared/compat/mcpgraph` and its tests.

mod common;

use std::path::{Path, PathBuf};
use std::process::Stdio;

use common::{call, cli, stderr, stdout_json};
use rmcp::ServiceExt;
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};

const MCPGRAPH: &str = "mcpgraph@0.1.23";

fn bench(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../bench/configs")
        .join(name)
}

/// `tool(args)` of `file` served by mcpGraph 0.1.23 over stdio: its structured result.
/// `path` is prepended to PATH (the echo graph finds `mcpflow-fixture` there).
async fn on_mcpgraph(file: &Path, tool: &str, args: Value, path: &Path) -> Value {
    let mut cmd = tokio::process::Command::new("npx");
    cmd.args(["-y", MCPGRAPH, "-g"]).arg(file);
    let search = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs = vec![path.to_path_buf()];
    dirs.extend(std::env::split_paths(&search));
    cmd.env("PATH", std::env::join_paths(dirs).expect("PATH joins"));
    // In a process group of its own, ended whole below (also when an assertion fails).
    cmd.process_group(0);
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()
        .expect("npx starts mcpGraph");
    let _group = transport.id().map(Group);
    let client = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("mcpflow-tests", "0.0.0"),
    )
    .serve(transport)
    .await
    .expect("mcpGraph 0.1.23 initializes");
    let result = call(&client, tool, args).await;
    assert_ne!(
        result.is_error,
        Some(true),
        "mcpGraph 0.1.23 failed: {result:?}"
    );
    let value = result
        .structured_content
        .clone()
        .unwrap_or_else(|| panic!("mcpGraph answered no structured result: {result:?}"));
    client.cancel().await.expect("closes");
    value
}

/// Kills a process group when dropped. npx runs mcpGraph's `node` as a child of its own, which
/// rmcp's ending of npx left running: one orphaned `node … mcpgraph` per test run, still there
/// after CI ended (a stray process on the shared cores skews the next benchmark).
struct Group(u32);

impl Drop for Group {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-s", "KILL", "--", &format!("-{}", self.0)])
            .stderr(Stdio::null())
            .status();
    }
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("utf-8")
}

/// The same call through `mcpflow run`.
fn on_mcpflow(file: &Path, tool: &str, args: &Value) -> Value {
    let out = cli(
        &[
            "run",
            file.to_str().expect("utf-8"),
            tool,
            "--args",
            &args.to_string(),
        ],
        None,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    stdout_json(&out)
}

/// The file rewritten by `mcpflow migrate`, in `dir`.
fn migrated(file: &Path, dir: &Path) -> PathBuf {
    let out = cli(&["migrate", file.to_str().expect("utf-8")], None);
    assert!(out.status.success(), "{}", stderr(&out));
    let path = dir.join(file.file_name().expect("a file name"));
    std::fs::write(&path, &out.stdout).expect("write the migrated file");
    path
}

/// `recognised`: whether the file shows it is 0.1.23's (a switch routing by `target:`), so
/// that mcpflow runs it with 0.1.23's meaning; otherwise it warns.
async fn same_everywhere(name: &str, tool: &str, args: Value, expected: Value, recognised: bool) {
    let file = bench(name);
    let bins = common::fixture()
        .parent()
        .expect("the fixture's directory")
        .to_path_buf();
    let reference = on_mcpgraph(&file, tool, args.clone(), &bins).await;
    assert_eq!(reference, expected, "mcpGraph 0.1.23 on {name}");

    // mcpflow runs the 0.1.23 file with 0.1.23's meaning, and the migrated file the same way.
    let dir = tempfile::tempdir().expect("tempdir");
    let fixture = common::fixture();
    let config = |path: &Path| {
        // mcpflow resolves the command itself: name the fixture by its path.
        let text = std::fs::read_to_string(path).expect("read");
        let local = dir.path().join(format!("local-{name}"));
        std::fs::write(
            &local,
            text.replace("\"mcpflow-fixture\"", &format!("{:?}", fixture.display())),
        )
        .expect("write");
        local
    };
    if recognised {
        assert_eq!(
            on_mcpflow(&config(&file), tool, &args),
            reference,
            "mcpflow on {name}"
        );
    } else {
        // Nothing in the file says 0.1.23 (no `target:`): mcpflow keeps the current meaning
        // and says, at the argument, what 0.1.23 did and how to migrate.
        let out = cli(
            &[
                "run",
                path_str(&config(&file)),
                tool,
                "--args",
                &args.to_string(),
            ],
            None,
        );
        let said = stderr(&out);
        assert!(
            said.contains("mcpGraph 0.1.23 evaluated it as JSONata")
                && said.contains("mcpflow migrate"),
            "{said}"
        );
    }
    let moved = migrated(&file, dir.path());
    assert_eq!(
        on_mcpflow(&config(&moved), tool, &args),
        reference,
        "mcpflow on {name} after migrate"
    );
}

#[tokio::test]
async fn a_switch_routing_by_target_runs_as_on_mcpgraph_0_1_23() {
    // The exit checks `$previousNode() = "exit_sum"`: a switch's output is the id it chose.
    same_everywhere(
        "loop_big_mcpgraph.yaml",
        "sum_to_n",
        json!({"n": 7}),
        json!({"sum": 28}),
        true,
    )
    .await;
}

#[tokio::test]
async fn a_dollar_string_argument_is_an_expression_as_on_mcpgraph_0_1_23() {
    same_everywhere(
        "echo_graph_mcpgraph.yaml",
        "echo_graph",
        json!({"x": 21}),
        json!({"x": 21, "doubled": 42}),
        false,
    )
    .await;
}
