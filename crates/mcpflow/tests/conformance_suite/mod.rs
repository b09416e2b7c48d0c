#![allow(dead_code)]
//! Runs the official MCP conformance suite (`scripts/conformance`) for the tests: any release's
//! scenarios through [`conformance`], and the 2026-07-28 server scenarios (`-r 2026-07-28`,
//! release 0.2.0-alpha.12) against a URL through [`run`]. That scenario list comes from the
//! suite's own requirement set, so a scenario it adds fails here rather than being forgotten.
use std::path::PathBuf;
use std::process::{Command, Stdio};

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs `scripts/conformance ARGS…`; its stdout, or a panic with the suite's report.
pub fn conformance(args: &[&str]) -> String {
    let out = Command::new("bash")
        .arg(repo_root().join("scripts/conformance"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run scripts/conformance (needs bash and npm)");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "scripts/conformance {args:?} failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    // A run that passed ran every scenario it was given.
    if args.contains(&"server") {
        assert!(
            stderr.contains(" 0 failed"),
            "unexpected summary:\n{stderr}"
        );
    }
    eprintln!("{stderr}");
    stdout
}

/// Every server scenario the 2026-07-28 requirement set names, the pending (unscored) ones
/// included but not the extensions (tasks-*, sep-2640-*), each pinned to the 2026-07-28 wire.
pub fn required_server_scenarios() -> Vec<String> {
    let listing = conformance(&[
        "-r",
        "2026-07-28",
        "list",
        "--server",
        "--requirements",
        "2026-07-28",
    ]);
    let mut names = Vec::new();
    let mut wanted = false;
    for line in listing.lines() {
        let trimmed = line.trim();
        if !line.starts_with(' ') && !trimmed.is_empty() {
            wanted = trimmed.starts_with("Server scenarios");
            continue;
        }
        if let Some(kind) = trimmed.strip_suffix(':') {
            // "extension (16)", "pending (3)", …: only the pending server scenarios count.
            wanted = kind.starts_with("pending") || kind.starts_with("added-after-release");
            continue;
        }
        let Some(entry) = trimmed.strip_prefix("- ") else {
            continue;
        };
        let unscored = entry.ends_with(']');
        if wanted
            && (!unscored || entry.ends_with("[server]"))
            && let Some(name) = entry.split_whitespace().next()
        {
            names.push(format!("{name}@2026-07-28"));
        }
    }
    assert!(
        names.len() >= 37,
        "the 2026-07-28 requirement set lists too few server scenarios: {names:?}"
    );
    names
}

/// Runs `scenarios` against `url` in strict mode (a WARNING fails a scenario too).
pub fn run(url: &str, scenarios: &[String]) {
    let mut args = vec!["-s", "-r", "2026-07-28", "server", url];
    args.extend(scenarios.iter().map(String::as_str));
    conformance(&args);
}
