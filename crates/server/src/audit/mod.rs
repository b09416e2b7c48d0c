//! The audit log (issue #18): one line per `tools/call` — who called, which tool, the outcome,
//! how long it took, the run it started — to stderr (a `tracing` line at info under the target
//! `mcpflow::audit`), to a file of JSON lines and to the store's `audit` table. A call refused
//! before the handler (401, 403, 429 by `mcpflow_auth`'s middleware; a scope missing over
//! stdio) leaves its line too. Never an argument value, a result, a key or a token: only names
//! the config or the caller's identity gives, and the tool's name as the client wrote it, cut.
//!
//! Nothing is written on the request path but the stderr line: the file has a thread of its
//! own and the store a task, each behind a bounded queue; a line that finds its queue full is
//! dropped and counted (`mcpflow_audit_dropped_total`, and a warning at most every 10 s), never
//! waited for and never lost in silence.

mod call;
mod file;
mod store;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use mcpflow_auth::Principal;
use mcpflow_auth::http::Refused;
use mcpflow_store::{AuditRow, Store, now_ms};

use crate::error::ServerError;

pub(crate) use call::{Call, RunNote};

pub(crate) const TARGET: &str = "mcpflow::audit";

/// A tool's name longer than this (a client may send anything, before it is even known) is cut.
const MAX_TOOL_CHARS: usize = 128;

/// How long [`Audit::finish`] waits for each sink to write what it holds.
const FINISH_PATIENCE: Duration = Duration::from_secs(5);

/// Where the audit lines go (the config's `audit:` section, made concrete by the binary).
#[derive(Debug, Default)]
pub struct AuditOptions {
    /// A `tracing` line per call on stderr.
    pub stderr: bool,
    /// A file the lines are appended to, one JSON object a line.
    pub file: Option<PathBuf>,
    /// The store's `audit` table.
    pub store: Option<Arc<dyn Store>>,
}

/// The audit log of a serving process: built once at start, outliving reloads. Cheap to clone.
#[derive(Clone)]
pub struct Audit {
    inner: Arc<Inner>,
}

struct Inner {
    stderr: bool,
    file: Option<file::FileSink>,
    store: Option<store::StoreSink>,
}

impl std::fmt::Debug for Audit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Audit")
            .field("stderr", &self.inner.stderr)
            .field("file", &self.inner.file.is_some())
            .field("store", &self.inner.store.is_some())
            .finish()
    }
}

impl Audit {
    /// Opens the file (created if missing, appended to) and starts the writers. With a store,
    /// call it inside the Tokio runtime that will serve.
    pub fn start(options: AuditOptions) -> Result<Audit, ServerError> {
        let file = match &options.file {
            Some(path) => Some(file::FileSink::open(path).map_err(|e| {
                ServerError::Audit(format!(
                    "cannot open the audit file {}: {e}",
                    path.display()
                ))
            })?),
            None => None,
        };
        Ok(Audit {
            inner: Arc::new(Inner {
                stderr: options.stderr,
                file,
                store: options.store.map(store::StoreSink::start),
            }),
        })
    }

    /// The file is opened again (by its path) before the next line: how it is rotated (move
    /// it away, then SIGHUP).
    pub fn reopen(&self) {
        if let Some(file) = &self.inner.file {
            file.reopen();
        }
    }

    /// Waits (a few seconds at most) until what the sinks hold is written: at exit.
    pub async fn finish(&self) {
        if let Some(store) = &self.inner.store {
            store.flush(FINISH_PATIENCE).await;
        }
        if let Some(file) = &self.inner.file {
            file.flush(FINISH_PATIENCE).await;
        }
    }

    /// Lines the file and the store could not take or write, since start.
    pub fn dropped(&self) -> u64 {
        let file = self.inner.file.as_ref().map_or(0, |f| f.drops.count());
        let store = self.inner.store.as_ref().map_or(0, |s| s.drops.count());
        file + store
    }

    /// The line of a call answered outside the MCP handler (another face of the listener):
    /// `principal` as access control found it (`None`: its credential proved nothing), the
    /// tool as asked, the outcome (`ok`, `tool_error`, `forbidden`, …), and its run if any.
    pub fn record_call(
        &self,
        principal: Option<&Principal>,
        tool: &str,
        outcome: &'static str,
        took: Duration,
        run_id: Option<&str>,
    ) {
        self.record(row(
            principal,
            tool,
            outcome,
            took,
            run_id.map(str::to_owned),
        ));
    }

