//! Writing to stdout without panicking when the reader has gone (`mcpflow runs show ID | head`).
//!
//! `println!` panics on a closed pipe (Rust ignores SIGPIPE, so the write fails with EPIPE).
//! Restoring SIGPIPE's default would instead kill the process on a write to a dead upstream
//! child's stdin, so every command prints through here: a broken pipe ends the output quietly,
//! as coreutils do, and the command keeps the exit code its own work earned.

use std::io::{ErrorKind, Write};
use std::process::ExitCode;

/// Writes `text` and a newline to stdout, flushed. `Ok(false)` when the reader has gone.
pub fn line(text: &str) -> std::io::Result<bool> {
    let mut out = std::io::stdout().lock();
    let written = out
        .write_all(text.as_bytes())
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush());
    match written {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(e),
    }
}

/// Prints `text` as one line and answers `code`; a closed stdout is not the command's failure,
/// another write error is.
pub fn emit(text: &str, code: ExitCode) -> ExitCode {
    match line(text) {
        Ok(_) => code,
        Err(e) => {
            eprintln!("mcpflow: cannot write to stdout: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Prints `value` as pretty JSON and answers `code`.
pub fn json(value: &impl serde::Serialize, code: ExitCode) -> ExitCode {
    match serde_json::to_string_pretty(value) {
        Ok(text) => emit(&text, code),
        Err(e) => {
            eprintln!("mcpflow: cannot print the result: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Writes `bytes` as they are (a file's text); a closed stdout is not an error.
pub fn raw(bytes: &[u8]) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() != ErrorKind::BrokenPipe => Err(e),
        _ => Ok(()),
    }
}
