//! Hooks on this config's own graph tools, for the hooks that opt in with `appliesTo: graph` or
//! `all`. The same contract as on proxied traffic: a `tools/list` hook sees and may reshape the
//! graph tools' listing, a `tools/call` hook sees `{name, arguments}` of a graph tool call before
//! it runs and its result after; `metadata.serverName` is null.
//!
//! A `post` hook sees only complete results: an "input required" answer or a task of a tool
//! that waits passes unchanged, the call is not over yet. The companions of a tool that waits
//! (`NAME_continue`, …) are graph tools here too, and so is a name no tool has: a `pre` hook
//! sees the call before it fails as unknown.

use std::future::Future;

use mcpflow_config::proxy::{HookMethod, HookPhase};
use rmcp::ErrorData as McpError;
use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock, Tool};
use serde_json::{Map, Value, json};

use super::{Hooks, Traffic, Verdict};

impl Hooks {
    /// The graph tools `client` sees after the `tools/list` hooks; none when a hook rejects.
    pub(crate) async fn list_graph_tools(
        &self,
        client: Option<&str>,
        tools: Vec<Tool>,
    ) -> Vec<Tool> {
        let target = Traffic::graph(HookMethod::ToolsList, None, client);
        let (pre, post) = (
            self.any(HookPhase::Pre, target),
            self.any(HookPhase::Post, target),
        );
        if !pre && !post {
            return tools;
        }
        let params = match self.pre(target, json!({})).await {
            Verdict::Continue(params) => params,
            Verdict::Reject(message) => {
                let message = message.escape_debug().to_string();
                tracing::info!(%message, "tools/list of the graph tools rejected by a hook");
                return Vec::new();
            }
        };
        if !post {
            return tools;
        }
        let response = json!({ "tools": tools });
        match self.post(target, &params, response).await {
            Verdict::Continue(mut response) => {
                match serde_json::from_value::<Vec<Tool>>(response["tools"].take()) {
                    Ok(tools) => tools,
                    Err(e) => {
                        tracing::warn!(error = %e, "a tools/list hook returned graph tools that are not MCP tools; listing none");
                        Vec::new()
                    }
                }
            }
            Verdict::Reject(message) => {
                let message = message.escape_debug().to_string();
                tracing::info!(%message, "tools/list of the graph tools rejected by a hook");
                Vec::new()
            }
        }
    }

    /// Runs the `tools/call` hooks around `call`, a call of graph tool `name`: `pre` hooks may
    /// rewrite its arguments or reject it (the client reads the message as a tool error),
    /// `post` hooks may rewrite its complete result.
    pub(crate) async fn call_graph_tool<F, Fut>(
        &self,
        name: &str,
        client: Option<&str>,
        arguments: Option<Map<String, Value>>,
        call: F,
    ) -> Result<CallToolResponse, McpError>
    where
        F: FnOnce(Option<Map<String, Value>>) -> Fut,
        Fut: Future<Output = Result<CallToolResponse, McpError>>,
    {
        let target = Traffic::graph(HookMethod::ToolsCall, Some(name), client);
        let post = self.any(HookPhase::Post, target);
        if !post && !self.any(HookPhase::Pre, target) {
            return call(arguments).await;
        }
        let params = json!({"name": name, "arguments": arguments.unwrap_or_default()});
        let params = match self.pre(target, params).await {
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
        Ok(match self.post(target, &params, response).await {
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

/// The calling client's name from its `initialize`, for `metadata.clientId`.
pub(crate) fn client_name(peer: &rmcp::service::Peer<rmcp::RoleServer>) -> Option<String> {
    peer.peer_info().map(|info| info.client_info.name.clone())
}
