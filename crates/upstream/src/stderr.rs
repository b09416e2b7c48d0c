//! A child's stderr: kept as a bounded tail for error messages and forwarded to tracing.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio_util::sync::CancellationToken;

/// Lines kept for error messages. A crash report needs the last few lines, not the whole log.
const MAX_LINES: usize = 50;
/// Bytes kept in total; one long line cannot push out everything else beyond this.
const MAX_BYTES: usize = 8 * 1024;
/// A line longer than this is cut, so a child that never writes a newline cannot grow memory.
const MAX_LINE_BYTES: usize = 2 * 1024;

/// The last lines a child wrote to stderr.
#[derive(Debug, Default)]
pub(crate) struct StderrTail {
    lines: Mutex<Tail>,
    /// Cancelled when the child's stderr reached end of file.
    closed: CancellationToken,
}

#[derive(Debug, Default)]
struct Tail {
    lines: VecDeque<String>,
    bytes: usize,
}

impl StderrTail {
    fn push(&self, line: String) {
        let mut tail = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        tail.bytes += line.len();
        tail.lines.push_back(line);
        while tail.lines.len() > MAX_LINES || (tail.bytes > MAX_BYTES && tail.lines.len() > 1) {
            if let Some(old) = tail.lines.pop_front() {
                tail.bytes -= old.len();
            }
        }
    }

    /// The kept lines, oldest first, joined with newlines.
    pub(crate) fn snapshot(&self) -> String {
        let tail = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        tail.lines
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Waits until stderr is closed, or `limit` passes: a grandchild may hold it open forever.
    pub(crate) async fn drained(&self, limit: Duration) {
        let _ = tokio::time::timeout(limit, self.closed.cancelled()).await;
    }
}

/// Reads `stderr` line by line until it closes, into `tail` and to tracing at debug level.
pub(crate) fn spawn_reader(
    server: Arc<str>,
    mut stderr: impl AsyncRead + Unpin + Send + 'static,
    tail: Arc<StderrTail>,
) {
    tokio::spawn(async move {
        let mut chunk = [0u8; 4096];
        let mut line: Vec<u8> = Vec::new();
        let mut cut = false;
        let emit = |line: &mut Vec<u8>, cut: &mut bool| {
            let mut text = String::from_utf8_lossy(line)
                .trim_end_matches('\r')
                .to_string();
            if *cut {
                text.push_str(" […]");
            }
            tracing::debug!(target: "mcpflow_upstream::stderr", server = %server, "{text}");
            tail.push(text);
            line.clear();
            *cut = false;
        };
        loop {
            let n = match stderr.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            for &byte in &chunk[..n] {
                if byte == b'\n' {
                    emit(&mut line, &mut cut);
                } else if line.len() < MAX_LINE_BYTES {
                    line.push(byte);
                } else {
                    cut = true;
                }
            }
        }
        if !line.is_empty() {
            emit(&mut line, &mut cut);
        }
        tail.closed.cancel();
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_lines_within_both_bounds() {
        let tail = StderrTail::default();
        for i in 0..200 {
            tail.push(format!("line {i}"));
        }
        let snapshot = tail.snapshot();
        assert_eq!(snapshot.lines().count(), MAX_LINES);
        assert!(snapshot.ends_with("line 199"));
        assert!(snapshot.starts_with("line 150"));

        let tail = StderrTail::default();
        for _ in 0..10 {
            tail.push("x".repeat(MAX_LINE_BYTES));
        }
        assert!(tail.snapshot().len() <= MAX_BYTES + MAX_LINES);
    }

    #[tokio::test]
    async fn splits_lines_cuts_long_ones_and_keeps_an_unterminated_last_line() {
        let long = "y".repeat(MAX_LINE_BYTES + 10);
        let input = format!("first\r\n{long}\nlast without newline");
        let tail = Arc::new(StderrTail::default());
        spawn_reader(
            "test".into(),
            std::io::Cursor::new(input.into_bytes()),
            tail.clone(),
        );
        tail.closed.cancelled().await;
        let snapshot = tail.snapshot();
        let lines: Vec<&str> = snapshot.lines().collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0], "first");
        assert_eq!(lines[1].len(), MAX_LINE_BYTES + " […]".len());
        assert_eq!(lines[2], "last without newline");
    }
}
