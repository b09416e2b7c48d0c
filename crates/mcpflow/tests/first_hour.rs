//! The small things a newcomer reaches for in the first hour (#22): shell completions, the
//! environment variables in `--help`, a `$schema` key in a config, run ids by prefix,
//! `sessionId` in the CLI's JSON as over MCP, and a LICENSE that is the one Cargo.toml names.
mod common;

use std::path::PathBuf;

use common::{cli, repo_example, stderr, stdout_json};
use serde_json::Value;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn completions_are_printed_for_each_shell() {
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef mcpflow"),
        ("fish", "complete -c mcpflow"),
        ("elvish", "mcpflow"),
        ("powershell", "mcpflow"),
    ] {
        let out = cli(&["completions", shell], None);
        assert!(out.status.success(), "{shell}: {}", stderr(&out));
        let script = String::from_utf8_lossy(&out.stdout);
        assert!(script.contains(marker), "{shell}: {script}");
        // Subcommands and their flags are in it.
        assert!(
            script.contains("sessions") && script.contains("allowed-host"),
            "{shell}"
        );
    }
    let out = cli(&["completions", "tcsh"], None);
    assert_eq!(
        out.status.code(),
        Some(2),
        "an unknown shell is a usage error"
    );
}

#[test]
fn help_lists_the_environment_variables() {
    let out = cli(&["--help"], None);
    assert!(out.status.success(), "{}", stderr(&out));
    let help = String::from_utf8_lossy(&out.stdout);
    for var in ["MCPFLOW_LOG", "MCPFLOW_WORKER_THREADS"] {
        assert!(help.contains(var), "{var} in:\n{help}");
    }
}

