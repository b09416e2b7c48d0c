//! One audited `tools/call` through the MCP handler: started before the server answers, ended
//! with its answer (`cancelled` when the client cancelled the request, though its stopped run
//! still answered), or, when the call's future is dropped (its connection went away), ended as
//! `cancelled` by the drop itself, so no call goes unlogged.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use mcpflow_auth::Principal;
use rmcp::model::CallToolResponse;
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};

use super::Audit;

/// Where a graph tool's call leaves the id of the run it started (or continued), for its audit
/// line: put in the request's extensions here, read into the call's `CallOptions` and set by
/// the server once the engine answers, so the line needs no second lookup. Proxied and
/// built-in tools leave it empty.
#[derive(Debug, Clone, Default)]
pub(crate) struct RunNote(Arc<OnceLock<Arc<str>>>);

impl RunNote {
    pub(crate) fn set(&self, run: &Arc<str>) {
        let _ = self.0.set(run.clone());
    }

    fn get(&self) -> Option<String> {
        self.0.get().map(|id| id.to_string())
    }
}

pub(crate) struct Call {
    audit: Audit,
    principal: Principal,
    tool: String,
    /// Hidden from the caller by its tool globs: answered as an unknown tool, audited as
    /// `forbidden`.
    hidden: bool,
    started: Instant,
    run: RunNote,
    /// Cancelled when the client cancels the request: its run stops and answers, but the call
    /// was cancelled, not failed.
    cancel: tokio_util::sync::CancellationToken,
    ended: bool,
}

impl Call {
    pub(crate) fn start(
        audit: &Audit,
        context: &mut RequestContext<RoleServer>,
        principal: Option<Principal>,
        tool: &str,
        hidden: bool,
    ) -> Call {
        let run = RunNote::default();
        context.extensions.insert(run.clone());
        // No access control ran (stdio without `auth:`): the call is the open caller's, as it
        // is over HTTP.
        let principal = principal.unwrap_or_else(|| open().clone());
        Call {
            audit: audit.clone(),
            principal,
            tool: tool.to_owned(),
            hidden,
            started: Instant::now(),
            run,
            cancel: context.ct.clone(),
            ended: false,
        }
    }

    pub(crate) fn end(mut self, answer: &Result<CallToolResponse, McpError>) {
        self.ended = true;
        let outcome = match answer {
            _ if self.hidden => "forbidden",
            _ if self.cancel.is_cancelled() => "cancelled",
            Ok(CallToolResponse::Complete(r)) if r.is_error == Some(true) => "tool_error",
            Ok(CallToolResponse::InputRequired(_)) => "input_required",
            Ok(CallToolResponse::Task(_)) => "task",
            Ok(_) => "ok",
            Err(e) if e.code == crate::server::TOO_MANY_RUNS => "too_many_runs",
            Err(_) => "error",
        };
        self.write(outcome);
    }

    fn write(&self, outcome: &'static str) {
        let row = super::row(
            Some(&self.principal),
            &self.tool,
            outcome,
            self.started.elapsed(),
            self.run.get(),
        );
        self.audit.record(row);
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        if !self.ended {
            self.write("cancelled");
        }
    }
}

fn open() -> &'static Principal {
    static OPEN: OnceLock<Principal> = OnceLock::new();
    OPEN.get_or_init(Principal::open)
}
