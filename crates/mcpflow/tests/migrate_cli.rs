//! A file written for mcpGraph 0.1.23 (`npx mcpgraph`), the repo's own benchmark config: `run`
//! gives 0.1.23's result with a warning naming the version and the fix, and after
//! `mcpflow migrate --in-place` the same result with no warning and every comment kept.

mod common;

use std::path::PathBuf;

use common::{cli, stderr, stdout_json};
use serde_json::json;

fn bench(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../bench/configs")
        .join(name)
}

fn sum(config: &str) -> std::process::Output {
    cli(&["run", config, "sum_to_n", "--args", r#"{"n": 5}"#], None)
}

#[test]
fn a_0_1_23_file_runs_with_a_warning_and_migrates_in_place() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("loop.yaml");
    let original = std::fs::read_to_string(bench("loop_big_mcpgraph.yaml")).expect("read");
    std::fs::write(&file, &original).expect("copy");
    let file = file.to_str().expect("utf-8");

    let before = sum(file);
    assert!(before.status.success(), "{}", stderr(&before));
    assert_eq!(stdout_json(&before), json!({"sum": 15}));
    let warned = stderr(&before);
    assert!(
        warned.contains("mcpGraph 0.1.23") && warned.contains("mcpflow migrate"),
        "{warned}"
    );

    // To stdout first: the file is untouched.
    let printed = cli(&["migrate", file], None);
    assert!(printed.status.success(), "{}", stderr(&printed));
    let text = String::from_utf8(printed.stdout).expect("utf-8");
    assert!(text.contains("next: \"exit_sum\"  # Default"), "{text}");
    assert_eq!(std::fs::read_to_string(file).expect("read"), original);

    let migrated = cli(&["migrate", file, "--in-place"], None);
    assert!(migrated.status.success(), "{}", stderr(&migrated));
    assert!(migrated.stdout.is_empty());
    assert_eq!(std::fs::read_to_string(file).expect("read"), text);
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .expect("list")
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .collect();
    assert_eq!(leftovers.len(), 1, "no temporary file left: {leftovers:?}");

    let after = sum(file);
    assert!(after.status.success(), "{}", stderr(&after));
    assert_eq!(stdout_json(&after), json!({"sum": 15}));
    assert!(stderr(&after).is_empty(), "{}", stderr(&after));
    assert_eq!(
        stdout_json(&sum(bench("loop_big.yaml").to_str().expect("utf-8"))),
        json!({"sum": 15})
    );
}