    pub(crate) fn record(&self, row: AuditRow) {
        if self.inner.stderr {
            tracing::info!(
                target: TARGET,
                subject = row.subject.as_deref().unwrap_or(""),
                via = row.via.as_deref().unwrap_or(""),
                key = row.key.as_deref().unwrap_or(""),
                tool = row.tool,
                outcome = row.outcome,
                ms = row.duration_ms,
                run = row.run_id.as_deref().unwrap_or(""),
                "tools/call"
            );
        }
        match (&self.inner.file, &self.inner.store) {
            (Some(file), Some(store)) => {
                file.push(row.clone());
                store.push(row);
            }
            (Some(file), None) => file.push(row),
            (None, Some(store)) => store.push(row),
            (None, None) => {}
        }
    }

    /// The calls access control refused before the handler: one line each.
    pub(crate) fn refused(&self, refused: &Refused, took: Duration) {
        for tool in &refused.tools {
            self.record(row(
                refused.principal.as_ref(),
                tool,
                refused.outcome,
                took,
                None,
            ));
        }
    }
}

/// The row of one call.
pub(crate) fn row(
    principal: Option<&Principal>,
    tool: &str,
    outcome: &'static str,
    took: Duration,
    run_id: Option<String>,
) -> AuditRow {
    AuditRow {
        at: now_ms(),
        subject: principal.map(|p| p.subject().to_owned()),
        via: principal.map(|p| p.via().as_str().to_owned()),
        key: principal.and_then(|p| p.key()).map(str::to_owned),
        tool: cut(tool),
        outcome: outcome.to_owned(),
        duration_ms: i64::try_from(took.as_millis()).unwrap_or(i64::MAX),
        run_id,
    }
}

fn cut(tool: &str) -> String {
    match tool.char_indices().nth(MAX_TOOL_CHARS) {
        Some((at, _)) => format!("{}…", &tool[..at]),
        None => tool.to_owned(),
    }
}

/// The HTTP layer outside access control: a response that refused calls
/// (`mcpflow_auth::http::Refused`) leaves their lines.
pub(crate) async fn refusals(
    axum::extract::State(audit): axum::extract::State<Audit>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let started = std::time::Instant::now();
    let mut response = next.run(request).await;
    if let Some(refused) = response.extensions_mut().remove::<Refused>() {
        audit.refused(&refused, started.elapsed());
    }
    response
}

/// Lines a sink dropped: counted, exported as `mcpflow_audit_dropped_total{sink}`, and warned
/// about at most every [`WARN_EVERY_MS`].
#[derive(Debug)]
pub(crate) struct Drops {
    sink: &'static str,
    count: AtomicU64,
    warned_at: AtomicI64,
}

const WARN_EVERY_MS: i64 = 10_000;

impl Drops {
    fn new(sink: &'static str) -> Drops {
        Drops {
            sink,
            count: AtomicU64::new(0),
            warned_at: AtomicI64::new(i64::MIN),
        }
    }

    pub(crate) fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    fn add(&self, lines: u64, why: &dyn std::fmt::Display) {
        let total = self.count.fetch_add(lines, Ordering::Relaxed) + lines;
        mcpflow_telemetry::metrics::audit_dropped(self.sink, lines);
        let now = now_ms();
        let last = self.warned_at.load(Ordering::Relaxed);
        if now.saturating_sub(last) >= WARN_EVERY_MS
            && self
                .warned_at
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            tracing::warn!(
                sink = self.sink,
                dropped = total,
                "audit lines dropped: {why}"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_tool_names_are_cut_on_a_character() {
        assert_eq!(cut("echo"), "echo");
        let long = "é".repeat(300);
        let cut = cut(&long);
        assert_eq!(cut.chars().count(), MAX_TOOL_CHARS + 1);
        assert!(cut.ends_with('…'));
    }

    #[test]
    fn a_refused_callers_row_names_no_one() {
        let r = row(
            None,
            "echo",
            "unauthenticated",
            Duration::from_millis(3),
            None,
        );
        assert_eq!((r.subject, r.via, r.key), (None, None, None));
        assert_eq!(
            (r.tool.as_str(), r.outcome.as_str(), r.duration_ms),
            ("echo", "unauthenticated", 3)
        );
    }
}
