//! The crate's own view of MCP results: plain JSON, so that rmcp's types stay inside this crate.

use rmcp::model::{CallToolResult, Tool};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The result of `tools/call`, as the upstream sent it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResult {
    /// MCP content blocks (`{"type": "text", "text": …}`, `{"type": "image", …}`, …).
    pub content: Vec<Value>,
    /// `structuredContent`, when the tool returned one (it may be any JSON value, `null` included).
    pub structured_content: Option<Value>,
    /// `isError`: the tool ran and reported a failure.
    pub is_error: bool,
}

/// One tool an upstream lists.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolInfo {
    pub name: String,
    /// Display name: the tool's `title`, else `annotations.title`.
    pub title: Option<String>,
    pub description: Option<String>,
    /// JSON Schema of the arguments.
    pub input_schema: Value,
    /// JSON Schema of `structuredContent`, when declared.
    pub output_schema: Option<Value>,
    /// MCP tool annotations (`readOnlyHint`, …) as sent.
    pub annotations: Option<Value>,
}

/// Who the upstream said it is in its `initialize` answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerInfo {
    /// The protocol version the connection negotiated, e.g. `2025-11-25`.
    pub protocol_version: String,
    pub name: Option<String>,
    pub version: Option<String>,
    pub instructions: Option<String>,
}

impl ToolResult {
    pub(crate) fn from_rmcp(result: CallToolResult) -> Result<ToolResult, serde_json::Error> {
        let content = result
            .content
            .iter()
            .map(serde_json::to_value)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ToolResult {
            content,
            structured_content: result.structured_content,
            is_error: result.is_error.unwrap_or(false),
        })
    }
}

impl ToolInfo {
    pub(crate) fn from_rmcp(tool: &Tool) -> ToolInfo {
        let annotation_title = tool.annotations.as_ref().and_then(|a| a.title.clone());
        ToolInfo {
            name: tool.name.to_string(),
            title: tool.title.clone().or(annotation_title),
            description: tool.description.as_ref().map(|d| d.to_string()),
            input_schema: Value::Object((*tool.input_schema).clone()),
            output_schema: tool
                .output_schema
                .as_ref()
                .map(|schema| Value::Object((**schema).clone())),
            annotations: tool
                .annotations
                .as_ref()
                .and_then(|a| serde_json::to_value(a).ok()),
        }
    }
}
