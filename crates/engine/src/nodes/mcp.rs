//! The `mcp` node: a call to a tool of an upstream MCP server through the pool. Dropping the
//! call (a stop, a timeout, a failing sibling branch) cancels it at the upstream; while someone
//! observes the run, the upstream's progress notifications become events.

use std::sync::Arc;

use mcpflow_expr::{Scope, Template, Value};
use mcpflow_upstream::UpstreamError;
use serde_json::Value as Json;

use crate::error::{RunError, RunErrorKind};
use crate::event::Event;
use crate::frame::Frame;
use crate::output::{mcp_output, tool_error_message};
use crate::run::Executor;

impl Executor<'_> {
    pub(crate) async fn call(
        &self,
        id: &str,
        server: &str,
        tool: &str,
        args: Json,
    ) -> Result<Option<Value>, RunError> {
        let args = match args {
            Json::Object(map) => map,
            other => {
                return Err(RunError::new(
                    RunErrorKind::Expression,
                    Some(id),
                    format!("args must evaluate to an object, got {other}"),
                ));
            }
        };
        // Dropping the call (a stop, a timeout, a failing sibling branch) makes the client
        // send `notifications/cancelled` to the upstream.
        let listened = self.shared.events.is_some_and(|tx| tx.receiver_count() > 0);
        let result = if listened {
            self.call_with_progress(id, server, tool, args).await?
        } else {
            let identity = Some(self.shared.caller.identity());
            let call = self
                .shared
                .pool
                .call_tool_for(server, tool, args, None, identity);
            tokio::select! {
                r = call => r,
                _ = self.shared.control.cancelled().cancelled() => {
                    return Err(self.stop_error(id));
                }
            }
        };
        match result {
            Err(e @ UpstreamError::Timeout { .. }) => Err(RunError::new(
                RunErrorKind::Timeout,
                Some(id),
                e.to_string(),
            )),
            Err(e @ UpstreamError::Rejected { .. }) => {
                let hint = self.unknown_tool(server, tool).await;
                Err(RunError::new(
                    RunErrorKind::Upstream,
                    Some(id),
                    format!("{e}{hint}"),
                ))
            }
            Err(e) => Err(RunError::new(
                RunErrorKind::Upstream,
                Some(id),
                e.to_string(),
            )),
            Ok(r) if r.is_error => {
                let hint = self.unknown_tool(server, tool).await;
                Err(RunError::new(
                    RunErrorKind::ToolError,
                    Some(id),
                    format!(
                        "tool `{tool}` of `{server}` failed: {}{hint}",
                        tool_error_message(&r)
                    ),
                ))
            }
            Ok(r) => Ok(mcp_output(r).map(Value::from_json)),
        }
    }

    /// When a call the upstream refused or failed named a tool the upstream does not list:
    /// `; upstream `s` has no tool `t`; its tools: …` (with the closest name first), so the
    /// graph's author sees the typo, not only the upstream's own words. Empty otherwise, and
    /// when the upstream cannot be listed. Only on the failure path: a listing is cached.
    async fn unknown_tool(&self, server: &str, tool: &str) -> String {
        let Ok(tools) = self.shared.pool.list_tools(server).await else {
            return String::new();
        };
        if tools.iter().any(|t| t.name == tool) {
            return String::new();
        }
        let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        names.sort_by_key(|n| strsim::osa_distance(n, tool));
        let shown: Vec<&str> = names.iter().take(20).copied().collect();
        let more = names.len().saturating_sub(shown.len());
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        format!(
            "; upstream `{server}` has no tool `{tool}`; its tools: {}{more}",
            shown.join(", ")
        )
    }

    /// An upstream call whose progress notifications become [`Event::UpstreamProgress`].
    async fn call_with_progress(
        &self,
        id: &str,
        server: &str,
        tool: &str,
        args: serde_json::Map<String, Json>,
    ) -> Result<Result<mcpflow_upstream::ToolResult, UpstreamError>, RunError> {
        let (sink, mut progress) = tokio::sync::mpsc::unbounded_channel();
        let identity = Some(self.shared.caller.identity());
        let call = self
            .shared
            .pool
            .call_tool_for(server, tool, args, Some(sink), identity);
        tokio::pin!(call);
        let node_id: Arc<str> = id.into();
        loop {
            tokio::select! {
                r = &mut call => {
                    // The pool routes an upstream's progress before it returns the answer that
                    // followed it: what is queued now came first, and goes out first.
                    while let Ok(p) = progress.try_recv() {
                        self.emit(|| Event::UpstreamProgress {
                            node_id: node_id.clone(),
                            progress: p.progress,
                            total: p.total,
                            message: p.message,
                        });
                    }
                    return Ok(r);
                }
                Some(p) = progress.recv() => self.emit(|| Event::UpstreamProgress {
                    node_id: node_id.clone(),
                    progress: p.progress,
                    total: p.total,
                    message: p.message,
                }),
                _ = self.shared.control.cancelled().cancelled() => {
                    return Err(self.stop_error(id));
                }
            }
        }
    }
}

impl Executor<'_> {
    /// An mcp or call node's arguments; an undefined template gives `{}`.
    pub(crate) async fn render_args(
        &self,
        frame: &Frame<'_>,
        template: &Template,
        id: &str,
    ) -> Result<Json, RunError> {
        Ok(self
            .evaluate(
                frame,
                |scope| template.render(scope),
                || {
                    let template = template.clone();
                    move |scope: &Scope<'_>| template.render(scope)
                },
            )
            .await
            .map_err(|e| RunError::expression(id, e))?
            .unwrap_or(Json::Object(Default::default())))
    }
}
