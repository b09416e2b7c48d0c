//! The MCP answer for a run: its output as structured content, or its error as a tool error.

use mcpflow_engine::{Run, RunEnd, SchemaValidator};
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::Value;

/// The MCP answer for a finished run: `{content: [text JSON], structuredContent}` on success
/// (structuredContent only for an object, as MCP requires), `isError` with the message on failure.
pub fn tool_result(run: &Run, output_schema: Option<&SchemaValidator>) -> CallToolResult {
    match &run.end {
        RunEnd::Waiting(w) => crate::session::waiting_result(w),
        RunEnd::Finished(Ok(value)) => {
            let json = value.to_json();
            if let Some(v) = output_schema
                && let Err(errors) = v.check(&json)
            {
                return CallToolResult::error(vec![ContentBlock::text(format!(
                    "tool `{}` produced a result that does not match its outputSchema: {}; result: {json}",
                    run.tool,
                    errors.join("; ")
                ))]);
            }
            match json {
                Value::Object(_) => CallToolResult::structured(json),
                other => CallToolResult::success(vec![ContentBlock::text(other.to_string())]),
            }
        }
        RunEnd::Finished(Err(e)) => {
            let place = if e.node_id.is_some() { " at" } else { ":" };
            CallToolResult::error(vec![ContentBlock::text(format!(
                "tool `{}` failed{place} {e}",
                run.tool
            ))])
        }
    }
}
