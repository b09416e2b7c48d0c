//! The one hook sequence, the same for proxied traffic and for graph tools: `pre` hooks, the
//! call, `post` hooks.
//!
//! A `tools/list` hook sees and may reshape a listing; a `tools/call` hook sees `{name,
//! arguments}` before the call (and may rewrite the arguments or reject it; the client reads
//! the message as a tool error) and the complete result after (and may rewrite it). For graph
//! tools `metadata.serverName` is null, and the companions of a tool that waits
//! (`NAME_continue`, …) are graph tools too, as is a name no tool has: a `pre` hook sees the
//! call before it fails as unknown.
//!
//! A `post` hook sees only complete results: an "input required" answer, or the handle of a
//! tool that waits, passes unchanged; the call is not over yet.

use std::future::Future;

use mcpflow_model::proxy::{HookMethod, HookPhase};
use rmcp::ErrorData as McpError;
use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock, Tool};
use serde_json::{Map, Value, json};

use super::{Hooks, Traffic, Verdict};

impl Hooks {
    /// Whether any hook runs around `target` (in either phase): without one, a caller can
    /// make the call itself instead of nesting it in [`Hooks::around_call`].
    pub fn wraps(&self, target: Traffic<'_>) -> bool {
        self.any(HookPhase::Pre, target) || self.any(HookPhase::Post, target)
    }

    /// `tools` after the `tools/list` hooks of `target`; none when a hook rejects.
    pub async fn around_list(&self, target: Traffic<'_>, tools: Vec<Tool>) -> Vec<Tool> {
        debug_assert!(matches!(target.method, HookMethod::ToolsList));
        let (pre, post) = (
            self.any(HookPhase::Pre, target),
            self.any(HookPhase::Post, target),
        );
        if !pre && !post {
            return tools;
        }
        let whose = target.server.unwrap_or("the graph tools");
        let params = match Box::pin(self.pre(target, json!({}))).await {
            Verdict::Continue(params) => params,
            Verdict::Reject(message) => {
                let message = message.escape_debug().to_string();
                tracing::info!(listing = whose, %message, "tools/list rejected by a hook");
                return Vec::new();
            }
        };
        if !post {
            return tools;
        }
        let response = json!({ "tools": tools });
        match Box::pin(self.post(target, &params, response)).await {
            Verdict::Continue(mut response) => {
                match serde_json::from_value::<Vec<Tool>>(response["tools"].take()) {
                    Ok(tools) => tools,
                    Err(e) => {
                        tracing::warn!(listing = whose, error = %e, "a tools/list hook returned tools that are not MCP tools; listing none");
                        Vec::new()
                    }
                }
            }
            Verdict::Reject(message) => {
                let message = message.escape_debug().to_string();
                tracing::info!(listing = whose, %message, "tools/list rejected by a hook");
                Vec::new()
            }
        }
    }

    /// Runs the `tools/call` hooks of `target` around `call`, a call of the tool the hooks
    /// know as `name` with `arguments`.
    pub async fn around_call<F, Fut>(
        &self,
        target: Traffic<'_>,
        name: &str,
        arguments: Option<Map<String, Value>>,
        call: F,
    ) -> Result<CallToolResponse, McpError>
    where
        F: FnOnce(Option<Map<String, Value>>) -> Fut,
        Fut: Future<Output = Result<CallToolResponse, McpError>>,
    {
        debug_assert!(matches!(target.method, HookMethod::ToolsCall));
        let post = self.any(HookPhase::Post, target);
        if !post && !self.any(HookPhase::Pre, target) {
            return call(arguments).await;
        }
        let params = json!({"name": name, "arguments": arguments.unwrap_or_default()});
        let params = match Box::pin(self.pre(target, params)).await {
            Verdict::Continue(params) => params,
            Verdict::Reject(message) => return Ok(rejected(message)),
        };
        let arguments = match params.get("arguments") {
            Some(Value::Object(a)) => a.clone(),
            _ => Map::new(),
        };
        let response = call(Some(arguments)).await?;
        let CallToolResponse::Complete(result) = response else {
            return Ok(response);
        };
        if !post {
            return Ok(result.into());
        }
        let response = serde_json::to_value(&result)
            .map_err(|e| McpError::internal_error(format!("result not JSON: {e}"), None))?;
        Ok(match Box::pin(self.post(target, &params, response)).await {
            Verdict::Continue(response) => match serde_json::from_value::<CallToolResult>(response)
            {
                Ok(result) => result.into(),
                Err(e) => rejected(format!(
                    "a post hook returned a response that is not a tool result: {e}"
                )),
            },
            Verdict::Reject(message) => rejected(message),
        })
    }
}

fn rejected(message: String) -> CallToolResponse {
    CallToolResult::error(vec![ContentBlock::text(message)]).into()
}
