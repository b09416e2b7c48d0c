//! The audit line: under access control, one structured log line per `tools/call` (who, which
//! tool, the outcome, how long), at info under the target `mcpflow::audit`, so it can be
//! filtered to a file of its own (`MCPFLOW_LOG=mcpflow::audit=info`). Never an argument value,
//! a result, a key or a token: only names the config or the caller's identity gives.

use std::time::Duration;

use mcpflow_auth::Principal;
use rmcp::ErrorData as McpError;
use rmcp::model::CallToolResponse;

pub(crate) const TARGET: &str = "mcpflow::audit";

pub(crate) fn call(
    principal: &Principal,
    tool: &str,
    answer: &Result<CallToolResponse, McpError>,
    took: Duration,
) {
    let outcome = match answer {
        Ok(CallToolResponse::Complete(r)) if r.is_error == Some(true) => "tool_error",
        Ok(CallToolResponse::Complete(_)) => "ok",
        Ok(CallToolResponse::InputRequired(_)) => "input_required",
        Ok(CallToolResponse::Task(_)) => "task",
        Ok(_) => "other",
        Err(_) => "refused",
    };
    tracing::info!(
        target: TARGET,
        subject = principal.subject(),
        key = principal.key().unwrap_or(""),
        tool,
        outcome,
        ms = u64::try_from(took.as_millis()).unwrap_or(u64::MAX),
        "tools/call"
    );
}
