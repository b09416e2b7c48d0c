//! What an `mcp` node outputs for an upstream's tool result, and the message of a failed one.

use mcpflow_upstream::ToolResult;
use serde_json::Value as Json;

/// What an mcp node outputs for an upstream's result, as mcpGraph does it:
/// `structuredContent` if present; else the first block's text parsed as JSON, falling back to
/// the raw string; a non-text or empty-text first block is returned as the block itself; empty
/// content gives undefined (`None`).
///
/// `isError` results are not passed here: they fail the run.
pub fn mcp_output(result: ToolResult) -> Option<Json> {
    if let Some(structured) = result.structured_content {
        return Some(structured);
    }
    let first = result.content.into_iter().next()?;
    let text = match (first.get("type").and_then(Json::as_str), first.get("text")) {
        (Some("text"), Some(Json::String(t))) if !t.is_empty() => t.clone(),
        _ => return Some(first),
    };
    Some(serde_json::from_str(&text).unwrap_or(Json::String(text)))
}

/// The message of a failed tool call: its first text block, or a generic one.
pub(crate) fn tool_error_message(result: &ToolResult) -> String {
    result
        .content
        .iter()
        .find_map(|b| b.get("text").and_then(Json::as_str))
        .map(str::to_owned)
        .unwrap_or_else(|| "the tool returned isError without a message".to_owned())
}
