//! What can go wrong when talking to an upstream. Every message names the server and says
//! what to do about it, because it often reaches a user with no other context.

use std::fmt::Write as _;

/// An upstream call that did not produce a tool result.
///
/// A tool that ran and reported a failure (`isError: true`) is *not* an error here: it is a
/// [`crate::ToolResult`] with `is_error` set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UpstreamError {
    #[error(
        "no upstream server named `{server}`; declare it under `mcpServers` (declared: {known})"
    )]
    UnknownServer { server: String, known: String },

    #[error(
        "upstream `{server}`: cannot start `{command}`: {reason}; check that the program is \
         installed, on PATH and executable, and that its `cwd` exists"
    )]
    Spawn {
        server: String,
        command: String,
        reason: String,
    },

    #[error(
        "upstream `{server}` (`{command}`) failed to start: {reason}{}; check its `args` and \
         `env` by running the command in a shell",
        tail(.stderr_tail)
    )]
    Start {
        server: String,
        command: String,
        reason: String,
        stderr_tail: String,
    },

    #[error(
        "upstream `{server}` (`{command}`) did not answer `initialize` within {timeout_ms} ms; \
         check that it is an MCP server speaking stdio (not a CLI waiting for input){}",
        tail(.stderr_tail)
    )]
    ConnectTimeout {
        server: String,
        command: String,
        timeout_ms: u64,
        stderr_tail: String,
    },

    #[error(
        "upstream `{server}` {status} while `{operation}` was in progress; it will be \
         restarted on the next call{}",
        tail(.stderr_tail)
    )]
    Crashed {
        server: String,
        /// `exited with code 1`, `was killed by signal 9`, `closed its stdout`, …
        status: String,
        operation: String,
        stderr_tail: String,
    },

    #[error(
        "upstream `{server}`: `{operation}` got no answer within {timeout_ms} ms and was \
         cancelled; raise `timeoutMs` for this server if it is only slow"
    )]
    Timeout {
        server: String,
        operation: String,
        timeout_ms: u64,
    },

    #[error(
        "upstream `{server}` refused `{operation}`: {message} (JSON-RPC error {code}); check \
         the tool name and its arguments against the server's `tools/list`"
    )]
    Rejected {
        server: String,
        operation: String,
        code: i32,
        message: String,
        /// The refusal's `data`, which the gateway passes on with it (a -32021 names the
        /// missing client capabilities there).
        data: Option<Box<serde_json::Value>>,
    },

    #[error(
        "upstream `{server}` answered `{operation}` with something mcpflow cannot use: \
         {reason}; the server may speak an incompatible MCP version"
    )]
    Protocol {
        server: String,
        operation: String,
        reason: String,
    },

    /// An answer that cannot be read (not JSON-RPC, over the line cap, under an id mcpflow
    /// never sent): the request it was for fails as soon as that is seen.
    #[error(
        "upstream `{server}` broke the protocol answering `{operation}`: {reason}; no answer \
         can come, so the call failed at once; check the server's version, and that nothing \
         but the server writes to its stdout"
    )]
    BrokenAnswer {
        server: String,
        operation: String,
        reason: String,
    },

    #[error(
        "upstream `{server}` has type `{kind}`, which this build does not support; use a stdio \
         server (`command`, `args`), `streamableHttp` or `sse`"
    )]
    Unsupported { server: String, kind: String },

    /// A remote upstream could not be connected to: bad URL or headers, refused connection,
    /// HTTP error, or a failed handshake. `url` never carries credentials or a query string.
    #[error("upstream `{server}` ({url}) could not be connected: {reason}{}", check(.reason))]
    Unreachable {
        server: String,
        url: String,
        reason: String,
    },

    #[error(
        "upstream `{server}` ({url}) did not complete the MCP handshake within {timeout_ms} ms; \
         check the URL and `type`, or raise `connectTimeoutMs` if the server is only slow"
    )]
    HandshakeTimeout {
        server: String,
        url: String,
        timeout_ms: u64,
    },

    /// The connection to a remote upstream broke while a request was under way; the next
    /// call connects again.
    #[error(
        "upstream `{server}` ({url}) was lost while `{operation}` was in progress: {reason}; \
         mcpflow connects again on the next call"
    )]
    Disconnected {
        server: String,
        url: String,
        operation: String,
        reason: String,
    },

    /// The upstream is being started (or restarted) in the background; nothing failed yet.
    #[error(
        "upstream `{server}` is starting; its tools are listed once it answers (clients are \
         told the list changed)"
    )]
    Starting { server: String },

    #[error("upstream `{server}` was shut down with its pool; create a new pool to call it again")]
    ShutDown { server: String },

    /// The caller cancelled the request (see `SendOptions::cancel`); it was cancelled upstream
    /// with `notifications/cancelled`.
    #[error("`{operation}` to upstream `{server}` was cancelled by its caller")]
    Cancelled { server: String, operation: String },
}

impl UpstreamError {
    /// The upstream server the error is about.
    pub fn server(&self) -> &str {
        match self {
            UpstreamError::UnknownServer { server, .. }
            | UpstreamError::Spawn { server, .. }
            | UpstreamError::Start { server, .. }
            | UpstreamError::ConnectTimeout { server, .. }
            | UpstreamError::Crashed { server, .. }
            | UpstreamError::Timeout { server, .. }
            | UpstreamError::Rejected { server, .. }
            | UpstreamError::Protocol { server, .. }
            | UpstreamError::BrokenAnswer { server, .. }
            | UpstreamError::Unsupported { server, .. }
            | UpstreamError::Unreachable { server, .. }
            | UpstreamError::HandshakeTimeout { server, .. }
            | UpstreamError::Disconnected { server, .. }
            | UpstreamError::ShutDown { server }
            | UpstreamError::Starting { server }
            | UpstreamError::Cancelled { server, .. } => server,
        }
    }

    /// The last lines the server wrote to stderr, when the error comes with them.
    pub fn stderr_tail(&self) -> Option<&str> {
        match self {
            UpstreamError::Start { stderr_tail, .. }
            | UpstreamError::ConnectTimeout { stderr_tail, .. }
            | UpstreamError::Crashed { stderr_tail, .. } => Some(stderr_tail),
            _ => None,
        }
    }
}

/// The general advice for a remote upstream, unless the reason already says what to check.
fn check(reason: &str) -> &'static str {
    if reason.contains("; check") {
        ""
    } else {
        "; check the URL, that the server is running and speaks MCP over this `type`, and its \
         `headers`"
    }
}

/// How many of the last stderr lines an error message carries, and how long each may be.
const TAIL_LINES: usize = 3;
const TAIL_LINE_CHARS: usize = 200;

/// Renders a stderr tail as the end of an error message, on the message's one line: the last
/// few non-blank lines, ` | ` between them (the whole tail stays in `stderr_tail`).
fn tail(stderr_tail: &str) -> String {
    let lines: Vec<&str> = stderr_tail
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if lines.is_empty() {
        return "; it wrote nothing to stderr".to_string();
    }
    let mut out = String::from("; its stderr ended with: ");
    let shown = &lines[lines.len().saturating_sub(TAIL_LINES)..];
    for (i, line) in shown.iter().enumerate() {
        if i > 0 {
            out.push_str(" | ");
        }
        let cut: String = line.chars().take(TAIL_LINE_CHARS).collect();
        let _ = write!(out, "{cut}");
        if cut.len() < line.len() {
            out.push('…');
        }
    }
    out
}
