//! The run API checked against its own OpenAPI document by schemathesis (PyPI, pinned in
//! `scripts/conformance-clients`, which scripts/test runs to install it): no server error, and
//! every answer's status, content type and body as the document says. The event streams are
//! left out: they follow a run until it ends (or forever, for all runs), which a request-and-
//! check tester cannot read to an end; tests/run_api.rs and crates/api/tests read them.
mod http_common;

use std::process::Command;

use http_common::{config, repo_root, start};

#[test]
fn the_run_api_conforms_to_its_openapi_document() {
    let installed = std::env::var("MCPFLOW_CONFORMANCE_CACHE")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| {
            std::path::PathBuf::from(std::env::var("HOME").unwrap_or_default())
                .join(".cache/mcpflow-conformance")
        })
        .join("schemathesis-4.32.5/bin/schemathesis");
    let python = Command::new("python3").arg("--version").output().is_ok();
    if !installed.exists() && !python {
        eprintln!("skipped: no python3 to install schemathesis (scripts/test installs it in CI)");
        return;
    }
    let server = start(&config("run_api.yaml"), &[]);
    let schema = format!("{}/api/openapi.json", server.base());
    let out = Command::new("bash")
        .arg(repo_root().join("scripts/conformance-clients"))
        .args([
            "schemathesis",
            "run",
            &schema,
            "--checks",
            "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance",
            "--exclude-path-regex",
            "events$",
            "--phases",
            "examples,coverage,fuzzing",
            "--max-examples",
            "40",
            // One worker: with two, hypothesis's lambda-source cache raced once ("AST
            // constructor recursion depth mismatch", a runtime error of the tool, not a finding).
            "--workers",
            "1",
            "--request-timeout",
            "10",
            "--seed",
            "1",
        ])
        .output()
        .expect("schemathesis runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "schemathesis found problems ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}