/// `"$schema": "./mcpflow.schema.json"` (what `mcpflow schema` writes) at the top of a config
/// is for editors: it validates and runs, and the schema itself lists it.
#[test]
fn a_schema_key_is_accepted_at_the_top_of_a_config() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sum = std::fs::read_to_string(repo_example("sum.yaml")).expect("sum.yaml");
    let path = dir.path().join("sum.yaml");
    std::fs::write(
        &path,
        format!("# yaml-language-server: $schema=./mcpflow.schema.json\n\"$schema\": \"./mcpflow.schema.json\"\n{sum}"),
    )
    .expect("write");
    let p = path.to_str().expect("utf-8");
    let out = cli(&["validate", p], None);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = cli(&["run", p, "sum_to_n", "--args", r#"{"n": 4}"#], None);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout_json(&out)["sum"], 10);

    let schema = stdout_json(&cli(&["schema"], None));
    assert!(
        schema["properties"]["$schema"].is_object(),
        "{}",
        schema["properties"]
    );
    // Anything else at the top is still refused.
    std::fs::write(&path, format!("\"$schemas\": \"x\"\n{sum}")).expect("write");
    let out = cli(&["validate", p], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("$schemas"), "{}", stderr(&out));
}

#[test]
fn runs_show_takes_a_unique_prefix_of_a_run_id() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state = dir.path().join("state.db");
    let state = state.to_str().expect("utf-8");
    let sum = repo_example("sum.yaml");
    let sum = sum.to_str().expect("utf-8");
    for n in 1..=3 {
        let args = format!(r#"{{"n": {n}}}"#);
        let out = cli(
            &["run", sum, "sum_to_n", "--args", &args, "--state", state],
            None,
        );
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let listed = stdout_json(&cli(&["runs", "list", "--json", "--state", state], None));
    let ids: Vec<String> = listed
        .as_array()
        .expect("a list")
        .iter()
        .map(|r| r["id"].as_str().expect("id").to_owned())
        .collect();
    let id = &ids[0];
    // The shortest prefix no other id shares.
    let unique = (1..=id.len())
        .map(|n| &id[..n])
        .find(|p| ids.iter().filter(|other| other.starts_with(p)).count() == 1)
        .expect("ids differ");
    let shown = cli(&["runs", "show", unique, "--json", "--state", state], None);
    assert!(shown.status.success(), "{}", stderr(&shown));
    assert_eq!(stdout_json(&shown)["run"]["id"], Value::String(id.clone()));

    let none = cli(&["runs", "show", "zz-no-such", "--state", state], None);
    assert_eq!(none.status.code(), Some(1));
    assert!(stderr(&none).contains("runs list"), "{}", stderr(&none));
    // The empty prefix starts every id: refused, never the first one found.
    let shared = cli(&["runs", "show", "", "--state", state], None);
    assert_eq!(shared.status.code(), Some(1));
}

/// The waiting handle (from `run`, as over MCP) and `sessions list|show --json` both name the
/// session's id `sessionId`.
#[test]
fn the_cli_json_names_a_session_sessionid_as_the_handle_does() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("approval.yaml");
    std::fs::copy(repo_example("approval.yaml"), &config).expect("copy");
    let config = config.to_str().expect("utf-8");
    let handle = stdout_json(&cli(
        &["run", config, "order", "--args", r#"{"item": "tea"}"#],
        None,
    ));
    let id = handle["sessionId"]
        .as_str()
        .expect("sessionId in the handle");
    let listed = stdout_json(&cli(
        &["sessions", "list", "--json", "--config", config],
        None,
    ));
    assert_eq!(listed[0]["sessionId"], id, "{listed}");
    let shown = stdout_json(&cli(
        &["sessions", "show", id, "--json", "--config", config],
        None,
    ));
    assert_eq!(shown["sessionId"], id, "{shown}");
}

#[test]
fn the_license_file_is_the_one_cargo_toml_names() {
    let manifest = std::fs::read_to_string(repo().join("Cargo.toml")).expect("Cargo.toml");
    let license = manifest
        .lines()
        .find_map(|l| l.strip_prefix("license = "))
        .expect("a license in the workspace manifest")
        .trim_matches('"');
    assert_eq!(license, "Apache-2.0");
    let text = std::fs::read_to_string(repo().join("LICENSE")).expect("a LICENSE file");
    assert!(text.contains("Apache License") && text.contains("Version 2.0, January 2004"));
    assert!(
        text.contains("END OF TERMS AND CONDITIONS"),
        "the whole license"
    );
}

/// A comment added to the config leaves a waiting session continuable; so does a change to
/// the graph (the session goes on on the version it started on, kept in the store); a change
/// its author marks with a new `revision` refuses the continue and says what to do.
#[test]
fn a_waiting_session_goes_on_on_its_version_unless_the_tool_revision_changed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("approval.yaml");
    std::fs::copy(repo_example("approval.yaml"), &path).expect("copy");
    let config = path.to_str().expect("utf-8");
    let start = || {
        let out = cli(
            &["run", config, "order", "--args", r#"{"item": "tea"}"#],
            None,
        );
        assert!(out.status.success(), "{}", stderr(&out));
        stdout_json(&out)["sessionId"]
            .as_str()
            .expect("sessionId")
            .to_owned()
    };
    let resume = |id: &str| {
        cli(
            &[
                "sessions",
                "continue",
                id,
                "--input",
                r#"{"quantity": 2}"#,
                "--config",
                config,
            ],
            None,
        )
    };
    let original = std::fs::read_to_string(&path).expect("read");

    let first = start();
    std::fs::write(&path, format!("# a note added later\n{original}")).expect("write");
    let done = resume(&first);
    assert!(done.status.success(), "{}", stderr(&done));
    assert_eq!(stdout_json(&done)["total"], 9.0);

    let second = start();
    let changed = original.replace("? 4.5 : 3", "? 5 : 3");
    std::fs::write(&path, &changed).expect("write");
    let done = resume(&second);
    assert!(done.status.success(), "{}", stderr(&done));
    assert_eq!(
        stdout_json(&done)["total"],
        9.0,
        "finished on the graph it started with"
    );

    let third = start();
    assert_eq!(
        stdout_json(&resume(&start()))["total"],
        10.0,
        "new runs use the change"
    );
    std::fs::write(
        &path,
        changed.replace(
            "  - name: \"order\"\n",
            "  - name: \"order\"\n    revision: 2\n",
        ),
    )
    .expect("write");
    let refused = resume(&third);
    assert_eq!(refused.status.code(), Some(1));
    let why = stderr(&refused);
    assert!(
        why.contains("revision 0 of tool `order`")
            && why.contains("revision 2")
            && why.contains("cancel"),
        "{why}"
    );
}
