//! `mcpflow serve` over stdio when only one of stdin and stdout is a pipe (`… | mcpflow serve
//! x.yaml` in a terminal, or stdout redirected to a file): it must serve, reading stdin
//! blocking, even when its first read finds the pipe empty. Converting stdin to an async pipe
//! before finding stdout unusable once left stdin non-blocking, and the first empty read
//! ended the server with "cannot read stdin: Resource temporarily unavailable".

mod common;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{mcpflow, repo_example};

#[test]
fn a_pipe_for_stdin_and_a_file_for_stdout_serve() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let out_path = dir.path().join("out.jsonl");
    let out = std::fs::File::create(&out_path).expect("the output file");
    let mut child = Command::new(mcpflow())
        .args(["serve", &repo_example("sum.yaml").to_string_lossy()])
        .stdin(Stdio::piped())
        .stdout(out)
        .stderr(Stdio::piped())
        .spawn()
        .expect("mcpflow starts");
    // Nothing to read yet when the server first reads.
    std::thread::sleep(Duration::from_millis(500));
    let mut stdin = child.stdin.take().expect("stdin");
    let lines = [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sum_to_n","arguments":{"n":4}}}"#,
    ];
    for line in lines {
        // A server that already ended closed its end: the write fails, the checks below say why.
        let _ = writeln!(stdin, "{line}");
        let _ = stdin.flush();
        std::thread::sleep(Duration::from_millis(100));
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    let answered = |text: &str| text.contains(r#""id":2"#);
    let mut text = String::new();
    while Instant::now() < deadline {
        text = std::fs::read_to_string(&out_path).unwrap_or_default();
        if answered(&text) || child.try_wait().ok().flatten().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(stdin);
    let output = child.wait_with_output().expect("mcpflow ends");
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(
        answered(&text),
        "no answer to the call; stdout: {text}; stderr: {err}"
    );
    assert!(
        text.contains(r#"\"sum\": 10"#) || text.contains(r#"\"sum\":10"#),
        "{text}"
    );
    assert!(output.status.success(), "{:?}: {err}", output.status);
    assert!(!err.contains("cannot read stdin"), "{err}");
}
